#!/usr/bin/env python3
"""moto's S3 server with real SigV4 checking, driven over stdin, for KvikIO's remote tests.

Starts moto.server.ThreadedMotoServer on 127.0.0.1 (port 0: any free port) and prints
"PORT <n>". Then reads one JSON command per line on stdin and answers one JSON line:

  {"cmd": "setup", "bucket": B}   create bucket B, an IAM user with s3:* and its access key,
                                  and temporary (session-token) credentials of a role with
                                  s3:*; answers the credentials
  {"cmd": "bucket", "bucket": B}  create one more bucket B (after setup)
  {"cmd": "put", "bucket": B, "key": K, "path": P}     upload local file P as B/K
  {"cmd": "presign", "bucket": B, "key": K, "expires": S}   a presigned GET URL
  {"cmd": "auth", "on": true|false}   enforce (or stop enforcing) IAM authentication and
                                      signature checks on every request
  {"cmd": "public", "bucket": B, "key": K}   make B/K anonymously readable (public-read ACL)
  {"cmd": "presign", ..., "method": "put_object"}   a presigned PUT URL instead
  {"cmd": "presign", ..., "endpoint_url": U}   signed for U (a proxy in front of this server)
  {"cmd": "uploads", "bucket": B}   the number of open multipart uploads ({"count": n})
  {"cmd": "exists", "bucket": B, "key": K}   whether B/K exists ({"exists": true|false})
  {"cmd": "fail", "query": Q, "status": S, "count": N}   fault injection: the next N requests
      whose query string contains Q (e.g. "partNumber=3") get HTTP status S before moto
      sees them; N = 0 clears

moto enforces signatures only once auth is on; setup runs with it off. Exits when stdin
closes.
"""
import json
import os
import sys
import threading

os.environ.setdefault("AWS_ACCESS_KEY_ID", "setup")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "setup")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402
from moto import settings  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402

ADMIN_POLICY = json.dumps({"Version": "2012-10-17",
                           "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]})


def main():
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    faults = {"query": None, "status": 500, "count": 0}
    fault_lock = threading.Lock()
    moto_app = server._server.app

    def faulty_app(environ, start_response):
        with fault_lock:
            hit = (faults["count"] > 0 and faults["query"] is not None
                   and faults["query"] in environ.get("QUERY_STRING", ""))
            if hit:
                faults["count"] -= 1
        if hit:
            # Drain the body, as a real server would before answering.
            length = int(environ.get("CONTENT_LENGTH") or 0)
            if length:
                environ["wsgi.input"].read(length)
            body = (b"<?xml version='1.0'?><Error><Code>InjectedFault</Code>"
                    b"<Message>fault injected by the test</Message></Error>")
            start_response(f"{faults['status']} Injected", [("Content-Type", "application/xml"),
                                                            ("Content-Length", str(len(body)))])
            return [body]
        return moto_app(environ, start_response)

    server._server.app = faulty_app
    port = server._server.server_port
    endpoint = f"http://127.0.0.1:{port}"
    print(f"PORT {port}", flush=True)
    state = {"creds": None}

    def client(service, creds=None):
        kw = {}
        if creds:
            kw = dict(aws_access_key_id=creds[0], aws_secret_access_key=creds[1])
            if len(creds) > 2:
                kw["aws_session_token"] = creds[2]
        return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1",
                            config=Config(signature_version="s3v4", s3={"addressing_style": "path"}), **kw)

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            c = json.loads(line)
            cmd = c["cmd"]
            if cmd == "setup":
                iam = client("iam")
                iam.create_user(UserName="kvikio")
                iam.put_user_policy(UserName="kvikio", PolicyName="s3", PolicyDocument=ADMIN_POLICY)
                key = iam.create_access_key(UserName="kvikio")["AccessKey"]
                trust = json.dumps({"Version": "2012-10-17", "Statement": [{
                    "Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]})
                role = iam.create_role(RoleName="reader", AssumeRolePolicyDocument=trust)["Role"]
                iam.put_role_policy(RoleName="reader", PolicyName="s3", PolicyDocument=ADMIN_POLICY)
                tmp = client("sts").assume_role(RoleArn=role["Arn"], RoleSessionName="kvikio")["Credentials"]
                client("s3").create_bucket(Bucket=c["bucket"])
                state["creds"] = (key["AccessKeyId"], key["SecretAccessKey"])
                reply = {"key": key["AccessKeyId"], "secret": key["SecretAccessKey"],
                         "role_key": tmp["AccessKeyId"], "role_secret": tmp["SecretAccessKey"],
                         "role_token": tmp["SessionToken"]}
            elif cmd == "bucket":
                client("s3", state["creds"]).create_bucket(Bucket=c["bucket"])
                reply = {"ok": True}
            elif cmd == "put":
                client("s3", state["creds"]).upload_file(c["path"], c["bucket"], c["key"])
                reply = {"ok": True}
            elif cmd == "presign":
                # "endpoint_url": sign for another address (a proxy in front of this server).
                signer = client("s3", state["creds"]) if "endpoint_url" not in c else boto3.client(
                    "s3", endpoint_url=c["endpoint_url"], region_name="us-east-1",
                    aws_access_key_id=state["creds"][0], aws_secret_access_key=state["creds"][1],
                    config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
                url = signer.generate_presigned_url(
                    c.get("method", "get_object"), Params={"Bucket": c["bucket"], "Key": c["key"]},
                    ExpiresIn=int(c.get("expires", 3600)))
                reply = {"url": url}
            elif cmd == "auth":
                settings.INITIAL_NO_AUTH_ACTION_COUNT = 0 if c["on"] else float("inf")
                reply = {"ok": True}
            elif cmd == "public":
                # moto serves anonymous requests by the object's ACL.
                client("s3", state["creds"]).put_object_acl(Bucket=c["bucket"], Key=c["key"],
                                                            ACL="public-read")
                reply = {"ok": True}
            elif cmd == "uploads":
                r = client("s3", state["creds"]).list_multipart_uploads(Bucket=c["bucket"])
                reply = {"count": len(r.get("Uploads", []))}
            elif cmd == "exists":
                r = client("s3", state["creds"]).list_objects_v2(Bucket=c["bucket"], Prefix=c["key"])
                reply = {"exists": any(o["Key"] == c["key"] for o in r.get("Contents", []))}
            elif cmd == "fail":
                with fault_lock:
                    faults.update(query=c["query"], status=int(c.get("status", 500)),
                                  count=int(c.get("count", 1)))
                reply = {"ok": True}
            else:
                reply = {"error": f"unknown command {cmd!r}"}
        except Exception as e:  # report, keep serving
            reply = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(reply), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
