"""Reading a zarr array: GDSStore versus LocalStore (+ cupy.asarray), and versus upstream.

    python -m kvikio.benchmarks.zarr_io [--size 4GiB] [--chunk 64KiB 1MiB 64MiB ...]
                                        [--memory device|host] [--threads 16]
                                        [--repetitions 3] [--dir PATH] [--json]
                                        [--compare-upstream PYTHON]

For each chunk size, writes one uncompressed float32 array (the same chunk files serve every
store), warms the page cache, then times full reads: through ``GDSStore`` (with
``zarr.config.enable_gpu()`` for ``--memory device``: chunks land in GPU memory) and through
zarr's ``LocalStore`` (into host memory, then ``cupy.asarray`` for device memory). With
``--compare-upstream PYTHON`` the same timing code (``_compare_worker.py``) also runs under
that interpreter, where another KvikIO (upstream's wheel) is installed, over the same files:
its GDSStore throughput and the ratio ours/upstream are printed per chunk size. Every read
is checked against the data written.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30,
          # SI units, as upstream's command lines write them ("10 MB")
          "kb": 10**3, "mb": 10**6, "gb": 10**9}
_STORES = {"kvikio": "GDSStore", "posix": "LocalStore+cupy.asarray"}


def parse_bytes(text: str) -> int:
    number = text.rstrip("".join(sorted({c for u in _UNITS for c in u} | set("KMGBI"))))
    unit = text[len(number):].lower()
    number = number.strip()
    try:
        if unit in _UNITS and number:
            return int(float(number) * _UNITS[unit])
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"'{text}' is not a size (examples: 4096, 64MiB, 4GiB)")


def _fmt_size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kvikio.benchmarks.zarr_io", description=__doc__.split("\n")[0])
    # The second names are upstream's flags (-n/--nbytes, --chunksize, -t/--nthreads, --nruns).
    parser.add_argument("--size", "-n", "--nbytes", type=parse_bytes, default=4 << 30, help="array size in bytes (default 4GiB)")
    parser.add_argument("--chunk", "--chunksize", type=parse_bytes, nargs="+", default=[64 << 20],
                        help="chunk size(s) in bytes, one array each (default 64MiB)")
    parser.add_argument("--dtype", default="float32", help="NumPy dtype of the array (default float32)")
    parser.add_argument("--memory", choices=("device", "host"), default="device",
                        help="where chunks land: GPU memory (default; needs CuPy) or host memory")
    parser.add_argument("--threads", "-t", "--nthreads", type=int, default=16, help="kvikio IO threads (default 16)")
    parser.add_argument("--repetitions", "--nruns", type=int, default=3, help="timed reads of each store (median counts)")
    parser.add_argument("--n-warmup-runs", type=int, default=1, help="untimed reads of each store first (default 1)")
    parser.add_argument("--dir", "-d", type=Path, default=None, help="where to put the array (default: a temp dir here)")
    parser.add_argument("--api", nargs="+", choices=(*_STORES, "all"), default=["all"],
                        help="stores to time: kvikio (GDSStore), posix (LocalStore [+ cupy.asarray])")
    parser.add_argument("--compare-upstream", metavar="PYTHON", default=None,
                        help="also time GDSStore under this interpreter (another KvikIO, e.g. "
                             "upstream's wheel in a venv) over the same files")
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
    if args.repetitions < 1 or args.threads < 1:
        parser.error("--repetitions and --threads must be at least 1")
    if args.drop_vm_cache and args.compare_upstream:
        parser.error("--drop-vm-cache times single reads in this process only; leave out --compare-upstream")

    import numpy as np
    import zarr
    from zarr.storage import LocalStore

    import kvikio
    from kvikio.benchmarks import _compare_worker as worker

    n = args.size // dtype.itemsize
    log = lambda msg: print(f"[zarr_io] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    names = {"kvikio": "GDSStore", "posix": _STORES["posix"] if args.memory == "device" else "LocalStore"}
    rows, upstream_info, failed = [], None, False
    for chunk_bytes in args.chunk:
        chunk = max(1, chunk_bytes // dtype.itemsize)
        root = Path(tempfile.mkdtemp(prefix="kvikio-zarr-bench-", dir=args.dir or Path.cwd()))
        try:
            log(f"writing {args.size / 2**30:.2f} GiB {dtype} array, {_fmt_size(chunk_bytes)} chunks, in {root}")
            z = zarr.create_array(store=LocalStore(root), shape=(n,), chunks=(chunk,), dtype=dtype, compressors=None)
            z[...] = worker.expected_values(n, dtype, np)
            del z

            def spec(store: str, repetitions: int, warmup: int) -> dict:
                return {"kind": "zarr", "root": str(root), "store": store, "memory": args.memory,
                        "repetitions": repetitions, "warmup": warmup, "threads": args.threads}

            seconds: dict[str, list[float]] = {}
            for api in apis:
                store = "gds" if api == "kvikio" else "local"
                if args.drop_vm_cache:  # one timed read at a time, the cache dropped before each
                    times = []
                    for rep in range(args.repetitions):
                        for path in root.rglob("*"):
                            if path.is_file():
                                kvikio.drop_file_page_cache(path)
                        times += worker.time_zarr(spec(store, 1, 0 if rep else args.n_warmup_runs))["seconds"]
                else:
                    log(f"{names[api]}: {args.n_warmup_runs} warm-up + {args.repetitions} timed reads")
                    times = worker.time_zarr(spec(store, args.repetitions, args.n_warmup_runs))["seconds"]
                seconds[names[api]] = times
            row = {"chunk": chunk_bytes, "gbps": {k: args.size / 1e9 / float(np.median(v)) for k, v in seconds.items()}}
            if args.compare_upstream:
                log(f"upstream GDSStore under {args.compare_upstream}")
                answer = worker.run_worker(args.compare_upstream, spec("gds", args.repetitions, args.n_warmup_runs))
                if "error" in answer:
                    failed = True
                    upstream_info = {"python": args.compare_upstream, "error": answer["error"]}
                    log(f"UPSTREAM FAILED: {answer['error']}")
                else:
                    upstream_info = {"python": args.compare_upstream, "kvikio": answer["kvikio"]}
                    row["gbps"]["upstream GDSStore"] = args.size / 1e9 / float(np.median(answer["seconds"]))
            g = row["gbps"]
            if "GDSStore" in g and names["posix"] in g:
                row["ratio"] = g["GDSStore"] / g[names["posix"]]
            if "GDSStore" in g and "upstream GDSStore" in g:
                row["ratio_upstream"] = g["GDSStore"] / g["upstream GDSStore"]
            rows.append(row)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    cache = "page cache dropped" if args.drop_vm_cache else "page cache hot"
    if args.json:
        out = {"size": args.size, "memory": args.memory, "threads": args.threads, "results": rows}
        if len(rows) == 1:  # the one-chunk form of earlier versions
            out.update(chunk=rows[0]["chunk"], gbps=rows[0]["gbps"], ratio=rows[0].get("ratio"))
        if upstream_info:
            out["upstream"] = upstream_info
        print(json.dumps(out))
    else:
        stores = list(dict.fromkeys(k for r in rows for k in r["gbps"]))
        head = f"{'chunk':<10}" + "".join(f"{k + ' GB/s':>30}" for k in stores)
        has_up = any("ratio_upstream" in r for r in rows)
        has_posix = any("ratio" in r for r in rows)
        head += (f"{'ours/upstream':>15}" if has_up else "") + (f"{'GDS/' + names['posix'].split('+')[0]:>18}" if has_posix else "")
        print(head)
        for r in rows:
            line = f"{_fmt_size(r['chunk']):<10}" + "".join(
                f"{r['gbps'][k]:>30.3f}" if k in r["gbps"] else f"{'-':>30}" for k in stores)
            if has_up:
                line += f"{r['ratio_upstream']:>14.2f}x" if "ratio_upstream" in r else f"{'-':>15}"
            if has_posix:
                line += f"{r['ratio']:>17.2f}x" if "ratio" in r else f"{'-':>18}"
            print(line)
        print(f"({args.size / 2**30:.2f} GiB {dtype}, {args.memory} memory, {args.threads} threads, "
              f"{cache}, median of {args.repetitions}; kvikio {kvikio.__version__})")
        if upstream_info:
            if "error" in upstream_info:
                print(f"upstream ({upstream_info['python']}): FAILED: {upstream_info['error']}")
            else:
                print(f"upstream ({upstream_info['python']}): kvikio {upstream_info['kvikio']['version']} "
                      f"from {upstream_info['kvikio']['file']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
