#!/usr/bin/env python3
"""A WebHDFS-protocol server (name node + data node) for KvikIO's remote tests.

Files under --root are exposed as /webhdfs/v1/<path>. The name node answers
op=GETFILESTATUS with a FileStatus JSON (files and directories), op=LISTSTATUS with a
directory's FileStatuses (fsspec's ls), and op=OPEN&offset=&length= with a 307 redirect to the
data node (a second listening port), which returns exactly those bytes with status 200, as
Hadoop does. With --require-user NAME, requests whose user.name differs get 401; with
--require-param NAME=VALUE (repeatable), requests without that query parameter get 401 (a
secure cluster's delegation token, a proxy user's doas).

Writes, as Hadoop does them: op=CREATE[&overwrite=true|false] (PUT) and op=APPEND (POST) to
the name node answer 307 with a Location on the data node under /datanode/webhdfs/v1/... (a
second port and path); the data node takes the bytes (CREATE 201, APPEND 200). A CREATE
without overwrite of an existing file is 403 FileAlreadyExistsException; an APPEND to a
missing file 404. op=DELETE (DELETE), op=TRUNCATE&newlength=N (POST) and
op=RENAME&destination=/path[&renameoptions=OVERWRITE] (PUT) are answered by the name node. A request body sent to the name node is refused (400): the client must send it to
the data node only.

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
DATANODE_PREFIX = "/datanode"


def file_status(fs_path, suffix):
    """A FileStatus JSON object of a file or directory, as the name node answers it."""
    isdir = os.path.isdir(fs_path)
    return {"accessTime": 0, "blockSize": 134217728, "group": "supergroup",
            "length": 0 if isdir else os.path.getsize(fs_path), "modificationTime": 0,
            "owner": "hdfs", "pathSuffix": suffix, "permission": "755" if isdir else "644",
            "replication": 0 if isdir else 1, "type": "DIRECTORY" if isdir else "FILE"}


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

        def _check(self, q, path):
            if not path.startswith(PREFIX):
                self._error(404, "FileNotFoundException", "not a WebHDFS path")
                return False
            if require_user is not None and q.get("user.name") != require_user:
                self._error(401, "SecurityException", "user.name required")
                return False
            for name, value in require_params:
                if q.get(name) != value:
                    self._error(401, "SecurityException", f"{name} required")
                    return False
            return True

        def _write(self, method):
            url = urllib.parse.urlsplit(self.path)
            q = dict(urllib.parse.parse_qsl(url.query))
            path = urllib.parse.unquote(url.path)
            if is_datanode:
                if not path.startswith(DATANODE_PREFIX):
                    return self._error(404, "FileNotFoundException", "not a data node path")
                path = path[len(DATANODE_PREFIX):]
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if not self._check(q, path):
                return
            fs_path = os.path.join(root, path[len(PREFIX):])
            op = q.get("op", "").upper()
            if method == "DELETE" and op == "DELETE" and not is_datanode:
                existed = os.path.isfile(fs_path)
                if existed:
                    os.remove(fs_path)
                return self._reply(200, json.dumps({"boolean": existed}).encode())
            if method == "POST" and op == "TRUNCATE" and not is_datanode:
                if not os.path.isfile(fs_path):
                    return self._error(404, "FileNotFoundException", f"File does not exist: {path}")
                with open(fs_path, "r+b") as f:
                    f.truncate(int(q["newlength"]))
                return self._reply(200, json.dumps({"boolean": True}).encode())
            if method == "PUT" and op == "RENAME" and not is_datanode:
                # As Hadoop: without renameoptions, {"boolean": false} when the destination
                # exists (or the source does not); with renameoptions=OVERWRITE (rename2) an
                # existing destination file is replaced, and the answer has no body.
                dest = q.get("destination", "")
                if not dest.startswith("/"):
                    return self._error(400, "IllegalArgumentException", f"bad destination {dest!r}")
                dest_fs = os.path.join(root, dest.lstrip("/"))
                overwrite = "OVERWRITE" in q.get("renameoptions", "").upper().split(",")
                if not os.path.isfile(fs_path):
                    if overwrite:
                        return self._error(404, "FileNotFoundException", f"File does not exist: {path}")
                    return self._reply(200, json.dumps({"boolean": False}).encode())
                if os.path.exists(dest_fs) and not overwrite:
                    return self._reply(200, json.dumps({"boolean": False}).encode())
                os.replace(fs_path, dest_fs)
                if overwrite:
                    return self._reply(200, b"")
                return self._reply(200, json.dumps({"boolean": True}).encode())
            if (method, op) not in (("PUT", "CREATE"), ("POST", "APPEND")):
                return self._error(400, "IllegalArgumentException", f"bad op {op!r} for {method}")
            if op == "CREATE" and q.get("overwrite", "false") != "true" and os.path.exists(fs_path) \
                    and not is_datanode:
                return self._error(403, "FileAlreadyExistsException", f"{path} already exists")
            if op == "APPEND" and not os.path.isfile(fs_path):
                return self._error(404, "FileNotFoundException", f"File does not exist: {path}")
            if not is_datanode:
                if body:
                    return self._error(400, "IllegalArgumentException",
                                       "data sent to the name node; send it to the data node")
                location = f"http://127.0.0.1:{datanode_port_ref[0]}{DATANODE_PREFIX}{self.path}"
                return self._reply(307, b"", headers=[("Location", location)])
            os.makedirs(os.path.dirname(fs_path), exist_ok=True)
            with open(fs_path, "wb" if op == "CREATE" else "ab") as f:
                f.write(body)
            return self._reply(201 if op == "CREATE" else 200, b"")

        def do_PUT(self):
            self._write("PUT")

        def do_POST(self):
            self._write("POST")

        def do_DELETE(self):
            self._write("DELETE")

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
            op = q.get("op", "").upper()
            if op in ("LISTSTATUS", "GETFILESTATUS") and not is_datanode and os.path.exists(fs_path):
                names = sorted(os.listdir(fs_path)) if os.path.isdir(fs_path) else [""]
                if op == "GETFILESTATUS":
                    names = [""]
                statuses = [file_status(os.path.join(fs_path, n) if n else fs_path, n) for n in names]
                if op == "GETFILESTATUS":
                    return self._reply(200, json.dumps({"FileStatus": statuses[0]}).encode())
                return self._reply(200, json.dumps({"FileStatuses": {"FileStatus": statuses}}).encode())
            if not os.path.isfile(fs_path):
                return self._error(404, "FileNotFoundException", f"File does not exist: {path}")
            size = os.path.getsize(fs_path)
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
