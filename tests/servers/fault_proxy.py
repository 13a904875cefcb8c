#!/usr/bin/env python3
"""A fault-injecting HTTP/1.1 proxy for KvikIO's remote write tests.

Runs in front of another test server (moto's S3 from s3_server.py, webhdfs_server.py, ...):
  fault_proxy.py --upstream PORT
listens on 127.0.0.1 (a free port), prints "PORT <n>" and forwards every request to
127.0.0.1:PORT over a fresh connection, headers byte for byte (so SigV4 signatures, which
cover the Host header, still verify), keeping the client's connection alive between requests.
A Location header naming another 127.0.0.1 port (a WebHDFS data node) is rewritten to a proxy
port of its own, opened on first use, so the data node's requests go through the faults too.

Faults are armed over stdin, one JSON command a line, answered with one JSON line:

  {"cmd": "fault", "kind": K, "match": S, "count": N, "delay": SECONDS, "status": CODE}
      the next N requests whose "METHOD /path?query" contains S get fault K:
        store_500     forwarded (the server acts on it), then answered 500 (InternalError)
        store_status  forwarded, then answered with status `status` (e.g. 403)
        store_slow    forwarded, then answered after `delay` seconds (past the client's timeout)
        store_drop    forwarded, then the connection is closed without an answer
        drop_reused   on a connection that served a request before (a reused keep-alive one):
                      the connection is reset once the request's headers arrived, its body
                      unread, nothing forwarded (the server's side of the keep-alive race);
                      requests on fresh connections pass
        error_200     not forwarded; answered 200 with an S3 <Error> (InternalError) body
        reset_body    half the body is read, then the connection is reset (RST), nothing
                      forwarded
        status        not forwarded; answered with status `status` (default 500)
  {"cmd": "clear"}    disarms every fault
  {"cmd": "armed"}    {"count": faults still armed}
  {"cmd": "log"}      {"requests": ["METHOD /path?query -> what happened", ...]} since the last
                      log command

Exits when stdin closes.
"""
import argparse
import http.client
import json
import os
import re
import socket
import sys
import threading
import time

ERROR_XML = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code>'
             b"<Message>We encountered an internal error. Please try again.</Message></Error>")
HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "expect", "te"}

lock = threading.Lock()
faults = []  # dicts: kind, match, count, delay, status
log = []
proxies = {}  # upstream port -> proxy port


def take_fault(line, reused):
    with lock:
        for f in faults:
            if f["count"] > 0 and f["match"] in line:
                if f["kind"] == "drop_reused" and not reused:
                    continue
                f["count"] -= 1
                return dict(f)
    return None


def read_request(rfile, wfile):
    line = rfile.readline(65537)
    if not line:
        return None
    method, target, _ = line.decode("latin-1").split(" ", 2)
    headers = []
    while True:
        h = rfile.readline(65537)
        if h in (b"\r\n", b"\n", b""):
            break
        name, _, value = h.decode("latin-1").partition(":")
        headers.append((name.strip(), value.strip()))
    lower = {k.lower(): v for k, v in headers}
    return method, target, headers, lower


def read_body(rfile, wfile, lower, limit=None):
    if lower.get("expect", "").lower() == "100-continue":
        wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        wfile.flush()
    if lower.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            size = int(rfile.readline().split(b";")[0], 16)
            if size == 0:
                rfile.readline()
                return body
            body += rfile.read(size)
            rfile.readline()
    n = int(lower.get("content-length") or 0)
    return rfile.read(n if limit is None else min(n, limit))


def reply(wfile, status, reason, headers, body, head=False):
    out = [f"HTTP/1.1 {status} {reason}\r\n"]
    have_length = False
    for k, v in headers:
        if k.lower() in HOP:
            continue
        if k.lower() == "content-length":
            if not head:
                continue
            have_length = True
        out.append(f"{k}: {v}\r\n")
    if not have_length:
        out.append(f"Content-Length: {len(body)}\r\n")
    out.append("Connection: keep-alive\r\n\r\n")
    wfile.write("".join(out).encode("latin-1") + (b"" if head else body))
    wfile.flush()


def rewrite_location(headers):
    out = []
    for k, v in headers:
        if k.lower() == "location":
            m = re.match(r"(https?://127\.0\.0\.1:)(\d+)(.*)", v)
            if m:
                v = m.group(1) + str(proxy_for(int(m.group(2)))) + m.group(3)
        out.append((k, v))
    return out


def forward(upstream, method, target, headers, body):
    conn = http.client.HTTPConnection("127.0.0.1", upstream, timeout=60)
    conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
    for k, v in headers:
        if k.lower() not in HOP:
            conn.putheader(k, v)
    conn.endheaders(body if body or method in ("PUT", "POST") else None)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, r.reason, rewrite_location(r.getheaders()), data


def serve_connection(sock, upstream):
    rfile = sock.makefile("rb")
    wfile = sock.makefile("wb")
    served = 0
    try:
        while True:
            req = read_request(rfile, wfile)
            if req is None:
                return
            method, target, headers, lower = req
            line = f"{method} {target}"
            fault = take_fault(line, served > 0)
            kind = fault["kind"] if fault else None
            with lock:
                log.append(f"{line} -> {kind or 'forwarded'}")
            if kind == "reset_body":
                n = int(lower.get("content-length") or 0)
                read_body(rfile, wfile, lower, limit=n // 2)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                return
            if kind == "drop_reused":
                # The server had closed the idle connection: the request's headers arrive at a
                # closed socket (reset), its body is never read.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                return
            body = read_body(rfile, wfile, lower)
            if kind == "error_200":
                reply(wfile, 200, "OK", [("Content-Type", "application/xml")], ERROR_XML)
            elif kind == "status":
                code = int(fault.get("status") or 500)
                reply(wfile, code, "Injected", [("Content-Type", "application/xml")], ERROR_XML)
            else:
                status, reason, rheaders, data = forward(upstream, method, target, headers, body)
                if kind in ("store_500", "store_status"):
                    code = int(fault.get("status") or 500) if kind == "store_status" else 500
                    reply(wfile, code, "Injected", [("Content-Type", "application/xml")], ERROR_XML)
                elif kind == "store_drop":
                    return
                else:
                    if kind == "store_slow":
                        time.sleep(float(fault.get("delay") or 3))
                    reply(wfile, status, reason, rheaders, data, head=method == "HEAD")
            served += 1
    except (ConnectionError, OSError, ValueError):
        return
    finally:
        try:
            sock.close()
        except OSError:
            pass


def listen(upstream):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)

    def accept_loop():
        while True:
            s, _ = srv.accept()
            threading.Thread(target=serve_connection, args=(s, upstream), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    return srv.getsockname()[1]


def proxy_for(upstream):
    with lock:
        if upstream not in proxies:
            proxies[upstream] = listen(upstream)
        return proxies[upstream]


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--upstream", type=int, required=True)
    args = p.parse_args()
    print(f"PORT {proxy_for(args.upstream)}", flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        cmd = json.loads(line)
        with lock:
            if cmd["cmd"] == "fault":
                faults.append({"kind": cmd["kind"], "match": cmd.get("match", ""),
                               "count": int(cmd.get("count", 1)), "delay": cmd.get("delay"),
                               "status": cmd.get("status")})
                answer = {"ok": True}
            elif cmd["cmd"] == "clear":
                faults.clear()
                answer = {"ok": True}
            elif cmd["cmd"] == "armed":
                answer = {"count": sum(f["count"] for f in faults)}
            elif cmd["cmd"] == "log":
                answer = {"requests": list(log)}
                log.clear()
            else:
                answer = {"error": f"unknown command {cmd['cmd']!r}"}
        print(json.dumps(answer), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
