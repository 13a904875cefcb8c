"""Reading a zarr array into GPU memory: GDSStore versus LocalStore + cupy.asarray.

    python -m kvikio.benchmarks.zarr_io [--size 4GiB] [--chunk 64MiB] [--threads 16]
                                        [--repetitions 3] [--dir PATH] [--json]

Writes one uncompressed float32 array (the same chunk files serve both stores), warms the
page cache, then times full reads: through ``GDSStore`` with ``zarr.config.enable_gpu()``
(chunks land in GPU memory) and through zarr's ``LocalStore`` into host memory followed by
``cupy.asarray``. Prints both throughputs and the ratio; every read is checked against the
data written.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30,
          # SI units, as upstream's command lines write them ("10 MB")
          "kb": 10**3, "mb": 10**6, "gb": 10**9}
_STORES = {"kvikio": "GDSStore", "posix": "LocalStore+cupy.asarray"}


def parse_bytes(text: str) -> int:
    number = text.rstrip("".join(sorted({c for u in _UNITS for c in u} | set("KMGBI"))))
    unit = text[len(number):].lower()
    number = number.strip()
    if unit not in _UNITS or not number:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size (examples: 4096, 64MiB, 4GiB)")
    return int(float(number) * _UNITS[unit])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kvikio.benchmarks.zarr_io", description=__doc__.split("\n")[0])
    # The second names are upstream's flags (-n/--nbytes, --chunksize, -t/--nthreads, --nruns).
    parser.add_argument("--size", "-n", "--nbytes", type=parse_bytes, default=4 << 30, help="array size in bytes (default 4GiB)")
    parser.add_argument("--chunk", "--chunksize", type=parse_bytes, default=64 << 20, help="chunk size in bytes (default 64MiB)")
    parser.add_argument("--dtype", default="float32", help="NumPy dtype of the array (default float32)")
    parser.add_argument("--threads", "-t", "--nthreads", type=int, default=16, help="kvikio IO threads (default 16)")
    parser.add_argument("--repetitions", "--nruns", type=int, default=3, help="timed reads of each store (median counts)")
    parser.add_argument("--n-warmup-runs", type=int, default=1, help="untimed reads of each store first (default 1)")
    parser.add_argument("--dir", "-d", type=Path, default=None, help="where to put the array (default: a temp dir here)")
    parser.add_argument("--api", nargs="+", choices=(*_STORES, "all"), default=["all"],
                        help="stores to time: kvikio (GDSStore), posix (LocalStore + cupy.asarray)")
    parser.add_argument("--drop-vm-cache", action="store_true",
                        help="evict the array's files from the page cache before each timed read")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    apis = list(_STORES) if "all" in args.api else list(dict.fromkeys(args.api))
    try:
        import numpy

        dtype = numpy.dtype(args.dtype)
    except TypeError:
        parser.error(f"--dtype: '{args.dtype}' is not a NumPy dtype")
    if args.size % dtype.itemsize:
        parser.error(f"--size {args.size} is not a multiple of the {dtype} item size {dtype.itemsize}")

    import cupy
    import numpy as np
    import zarr
    from zarr.storage import LocalStore

    import kvikio
    import kvikio.defaults
    from kvikio.zarr import GDSStore

    item = dtype.itemsize
    n = args.size // item
    chunk = max(1, args.chunk // item)
    root = Path(tempfile.mkdtemp(prefix="kvikio-zarr-bench-", dir=args.dir or Path.cwd()))
    log = lambda msg: print(f"[zarr_io] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    try:
        kvikio.defaults.set({"num_threads": args.threads})
        log(f"writing {args.size / 2**30:.2f} GiB {dtype} array, {args.chunk / 2**20:.0f} MiB chunks, in {root}")
        expected = cupy.random.default_rng(7).integers(0, 100, n).astype(dtype)
        with zarr.config.enable_gpu():
            z = zarr.create_array(store=GDSStore(root), shape=(n,), chunks=(chunk,), dtype=dtype, compressors=None)
            z[...] = expected

        def read_gds():
            with zarr.config.enable_gpu():
                return zarr.open_array(store=GDSStore(root, read_only=True), mode="r")[...]

        def read_local():
            return cupy.asarray(zarr.open_array(store=LocalStore(root, read_only=True), mode="r")[...])

        readers = {"GDSStore": read_gds, "LocalStore+cupy.asarray": read_local}
        chosen = [(_STORES[api], readers[_STORES[api]]) for api in apis]
        timings = {name: [] for name, _ in chosen}
        for _ in range(args.n_warmup_runs):
            for name, fn in chosen:
                fn()  # warm the page cache and the code paths
        for rep in range(args.repetitions):
            for name, fn in chosen:
                if args.drop_vm_cache:
                    for path in root.rglob("*"):
                        if path.is_file():
                            kvikio.drop_file_page_cache(path)
                log(f"{name} read {rep + 1}/{args.repetitions}")
                cupy.cuda.runtime.deviceSynchronize()
                t0 = time.perf_counter()
                got = fn()
                cupy.cuda.runtime.deviceSynchronize()
                timings[name].append(time.perf_counter() - t0)
                if not isinstance(got, cupy.ndarray) or not bool((got == expected).all()):
                    raise RuntimeError(f"{name} read back different data")
                del got
        gbps = {k: args.size / 1e9 / float(np.median(v)) for k, v in timings.items()}
        ratio = gbps["GDSStore"] / gbps["LocalStore+cupy.asarray"] if len(gbps) == 2 else None
        if args.json:
            print(json.dumps({"size": args.size, "chunk": args.chunk, "threads": args.threads, "gbps": gbps, "ratio": ratio}))
        else:
            print(f"{'store':<26}{'GB/s':>10}")
            for k, v in gbps.items():
                print(f"{k:<26}{v:>10.2f}")
            cache = "page cache dropped" if args.drop_vm_cache else "page cache hot"
            what = f"({args.size / 2**30:.2f} GiB, {args.chunk / 2**20:.0f} MiB chunks, {cache}, median of {args.repetitions})"
            print(f"GDSStore is {ratio:.2f}x LocalStore + cupy.asarray {what}" if ratio is not None else what)
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
