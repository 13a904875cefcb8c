#!/usr/bin/env python3
"""HTTP/1.1 file server with Range support and fault injection, for KvikIO's remote tests.

Serves the files under --root. Faults are chosen per request by query parameters, so a test
only has to build a URL; `fid` names a fault counter so that "the first N requests fail" can
be expressed (the counter is shared by every request carrying the same fid):

  fail=CODE        answer with HTTP status CODE (and a small body)
  delay=SECONDS    sleep before answering (to trigger client timeouts)
  truncate=BYTES   promise the full range in Content-Length, send BYTES bytes, then close
  drop=1           close the connection without sending anything
  norange=1        ignore the Range header: answer 200 with the whole file
  shortrange=BYTES answer a complete 206 that covers only BYTES bytes of the requested range
  count=N          apply the fault to the first N requests of this fid only (default: all)
  fid=NAME         the counter name (default: the path plus the query)
  nohead=1         answer HEAD with 405 (servers that only allow GET)
  redirect=CODE    answer CODE (301/302/307) with a Location: the same path without faults
  location=URL     with redirect: the Location instead (an absolute URL, e.g. another server)
  noetag=1         send no ETag and ignore If-Match (servers without validators)

Every file answer carries a strong ETag made of the file's inode, mtime and size, so a file
replaced with os.replace gets a new one; a Range GET with a non-matching If-Match gets 412.

Control endpoints: GET /_stats returns JSON {"requests": {path: count}}; /_reset clears it.
With --tls-cert/--tls-key the server speaks HTTPS. The chosen port is printed on stdout as
"PORT <n>" once the server listens; the process exits on SIGTERM or when stdin closes.
"""
import argparse
import json
import os
import re
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_lock = threading.Lock()
_fault_counts = {}
_request_counts = {}


def _fault_active(fid, count):
    """True while the fault named `fid` has been applied fewer than `count` times."""
    with _lock:
        seen = _fault_counts.get(fid, 0)
        _fault_counts[fid] = seen + 1
    return count < 0 or seen < count


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    root = "."

    def log_message(self, fmt, *args):  # keep test output quiet
        pass

    def _send_json(self, obj, head=False):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def do_HEAD(self):
        if "nohead=1" in self.path:
            self.send_response(405)
            self.send_header("Allow", "GET")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self._serve(head=True)

    def do_GET(self):
        self._serve(head=False)

    def _serve(self, head):
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        if path == "/_stats":
            with _lock:
                return self._send_json({"requests": dict(_request_counts)}, head)
        if path == "/_reset":
            with _lock:
                _request_counts.clear()
                _fault_counts.clear()
            return self._send_json({"ok": True}, head)
        with _lock:
            _request_counts[path] = _request_counts.get(path, 0) + 1

        fid = query.get("fid", self.path)
        count = int(query.get("count", "-1"))
        faulty = any(k in query for k in ("fail", "delay", "truncate", "drop", "norange", "shortrange"))
        active = faulty and _fault_active(fid, count)

        if active and "delay" in query:
            time.sleep(float(query["delay"]))
        if active and "drop" in query:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if "redirect" in query:
            self.send_response(int(query["redirect"]))
            self.send_header("Location", query.get("location", url.path))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if active and "fail" in query:
            code = int(query["fail"])
            body = f"injected failure {code}\n".encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)
            return

        fs_path = os.path.join(self.root, path.lstrip("/"))
        if not os.path.isfile(fs_path):
            body = b"not found\n"
            self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)
            return
        st = os.stat(fs_path)
        size = st.st_size
        etag = None if "noetag" in query else f'"{st.st_ino:x}-{st.st_mtime_ns:x}-{size:x}"'
        if_match = self.headers.get("If-Match")
        if etag and if_match and if_match.strip() != "*" and etag not in [
                t.strip() for t in if_match.split(",")]:
            body = b"precondition failed\n"
            self.send_response(412)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)
            return
        start, end = 0, size - 1
        partial = False
        rng = self.headers.get("Range")
        if rng and not (active and "norange" in query):
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())
            if not m:
                    return self._range_not_satisfiable(size, head)
            start = int(m.group(1))
            end = int(m.group(2)) if m.group(2) else size - 1
            end = min(end, size - 1)
            if start >= size or start > end:
                return self._range_not_satisfiable(size, head)
            partial = True
        if active and "shortrange" in query and partial:
            end = min(end, start + int(query["shortrange"]) - 1)
        length = end - start + 1 if size > 0 else 0

        self.send_response(206 if partial else 200)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(length))
        if etag:
            self.send_header("ETag", etag)
        if partial:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        if head:
            return
        to_send = length
        if active and "truncate" in query:
            to_send = min(length, int(query["truncate"]))
            self.close_connection = True
        with open(fs_path, "rb") as f:
            f.seek(start)
            remaining = to_send
            while remaining > 0:
                chunk = f.read(min(remaining, 1 << 20))
                if not chunk:
                    break
                self.wfile.write(chunk)
                remaining -= len(chunk)
        if to_send < length:
            self.wfile.flush()
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _range_not_satisfiable(self, size, head=False):
        body = b"range not satisfiable\n"
        self.send_response(416)
        self.send_header("Content-Range", f"bytes */{size}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)


def serve(server, announce):
    print(f"PORT {server.server_address[1]}", flush=True)
    # The parent owns our lifetime: when it closes our stdin (or dies), we exit.
    def watch_stdin():
        try:
            sys.stdin.read()
        finally:
            os._exit(0)

    if announce:
        threading.Thread(target=watch_stdin, daemon=True).start()
    server.serve_forever()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=".")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--no-stdin-watch", action="store_true")
    args = p.parse_args()
    Handler.root = os.path.abspath(args.root)
    ThreadingHTTPServer.daemon_threads = True
    # socketserver's default listen backlog is 5: more simultaneous connects (16 benchmark
    # threads opening their connections at once) overflow it, and the kernel's SYN retry
    # then stalls each one for a second.
    ThreadingHTTPServer.request_queue_size = 128
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    serve(server, not args.no_stdin_watch)


if __name__ == "__main__":
    main()
