"""``python -m kvikio.benchmarks.s3_upload``: uploading to S3, kvikio against boto3.

Uploads ``--size`` bytes from host memory to a local S3 server (moto, started here on
loopback unless ``--endpoint`` names one) with ``RemoteFile.open_s3(..., mode="w")`` and with
boto3's ``upload_fileobj``, both with the same part size and the same concurrency
(``num_threads`` = boto3's ``max_concurrency``), taking turns (the order flips every
repetition), against the same server, in the same run. Reports, per client, the parts, part
size, concurrency, median wall time and MB/s, the local server's CPU seconds per upload, and
the ratio kvikio / boto3 (target >= 1.0). With CuPy and a GPU it also uploads from device
memory and reports device / host (target >= 0.9).

The local server is the limit here (moto is a Python program): the figures compare the two
clients on one server, they are not S3's throughput. Both ask the server for the same work:
each part with its CRC32 (boto3's default, and kvikio's), so moto builds a composite checksum
at completion rather than a full-object one of its own.
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

    def cpu_seconds(self) -> float:
        """The server's user + system CPU time so far (Linux /proc), 0 where unknown."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return 0.0

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

        clients = {"kvikio": (kvikio_upload, data), "boto3": (boto3_upload, data)}
        if device is not None:
            clients["kvikio_device"] = (kvikio_upload, device)
        times: dict[str, list[float]] = {k: [] for k in clients}
        server_cpu: dict[str, list[float]] = {k: [] for k in clients}
        with kvikio.defaults.set({"num_threads": threads}):
            for name, (fn, buf) in clients.items():  # connections, pool, code paths
                timed(fn, buf, f"warm-{name}")
            for i in range(repetitions):
                # Alternate the order, so neither client always follows the other's garbage.
                order = list(clients) if i % 2 == 0 else list(clients)[::-1]
                for name in order:
                    fn, buf = clients[name]
                    cpu0 = server.cpu_seconds() if server else None
                    times[name].append(timed(fn, buf, f"{name}-{i}"))
                    if server:
                        server_cpu[name].append(server.cpu_seconds() - cpu0)
    finally:
        if server is not None:
            server.stop()
    med = {k: statistics.median(v) for k, v in times.items() if v}
    gbs = {k: size / v / 1e9 for k, v in med.items()}
    out = {
        "size": size,
        "part_size": part_size,
        "parts": -(-size // part_size),
        "threads": threads,
        "repetitions": repetitions,
        "seconds": {k: [round(t, 3) for t in v] for k, v in times.items()},
        "server_cpu_s": {k: round(statistics.median(v), 2) for k, v in server_cpu.items() if v},
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
    print(f"upload {size} bytes: {r['parts']} parts of {part}, concurrency {a.threads} each, "
          f"median of {a.repetitions} (order alternating)")
    print(f"  {'client':14} {'median s':>9} {'MB/s':>8} {'server CPU s':>13}  each s")
    for name in r["seconds"]:
        med = statistics.median(r["seconds"][name])
        cpu = r["server_cpu_s"].get(name)
        cpu_text = f"{cpu:13.2f}" if cpu is not None else f"{'-':>13}"
        print(f"  {name:14} {med:9.3f} {size / med / 1e6:8.1f} {cpu_text}  {r['seconds'][name]}")
    print(f"  kvikio / boto3: {r['kvikio_over_boto3']:.2f}x")
    if "kvikio_device_GBps" in r:
        print(f"  kvikio from device / from host: {r['device_over_host']:.2f}x")
    else:
        print("  (no GPU: device-memory upload not measured)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
