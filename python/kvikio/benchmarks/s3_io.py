"""``python -m kvikio.benchmarks.s3_io``: read an array from S3 with
:meth:`kvikio.RemoteFile.open_s3`, into NumPy (host) or CuPy (device) memory.

Takes upstream KvikIO's command line: ``-n/--nelem``, ``--dtype``, ``--nruns``,
``-t/--nthreads``, ``--use-bundled-server`` (a local moto S3 server, ``moto[server]``),
``--bundled-server-lifetime``, ``--bucket`` and ``--api``. Without the bundled server the
``AWS_*`` environment says where S3 is and with which credentials; the object is uploaded
with boto3 first and deleted afterwards. ``cudf-kvikio``/``cudf-fsspec`` are accepted and
reported as skipped (cuDF's readers are not part of this benchmark).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading

from kvikio.benchmarks._remote_common import (
    add_common_options,
    array_module,
    check_common_options,
    payload,
    report,
    time_reads,
)

APIS = ("cupy", "numpy", "cudf-kvikio", "cudf-fsspec")


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(prog="python -m kvikio.benchmarks.s3_io",
                                description="Read an array from S3 with kvikio.RemoteFile")
    add_common_options(p, APIS, "all")
    p.add_argument("--use-bundled-server", action="store_true",
                   help="start and use a local moto S3 server (needs moto[server])")
    p.add_argument("--bundled-server-lifetime", type=int, default=3600,
                   help="most seconds the bundled server lives (default: %(default)s)")
    p.add_argument("--bucket", default="kvikio-s3-benchmark",
                   help="S3 bucket to use (default: %(default)s)")
    args = p.parse_args(argv)
    return args, check_common_options(p, args, APIS)


@contextlib.contextmanager
def bundled_server(lifetime: int):
    """A moto S3 server on loopback with its AWS_* environment, stopped on exit or after
    `lifetime` seconds."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    timer = threading.Timer(lifetime, server.stop)
    timer.daemon = True
    timer.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ACCESS_KEY_ID": "benchmark", "AWS_SECRET_ACCESS_KEY": "benchmark"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        timer.cancel()
        server.stop()


def main(argv: list[str] | None = None) -> int:
    args, apis = parse_args(argv)
    import boto3

    import kvikio
    import kvikio.defaults

    expected = payload(args)
    key = f"kvikio-s3-bench-{os.getpid()}.bin"
    with contextlib.ExitStack() as stack:
        if args.use_bundled_server:
            stack.enter_context(bundled_server(args.bundled_server_lifetime))
        client = boto3.client("s3", endpoint_url=os.environ.get("AWS_ENDPOINT_URL") or None)
        try:
            client.create_bucket(Bucket=args.bucket)
        except (client.exceptions.BucketAlreadyOwnedByYou, client.exceptions.BucketAlreadyExists):
            pass
        client.put_object(Bucket=args.bucket, Key=key, Body=expected.tobytes())
        stack.callback(client.delete_object, Bucket=args.bucket, Key=key)
        stack.enter_context(kvikio.defaults.set("num_threads", args.nthreads))

        results = {}
        for api in apis:
            if api.startswith("cudf"):
                print(f"s3_io: skipping {api} (cuDF readers are not part of this benchmark)",
                      file=sys.stderr)
                continue
            xp = array_module(api)

            def read(xp=xp):
                out = xp.empty(args.nelem, dtype=args.dtype)
                with kvikio.RemoteFile.open_s3(args.bucket, key, nbytes=expected.nbytes) as f:
                    f.read(out)
                return out

            results[api] = time_reads(api, args.nruns, read, expected)
        report(f"s3_io: s3://{args.bucket}/{key}, {args.nelem} x {args.dtype}, "
               f"{args.nthreads} threads", expected.nbytes, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
