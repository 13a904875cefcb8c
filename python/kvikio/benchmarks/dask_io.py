"""``python -m kvikio.benchmarks.dask_io``: a Dask read of a zarr array through
:class:`kvikio.zarr.GDSStore`, against the same read through zarr's ``LocalStore`` (CPU), or,
with ``--cuda``, a dask-cuda ``LocalCUDACluster`` (one worker, chunks into CuPy) against the
single-process ``GDSStore`` read into GPU memory, in the same run.

The array (``--size``, uint32, ``--chunk`` bytes per chunk, no compression) is written once in
a temporary directory (``--dir``). Each timed read computes the array's sum on the cluster
(so only a scalar comes back) and checks it against the known sum: every element is read.
The stores take turns, ``--repetitions`` times; the median time of each is printed with the
ratio. kvikio's settings reach the workers through :class:`kvikio.dask.KvikioSettings`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from kvikio.benchmarks.fsspec_io import _size


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m kvikio.benchmarks.dask_io", description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=_size, default=1 << 30, help="array bytes (default 1GiB)")
    p.add_argument("--chunk", type=_size, default=16 << 20, help="bytes per chunk (default 16MiB)")
    p.add_argument("--workers", type=int, default=2, help="worker processes on the CPU (default 2)")
    p.add_argument("--threads-per-worker", type=int, default=4, help="(default 4)")
    p.add_argument("--threads", type=int, default=8, help="kvikio num_threads on each worker (default 8)")
    p.add_argument("--repetitions", type=int, default=3, help="timed reads per store (default 3)")
    p.add_argument("--cuda", action="store_true", help="LocalCUDACluster into CuPy against one process")
    p.add_argument("--dir", help="where to write the array (default: a temporary directory)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    if min(args.workers, args.threads_per_worker, args.threads, args.repetitions) <= 0:
        p.error("--workers, --threads-per-worker, --threads and --repetitions must be positive")
    if args.chunk % 4 or args.size % 4 or args.chunk > args.size:
        p.error("--size and --chunk must be multiples of 4 bytes, --chunk at most --size")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import dask.array as da
    import zarr
    from distributed import Client, LocalCluster
    from zarr.storage import LocalStore

    from kvikio.dask import KvikioSettings
    from kvikio.zarr import GDSStore

    n, c = args.size // 4, args.chunk // 4
    base = Path(args.dir or tempfile.mkdtemp(prefix="kvikio-dask-bench-"))
    path = base / f"dask-bench-{n}-{c}.zarr"
    try:
        z = zarr.create_array(GDSStore(path), shape=(n,), chunks=(c,), dtype="uint32", compressors=None)
        block = 1 << 24
        for s in range(0, n, block):
            e = min(n, s + block)
            z[s:e] = (np.arange(s, e, dtype=np.uint64) % 1_000_003).astype(np.uint32)
        q, r = divmod(n, 1_000_003)
        expected = q * (1_000_002 * 1_000_003 // 2) + r * (r - 1) // 2
        settings = {"num_threads": args.threads}
        if args.cuda:
            from dask_cuda import LocalCUDACluster

            cluster = LocalCUDACluster(n_workers=1, threads_per_worker=args.threads_per_worker, dashboard_address=None)
            gpu = {"buffer": "zarr.buffer.gpu.Buffer", "ndbuffer": "zarr.buffer.gpu.NDBuffer"}
            plugin = KvikioSettings(settings, zarr_config=gpu)
        else:
            cluster = LocalCluster(n_workers=args.workers, threads_per_worker=args.threads_per_worker,
                                   processes=True, dashboard_address=None)
            plugin = KvikioSettings(settings)
        times: dict[str, list[float]] = {}
        with cluster, Client(cluster) as client:
            client.register_plugin(plugin)

            def dask_read(store_cls):
                def run() -> int:
                    d = da.from_zarr(zarr.open_array(store_cls(path, read_only=True)))
                    return int(client.compute(d.sum(dtype="uint64")).result())

                return run

            reads = {"dask GDSStore": dask_read(GDSStore)}
            if args.cuda:
                import cupy
                import kvikio.defaults

                def single() -> int:
                    with zarr.config.enable_gpu(), kvikio.defaults.set(settings):
                        out = zarr.open_array(GDSStore(path, read_only=True))[:]
                        assert isinstance(out, cupy.ndarray)
                        return int(out.sum(dtype="uint64"))

                reads["one process GDSStore"] = single
            else:
                reads["dask LocalStore"] = dask_read(LocalStore)
            for rep in range(args.repetitions + 1):  # the first round warms up
                for name, read in reads.items():
                    t0 = time.perf_counter()
                    got = read()
                    dt = time.perf_counter() - t0
                    if got != expected:
                        raise RuntimeError(f"{name}: sum {got}, expected {expected}")
                    if rep:
                        times.setdefault(name, []).append(dt)
        med = {k: statistics.median(v) for k, v in times.items()}
        ref = "one process GDSStore" if args.cuda else "dask LocalStore"
        result = {
            "size": args.size, "chunk": args.chunk, "cuda": args.cuda,
            "median_seconds": med,
            "gbps": {k: args.size / v / 1e9 for k, v in med.items()},
            "ratio": med[ref] / med["dask GDSStore"],
            "ratio_of": f"dask GDSStore against {ref} (throughput)",
        }
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print(f"zarr array of {args.size} B, {args.chunk} B chunks, median of {args.repetitions}:")
            for k, v in med.items():
                print(f"  {k:<22} {v * 1e3:9.1f} ms  {args.size / v / 1e9:7.2f} GB/s")
            print(f"  dask GDSStore is {result['ratio']:.2f}x {ref}")
    finally:
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
        else:
            shutil.rmtree(path, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
