"""``python -m kvikio.benchmarks.s3_upload``: uploading to S3, kvikio against boto3.

Uploads ``--size`` bytes from host memory to a local S3 server (moto, started here on
loopback unless ``--endpoint`` names one) with ``RemoteFile.open_s3(..., mode="w")`` and with
boto3's ``upload_fileobj``, both with the same part size and the same concurrency
(``num_threads`` = boto3's ``max_concurrency``), alternating, in the same run. Reports the
median of each and the ratio kvikio / boto3 (target >= 1.0). With CuPy and a GPU it also
uploads from device memory and reports device / host (target >= 0.9).

The local server is the limit here (moto is a Python program): the figures compare the two
clients on one server, they are not S3's throughput.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

import numpy as np

import kvikio
import kvikio.defaults
from kvikio.remote_file import RemoteFile

BUCKET = "kvikio-bench"
REGION = "us-east-1"


def parse_size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    if t and t[-1] in units:
        return int(float(t[:-1]) * units[t[-1]])
    return int(t)


class MotoProcess:
    """moto's server as a child process on a free loopback port."""

    def __init__(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/", timeout=1).read()
                return
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError("moto's server did not start (is moto[server] installed?)")
                time.sleep(0.2)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def run(size: int, part_size: int, threads: int, repetitions: int, endpoint: str | None) -> dict:
    import boto3
    from boto3.s3.transfer import TransferConfig
    from botocore.config import Config

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    server = None if endpoint else MotoProcess()
    endpoint = endpoint or server.endpoint
    try:
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name=REGION,
            config=Config(
                signature_version="s3v4",
                s3={"addressing_style": "path"},
                max_pool_connections=max(10, threads),
            ),
        )
        try:
            client.create_bucket(Bucket=BUCKET)
        except client.exceptions.BucketAlreadyOwnedByYou:
            pass
        data = np.random.default_rng(1).integers(0, 256, size, dtype=np.uint8)
        cfg = TransferConfig(
            multipart_threshold=part_size,
            multipart_chunksize=part_size,
            max_concurrency=threads,
            use_threads=True,
        )

        def kvikio_upload(buf, key):
            with RemoteFile.open_s3(
                BUCKET, key, aws_region_name=REGION, aws_endpoint_url=endpoint,
                mode="w", part_size=part_size,
            ) as f:
                f.write(buf)

        def boto3_upload(buf, key):
            client.upload_fileobj(io.BytesIO(memoryview(buf)), BUCKET, key, Config=cfg)

        def timed(fn, buf, key):
            t0 = time.perf_counter()
            fn(buf, key)
            dt = time.perf_counter() - t0
            got = client.head_object(Bucket=BUCKET, Key=key)["ContentLength"]
            if got != size:
                raise RuntimeError(f"{key}: {got} bytes uploaded, not {size}")
            client.delete_object(Bucket=BUCKET, Key=key)
            return dt

        device = None
        try:
            import cupy

            if cupy.cuda.runtime.getDeviceCount() > 0:
                device = cupy.asarray(data)
        except Exception:
            device = None

        times: dict[str, list[float]] = {"kvikio": [], "boto3": [], "kvikio_device": []}
        with kvikio.defaults.set({"num_threads": threads}):
            timed(kvikio_upload, data, "warm-kvikio")  # connections, pool, code paths
            timed(boto3_upload, data, "warm-boto3")
            for i in range(repetitions):
                times["kvikio"].append(timed(kvikio_upload, data, f"k{i}"))
                times["boto3"].append(timed(boto3_upload, data, f"b{i}"))
                if device is not None:
                    times["kvikio_device"].append(timed(kvikio_upload, device, f"d{i}"))
    finally:
        if server is not None:
            server.stop()
    med = {k: statistics.median(v) for k, v in times.items() if v}
    gbs = {k: size / v / 1e9 for k, v in med.items()}
    out = {
        "size": size,
        "part_size": part_size,
        "threads": threads,
        "repetitions": repetitions,
        "kvikio_GBps": gbs["kvikio"],
        "boto3_GBps": gbs["boto3"],
        "kvikio_over_boto3": gbs["kvikio"] / gbs["boto3"],
    }
    if "kvikio_device" in gbs:
        out["kvikio_device_GBps"] = gbs["kvikio_device"]
        out["device_over_host"] = gbs["kvikio_device"] / gbs["kvikio"]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kvikio.benchmarks.s3_upload", description=__doc__)
    p.add_argument("--size", default="256MiB", help="bytes to upload (default 256MiB)")
    p.add_argument("--part-size", default="8MiB", help="multipart part size (default 8MiB)")
    p.add_argument("--threads", type=int, default=8, help="concurrency of both (default 8)")
    p.add_argument("--repetitions", type=int, default=3, help="timed uploads each; median")
    p.add_argument("--endpoint", help="an S3-compatible server to use instead of a local moto")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    a = p.parse_args(argv)
    try:
        size, part = parse_size(a.size), parse_size(a.part_size)
    except ValueError:
        p.error(f"bad size: {a.size!r} or {a.part_size!r}")
    if size <= 0 or a.threads <= 0 or a.repetitions <= 0:
        p.error("--size, --threads and --repetitions must be positive")
    r = run(size, part, a.threads, a.repetitions, a.endpoint)
    if a.json:
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()}))
        return 0
    print(f"upload {size} bytes, parts of {part}, {a.threads} threads, median of {a.repetitions}")
    print(f"  kvikio  {r['kvikio_GBps']:8.3f} GB/s")
    print(f"  boto3   {r['boto3_GBps']:8.3f} GB/s")
    print(f"  kvikio / boto3: {r['kvikio_over_boto3']:.2f}x")
    if "kvikio_device_GBps" in r:
        print(f"  kvikio from device {r['kvikio_device_GBps']:8.3f} GB/s "
              f"({r['device_over_host']:.2f}x of host)")
    else:
        print("  (no GPU: device-memory upload not measured)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
