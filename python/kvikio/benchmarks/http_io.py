"""``python -m kvikio.benchmarks.http_io``: read an array over HTTP with
:meth:`kvikio.RemoteFile.open_http`, into NumPy (host) or CuPy (device) memory.

Takes upstream KvikIO's command line: ``-n/--nelem``, ``--dtype``, ``--nruns``,
``-t/--nthreads``, ``--server URL`` (else a bundled :class:`kvikio.utils.LocalHttpServer`),
``--server-root-path``, ``--bundled-server-lifetime`` and ``--api {cupy,numpy,all}``. The
file is written under the server's root (a temporary directory for the bundled server) and
every read is checked against it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from pathlib import Path

from kvikio.benchmarks._remote_common import (
    add_common_options,
    array_module,
    check_common_options,
    payload,
    report,
    time_reads,
)

APIS = ("cupy", "numpy")


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(prog="python -m kvikio.benchmarks.http_io",
                                description="Read an array over HTTP with kvikio.RemoteFile")
    add_common_options(p, APIS, APIS[0])
    p.add_argument("--server", default=None,
                   help="URL of a running HTTP server with Range support (default: start "
                        "a bundled one)")
    p.add_argument("--server-root-path", default=None,
                   help="local directory that --server serves (the file is written there)")
    p.add_argument("--bundled-server-lifetime", type=int, default=3600,
                   help="most seconds the bundled server lives (default: %(default)s)")
    args = p.parse_args(argv)
    apis = check_common_options(p, args, APIS)
    if args.server is not None and args.server_root_path is None:
        p.error("--server needs --server-root-path (where to write the file it serves)")
    return args, apis


def main(argv: list[str] | None = None) -> int:
    args, apis = parse_args(argv)
    import kvikio
    import kvikio.defaults
    from kvikio.utils import LocalHttpServer

    expected = payload(args)
    with contextlib.ExitStack() as stack:
        root = args.server_root_path or stack.enter_context(
            tempfile.TemporaryDirectory(prefix="kvikio-http-bench-")
        )
        name = f"kvikio-http-bench-{os.getpid()}.bin"
        path = Path(root) / name
        expected.tofile(path)
        stack.callback(path.unlink, missing_ok=True)
        if args.server is None:
            server = stack.enter_context(
                LocalHttpServer(root, max_lifetime=args.bundled_server_lifetime)
            )
            base = server.url
        else:
            base = args.server.rstrip("/")
        url = f"{base}/{name}"
        stack.enter_context(kvikio.defaults.set("num_threads", args.nthreads))

        results = {}
        for api in apis:
            xp = array_module(api)

            def read(xp=xp):
                out = xp.empty(args.nelem, dtype=args.dtype)
                with kvikio.RemoteFile.open_http(url, nbytes=expected.nbytes) as f:
                    f.read(out)
                return out

            results[api] = time_reads(api, args.nruns, read, expected)
        report(f"http_io: {url}, {args.nelem} x {args.dtype}, {args.nthreads} threads",
               expected.nbytes, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
