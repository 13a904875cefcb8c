#!/usr/bin/env python3
"""A WebHDFS-protocol server (name node + data node) for KvikIO's remote tests.

Files under --root are exposed as /webhdfs/v1/<path>. The name node answers
op=GETFILESTATUS with a FileStatus JSON, and op=OPEN&offset=&length= with a 307 redirect to the
data node (a second listening port), which returns exactly those bytes with status 200, as
Hadoop does. With --require-user NAME, requests whose user.name differs get 401; with
--require-param NAME=VALUE (repeatable), requests without that query parameter get 401 (a
secure cluster's delegation token, a proxy user's doas).

Prints "PORT <namenode port>" once listening; exits when stdin closes.
"""
import argparse
import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFIX = "/webhdfs/v1/"


def make_handler(root, require_user, datanode_port_ref, is_datanode, require_params=()):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def _reply(self, code, body=b"", ctype="application/json", headers=()):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def _error(self, code, exc, msg):
            body = json.dumps({"RemoteException": {"exception": exc, "message": msg}}).encode()
            self._reply(code, body)

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            q = dict(urllib.parse.parse_qsl(url.query))
            path = urllib.parse.unquote(url.path)
            if not path.startswith(PREFIX):
                return self._error(404, "FileNotFoundException", "not a WebHDFS path")
            if require_user is not None and q.get("user.name") != require_user:
                return self._error(401, "SecurityException", "user.name required")
            for name, value in require_params:
                if q.get(name) != value:
                    return self._error(401, "SecurityException", f"{name} required")
            fs_path = os.path.join(root, path[len(PREFIX):])
            if not os.path.isfile(fs_path):
                return self._error(404, "FileNotFoundException", f"File does not exist: {path}")
            size = os.path.getsize(fs_path)
            op = q.get("op", "").upper()
            if op == "GETFILESTATUS" and not is_datanode:
                st = {"FileStatus": {"accessTime": 0, "blockSize": 134217728, "group": "supergroup",
                                     "length": size, "modificationTime": 0, "owner": "hdfs",
                                     "pathSuffix": "", "permission": "644", "replication": 1,
                                     "type": "FILE"}}
                return self._reply(200, json.dumps(st).encode())
            if op != "OPEN":
                return self._error(400, "IllegalArgumentException", f"bad op {op!r}")
            offset = int(q.get("offset", "0"))
            length = int(q.get("length", str(max(0, size - offset))))
            if not is_datanode:
                location = f"http://127.0.0.1:{datanode_port_ref[0]}{self.path}"
                return self._reply(307, b"", headers=[("Location", location)])
            if offset > size:
                return self._error(400, "IOException", "offset past end of file")
            length = min(length, size - offset)
            with open(fs_path, "rb") as f:
                f.seek(offset)
                data = f.read(length)
            self._reply(200, data, ctype="application/octet-stream")

    return Handler


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--root", default=".")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--require-user")
    p.add_argument("--require-param", action="append", default=[])
    args = p.parse_args()
    params = [tuple(p.split("=", 1)) for p in args.require_param]
    root = os.path.abspath(args.root)
    port_ref = [0]
    ThreadingHTTPServer.daemon_threads = True
    datanode = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(root, args.require_user, port_ref, True, params))
    port_ref[0] = datanode.server_address[1]
    namenode = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(root, args.require_user, port_ref, False, params))
    threading.Thread(target=datanode.serve_forever, daemon=True).start()
    threading.Thread(target=namenode.serve_forever, daemon=True).start()
    print(f"PORT {namenode.server_address[1]}", flush=True)
    sys.stdin.read()  # the parent closes stdin (or dies) to stop us
    os._exit(0)


if __name__ == "__main__":
    main()
