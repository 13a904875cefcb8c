"""``python -m kvikio.benchmarks.fsspec_io``: ``cat_ranges`` of many random ranges of one
object from a loopback HTTP server, through :mod:`kvikio.fsspec` (``kvikio+http``) against
fsspec's own ``HTTPFileSystem`` (aiohttp) and, where installed, obstore, in the same run.

The object (``--size``, default 1 GiB, random bytes) is served by nginx when it is on PATH
(or ``--server URL`` names a server whose root holds it: ``--root``), else by
:class:`kvikio.utils.LocalHttpServer` in a child process. ``--count`` ranges (default 1000) of
``--io-size`` bytes (default 64 KiB) are drawn once; each client reads them ``--repetitions``
times (the clients take turns), every result is checked against the file, and the median
time of each is printed with its ratio to ours. ``--json`` prints one JSON object.

``--s3``: the object is put (with ``kvikio+s3``) on a local moto S3 server in a child process
instead, and ``kvikio+s3`` is timed against s3fs and obstore's ``S3Store`` where installed.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np


def _size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    mult = units.get(t[-1:], 1)
    value = int(float(t[:-1] if t[-1:] in units else t) * mult)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive size")
    return value


DEFAULT_CLIENTS = "kvikio,fsspec,obstore"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m kvikio.benchmarks.fsspec_io", description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=_size, default=1 << 30, help="object size (default 1GiB)")
    p.add_argument("--io-size", type=_size, default=64 << 10, help="bytes per range (default 64KiB)")
    p.add_argument("--count", type=int, default=1000, help="ranges per cat_ranges call (default 1000)")
    p.add_argument("--repetitions", type=int, default=5, help="timed calls per client (default 5)")
    p.add_argument("--threads", type=int, default=16, help="kvikio num_threads (default 16)")
    p.add_argument("--server", help="base URL of a running server whose root is --root")
    p.add_argument("--root", help="directory to write the object in (default: a temporary one)")
    p.add_argument("--no-nginx", action="store_true", help="serve with LocalHttpServer even if nginx is there")
    p.add_argument("--clients", default=DEFAULT_CLIENTS,
                   help="clients to time (default kvikio,fsspec,obstore; with --s3 kvikio,s3fs,obstore)")
    p.add_argument("--s3", action="store_true", help="the object on a local moto S3 server instead")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    if args.count <= 0 or args.repetitions <= 0 or args.threads <= 0:
        p.error("--count, --repetitions and --threads must be positive")
    if args.io_size > args.size:
        p.error("--io-size is larger than --size")
    return args


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(port: int, proc: subprocess.Popen, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"no server on port {port} after {timeout} s")


def start_server(root: str, use_nginx: bool) -> tuple[str, subprocess.Popen, str]:
    """(base URL, process, kind): nginx where found, else LocalHttpServer in a child."""
    port = _free_port()
    nginx = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.path.exists(p)), None)
    if use_nginx and nginx:
        conf_dir = tempfile.mkdtemp(prefix="kvikio-nginx-")
        atexit.register(shutil.rmtree, conf_dir, True)
        conf = Path(conf_dir) / "nginx.conf"
        conf.write_text(
            f"daemon off; worker_processes auto; pid {conf_dir}/nginx.pid; error_log {conf_dir}/error.log;\n"
            "events { worker_connections 4096; }\n"
            f"http {{ access_log off; client_body_temp_path {conf_dir}; proxy_temp_path {conf_dir};\n"
            f"  fastcgi_temp_path {conf_dir}; uwsgi_temp_path {conf_dir}; scgi_temp_path {conf_dir};\n"
            f"  keepalive_requests 100000; sendfile on;\n"
            f"  server {{ listen 127.0.0.1:{port}; root {root}; }} }}\n"
        )
        os.chmod(root, 0o755)
        proc = subprocess.Popen([nginx, "-p", conf_dir, "-c", str(conf), "-e", f"{conf_dir}/error.log"],
                                stderr=subprocess.DEVNULL)
        kind = "nginx"
    else:
        code = (
            "import sys, time; from kvikio.utils import LocalHttpServer\n"
            f"s = LocalHttpServer({root!r}, max_lifetime=3600)\n"
            "s.__enter__(); print(s.port, flush=True); sys.stdin.read()\n"
        )
        proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        port = int(proc.stdout.readline())
        kind = "LocalHttpServer (child process)"
    _wait_for(port, proc)
    return f"http://127.0.0.1:{port}", proc, kind


def _kvikio_client(url: str) -> Callable[[list, list], list]:
    import fsspec

    fs = fsspec.filesystem("kvikio+http", skip_instance_cache=True)
    fs.info(url)  # the size, once (fsspec's HTTPFileSystem also learns it on first use)
    return lambda starts, ends: fs.cat_ranges([url] * len(starts), starts, ends, on_error="raise")


def _fsspec_client(url: str) -> Callable[[list, list], list]:
    import fsspec

    fs = fsspec.filesystem("http", skip_instance_cache=True)
    return lambda starts, ends: fs.cat_ranges([url] * len(starts), starts, ends, on_error="raise")


def _obstore_client(url: str) -> Callable[[list, list], list]:
    import obstore
    from obstore.store import HTTPStore

    base, name = url.rsplit("/", 1)
    store = HTTPStore.from_url(base)

    def read(starts: list, ends: list) -> list:
        return [bytes(b) for b in obstore.get_ranges(store, name, starts=starts, ends=ends)]

    return read


CLIENTS = {"kvikio": _kvikio_client, "fsspec": _fsspec_client, "obstore": _obstore_client}

# --s3: the object on a local moto server, read with kvikio+s3, s3fs and obstore's S3Store.
S3_KEY, S3_SECRET, S3_REGION, S3_BUCKET = "bench-key", "bench-secret", "us-east-1", "bench"


def _s3_options(endpoint: str) -> dict:
    return {"key": S3_KEY, "secret": S3_SECRET, "endpoint_url": endpoint,
            "client_kwargs": {"region_name": S3_REGION}}


def start_moto(path: Path) -> tuple[str, subprocess.Popen, str]:
    """A moto S3 server in a child process holding ``path`` as bench/<name> (put with
    kvikio+s3: a parallel multipart upload)."""
    port = _free_port()
    code = (
        "import sys; from moto.server import ThreadedMotoServer\n"
        f"s = ThreadedMotoServer(ip_address='127.0.0.1', port={port}, verbose=False); s.start()\n"
        "print('ready', flush=True); sys.stdin.read(); s.stop()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    if proc.stdout.readline().strip() != "ready":
        raise RuntimeError("moto's server did not start (pip install 'moto[server]')")
    endpoint = f"http://127.0.0.1:{port}"
    import urllib.request

    from kvikio.fsspec import KvikioS3FileSystem, _sigv4

    headers = _sigv4("PUT", f"{endpoint}/{S3_BUCKET}", "", S3_REGION, S3_KEY, S3_SECRET, None)
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{S3_BUCKET}", method="PUT", headers=headers)).close()
    KvikioS3FileSystem(skip_instance_cache=True, **_s3_options(endpoint)).put_file(str(path), f"{S3_BUCKET}/{path.name}")
    return endpoint, proc, "moto"


def _kvikio_s3_client(endpoint: str, key: str) -> Callable[[list, list], list]:
    from kvikio.fsspec import KvikioS3FileSystem

    fs = KvikioS3FileSystem(skip_instance_cache=True, **_s3_options(endpoint))
    fs.info(f"{S3_BUCKET}/{key}")
    return lambda starts, ends: fs.cat_ranges([f"{S3_BUCKET}/{key}"] * len(starts), starts, ends, on_error="raise")


def _s3fs_client(endpoint: str, key: str) -> Callable[[list, list], list]:
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True, **_s3_options(endpoint))
    return lambda starts, ends: fs.cat_ranges([f"{S3_BUCKET}/{key}"] * len(starts), starts, ends, on_error="raise")


def _obstore_s3_client(endpoint: str, key: str) -> Callable[[list, list], list]:
    import obstore
    from obstore.store import S3Store

    store = S3Store(S3_BUCKET, endpoint=endpoint, access_key_id=S3_KEY, secret_access_key=S3_SECRET,
                    region=S3_REGION, client_options={"allow_http": True})
    return lambda starts, ends: [bytes(b) for b in obstore.get_ranges(store, key, starts=starts, ends=ends)]


S3_CLIENTS = {"kvikio": _kvikio_s3_client, "s3fs": _s3fs_client, "obstore": _obstore_s3_client}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import kvikio.defaults

    kvikio.defaults.set("num_threads", args.threads)
    cleanup = []
    root = args.root or tempfile.mkdtemp(prefix="kvikio-fsspec-bench-")
    if not args.root:
        cleanup.append(lambda: shutil.rmtree(root, ignore_errors=True))
    name = f"fsspec-bench-{os.getpid()}.bin"
    path = Path(root) / name
    rng = np.random.default_rng(20261201)
    with open(path, "wb") as f:
        left = args.size
        while left:
            n = min(left, 64 << 20)
            f.write(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
            left -= n
    cleanup.append(lambda: path.unlink(missing_ok=True))
    data = np.memmap(path, dtype=np.uint8, mode="r")
    proc = None
    try:
        if args.s3:
            base, proc, kind = start_moto(path)
        elif args.server:
            base, kind = args.server.rstrip("/"), "given"
        else:
            base, proc, kind = start_server(root, not args.no_nginx)
        url = f"{base}/{name}"
        table = S3_CLIENTS if args.s3 else CLIENTS
        if args.s3 and args.clients == DEFAULT_CLIENTS:
            args.clients = "kvikio,s3fs,obstore"
        starts = [int(s) for s in rng.integers(0, args.size - args.io_size + 1, args.count)]
        ends = [s + args.io_size for s in starts]
        clients, skipped = {}, {}
        for c in args.clients.split(","):
            try:
                clients[c] = table[c](base, name) if args.s3 else table[c](url)
            except ImportError as e:
                skipped[c] = f"not installed ({e.name})"
            except KeyError:
                raise SystemExit(f"unknown client {c!r} (known: {', '.join(table)})") from None
        times: dict[str, list[float]] = {c: [] for c in clients}
        for rep in range(args.repetitions + 1):  # the first round warms connections up
            for c, read in clients.items():
                t0 = time.perf_counter()
                got = read(starts, ends)
                dt = time.perf_counter() - t0
                if rep == 0:
                    for s, e, b in zip(starts, ends, got):
                        if b != data[s:e].tobytes():
                            raise RuntimeError(f"{c}: range [{s}, {e}) read back different bytes")
                else:
                    times[c].append(dt)
        med = {c: statistics.median(t) for c, t in times.items()}
        result = {
            "server": kind,
            "size": args.size,
            "count": args.count,
            "io_size": args.io_size,
            "threads": args.threads,
            "median_seconds": med,
            "speedup_of_kvikio": {c: med[c] / med["kvikio"] for c in med if "kvikio" in med},
            "skipped": skipped,
        }
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print(f"cat_ranges of {args.count} x {args.io_size} B of a {args.size} B object ({kind}), "
                  f"median of {args.repetitions}:")
            for c, t in med.items():
                ratio = f"  kvikio is {t / med['kvikio']:.2f}x" if "kvikio" in med and c != "kvikio" else ""
                print(f"  {c:<8} {t * 1e3:9.2f} ms  {args.count * args.io_size / t / 1e6:9.1f} MB/s{ratio}")
            for c, why in skipped.items():
                print(f"  {c:<8} skipped: {why}")
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
        for f in reversed(cleanup):
            f()
    return 0


if __name__ == "__main__":
    sys.exit(main())
