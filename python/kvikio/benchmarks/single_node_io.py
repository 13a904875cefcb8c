"""``python -m kvikio.benchmarks.single_node_io``: read/write throughput of kvikio next to
the machine's own limit, measured in the same run.

Same options and table as ``kvikio bench``: for each operation, kvikio's throughput (a
``CuFile.pread``/``pwrite`` of the whole size, file opened inside the timing), the limit (a
plain parallel pread/pwrite loop in C++ with the same threads and task size, over the same
file, into the same kind of memory) and their ratio; the median of ``--repetitions`` runs.
``--plot FILE.png`` also sweeps the thread count and draws throughput against threads for
each API, with the measured limit as a dashed line.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

import kvikio
import kvikio.defaults
from kvikio import _bench
from kvikio.mmap import Mmap

PAGE = 4096
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "k": 1 << 10, "KiB": 1 << 10, "M": 1 << 20, "MiB": 1 << 20,
          "G": 1 << 30, "GiB": 1 << 30, "T": 1 << 40, "TiB": 1 << 40,
          # SI units, as upstream's command lines write them ("1 GB")
          "kB": 10**3, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
# Upstream's --api names: this benchmark always measures kvikio's CuFile and, as the limit,
# a plain POSIX loop; the others are accepted so that upstream command lines run.
UPSTREAM_APIS = ("cufile", "zarr", "posix", "cufile-mfma", "cufile-mf", "cufile-ma", "all")


def parse_bytes(option: str, text: str) -> int:
    """"4096", "64KiB", "16M", "1.5GiB" -> bytes (powers of 1024), as `kvikio bench`."""
    number = text.rstrip("BKMGTikb")
    unit = text[len(number):]
    number = number.strip()
    try:
        value = float(number)
    except ValueError:
        value = -1
    if unit not in _UNITS or value < 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(
            f"--{option}: '{text}' is not a size (examples: 4096, 64KiB, 16M, 1GiB)"
        )
    return int(value * _UNITS[unit])


def positive(option: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value <= 0:
            raise argparse.ArgumentTypeError(f"--{option}: '{text}' is not a positive integer")
        return value

    return parse


def format_bytes(n: float) -> str:
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    u = 0
    while n >= 1024 and u < 4:
        n /= 1024
        u += 1
    return f"{n:.0f} {units[u]}" if u == 0 else f"{n:.2f} {units[u]}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m kvikio.benchmarks.single_node_io",
        description="kvikio read/write throughput next to a plain parallel pread/pwrite loop",
    )
    # The second names are upstream's flags (-n/--nbytes, -t/--nthreads, --nruns, -d/--dir).
    p.add_argument("--size", "-n", "--nbytes", type=lambda t: parse_bytes("size", t),
                   default=1 << 30,
                   help="bytes per operation (default 1GiB; suffixes KiB MiB GiB, or KB MB GB)")
    p.add_argument("--threads", "-t", "--nthreads", type=positive("threads"),
                   default=os.cpu_count() or 1,
                   help="IO threads, for us and for the limit (default: all cores)")
    p.add_argument("--task-size", type=lambda t: parse_bytes("task-size", t), default=None,
                   help="piece size of a parallel request (default: KVIKIO_TASK_SIZE)")
    p.add_argument("--direct-io", action="store_true",
                   help="O_DIRECT for us and for the limit (default: page cache)")
    p.add_argument("--memory", choices=["host", "device"], default="host",
                   help="kind of memory to read into and write from (device needs CuPy)")
    p.add_argument("--repetitions", "--nruns", type=positive("repetitions"), default=3,
                   help="timed runs of each operation (default 3; the median counts)")
    p.add_argument("--file", default=None,
                   help="file to use (default: a temporary file here, removed after)")
    p.add_argument("-d", "--dir", default=None,
                   help="directory of the temporary file (default: the current directory)")
    p.add_argument("--keep-file", action="store_true", help="keep the file afterwards")
    p.add_argument("--pre-register-buffer", action="store_true",
                   help="register the device buffer with cuFile first (--memory device)")
    p.add_argument("--api", nargs="+", choices=UPSTREAM_APIS, default=None, metavar="API",
                   help="upstream's API list, accepted for its command lines: kvikio's "
                        "CuFile and the plain POSIX loop are always what is measured")
    p.add_argument("--ops", default="write,read", help="operations to run (write,read)")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("--plot", metavar="FILE.png", default=None,
                   help="also sweep the thread count and plot throughput against threads")
    p.add_argument("--plot-threads", default=None,
                   help="thread counts of the sweep (default: 1,2,4,... up to --threads)")
    args = p.parse_args(argv)
    if args.dir is not None and not os.path.isdir(args.dir):
        p.error(f"--dir: '{args.dir}' is not a directory")
    if args.task_size is None:
        args.task_size = kvikio.defaults.get("task_size")
    if args.task_size == 0:
        p.error("--task-size must be positive")
    args.ops = [op for op in args.ops.split(",") if op]
    for op in args.ops:
        if op not in ("read", "write"):
            p.error(f"--ops: unknown operation '{op}' (read, write)")
    if args.direct_io and args.size % PAGE:
        p.error("--direct-io needs --size to be a multiple of 4096")
    if args.plot_threads:
        args.plot_threads = [positive("plot-threads")(t) for t in args.plot_threads.split(",")]
    else:
        sweep, t = [], 1
        while t < args.threads:
            sweep.append(t)
            t *= 2
        args.plot_threads = sweep + [args.threads]
    return args


def progress(line: str) -> None:
    print(f"[single_node_io] {line}", file=sys.stderr, flush=True)


class Memory:
    """Page-aligned host buffers (so O_DIRECT works on both sides), or CuPy device arrays
    next to a page-aligned host staging buffer for the limit."""

    def __init__(self, kind: str, size: int) -> None:
        self.kind = kind
        self.size = size
        self._maps = [mmap.mmap(-1, max(size, PAGE)) for _ in range(2)]
        self.host_src = np.frombuffer(self._maps[0], dtype=np.uint8, count=size)
        self.host_dst = np.frombuffer(self._maps[1], dtype=np.uint8, count=size)
        rng = np.random.default_rng(2026)
        self.host_src[:] = rng.integers(0, 256, size=size, dtype=np.uint8)
        if kind == "device":
            import cupy

            self.cupy = cupy
            self.src = cupy.asarray(self.host_src)
            self.dst = cupy.empty_like(self.src)
        else:
            self.src, self.dst = self.host_src, self.host_dst

    def clear_dst(self) -> None:
        self.dst[:] = 0

    def dst_equals_src(self) -> bool:
        if self.kind == "device":
            return bool(self.cupy.all(self.src == self.dst))
        return bool(np.array_equal(self.src, self.dst))

    def sync(self) -> None:
        if self.kind == "device":
            self.cupy.cuda.runtime.deviceSynchronize()


def time_it(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def ours(op: str, api: str, path: str, mem: Memory, size: int, task_size: int) -> float:
    if op == "write":
        def run():
            with kvikio.CuFile(path, "r+") as f:
                f.pwrite(mem.src, size, 0, task_size).get()
    elif api == "Mmap.pread":
        def run():
            with Mmap(path) as m:
                m.pread(mem.dst, size, 0, task_size).get()
    else:
        def run():
            with kvikio.CuFile(path, "r") as f:
                f.pread(mem.dst, size, 0, task_size).get()
    seconds = time_it(lambda: (run(), mem.sync()))
    return seconds


def limit(op: str, path: str, mem: Memory, size: int, threads: int, task_size: int,
          direct_io: bool) -> float:
    """The plain parallel loop (C++, no library code); for device memory followed by the
    host<->device copy of the whole buffer, the naive way to get the bytes there."""
    write = op == "write"
    flags = (os.O_WRONLY if write else os.O_RDONLY) | (os.O_DIRECT if direct_io else 0)

    def run():
        if write and mem.kind == "device":
            mem.src.get(out=mem.host_src)
        fd = os.open(path, flags)
        try:
            _bench.plain_parallel_io(write, fd, mem.host_src if write else mem.host_dst, size,
                                     threads, task_size)
        finally:
            os.close(fd)
        if not write and mem.kind == "device":
            mem.dst.set(mem.host_dst)
            mem.sync()

    return time_it(run)


def measure(args: argparse.Namespace, path: str, mem: Memory, threads: int, op: str,
            apis: list[str]) -> dict[str, Any]:
    kvikio.defaults.set({"num_threads": threads})
    gb = args.size / 1e9
    runs: dict[str, list[float]] = {api: [] for api in apis}
    runs["limit"] = []
    if op == "read" and not args.direct_io:
        progress("warming the page cache")
        with kvikio.CuFile(path, "r") as f:
            f.pread(mem.dst, args.size, 0, args.task_size).get()
    for rep in range(1, args.repetitions + 1):
        progress(f"{op} {rep}/{args.repetitions} ({threads} threads)")
        for api in apis:
            if op == "read":
                mem.clear_dst()
            runs[api].append(ours(op, api, path, mem, args.size, args.task_size))
            if op == "read" and not mem.dst_equals_src():
                raise RuntimeError(f"benchmark read back different bytes than were written to {path}")
        runs["limit"].append(limit(op, path, mem, args.size, threads, args.task_size, args.direct_io))
    return {name: gb / statistics.median(times) for name, times in runs.items()}


def apis_for(op: str, memory: str, sweep: bool) -> list[str]:
    if op == "write":
        return ["CuFile.pwrite"]
    return ["CuFile.pread", "Mmap.pread"] if sweep and memory == "host" else ["CuFile.pread"]


def plot(path: str, sweep: dict[str, dict[int, float]], args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    colors = {"CuFile.pwrite": "tab:blue", "limit (pwrite)": "tab:blue",
              "CuFile.pread": "tab:green", "limit (pread)": "tab:green", "Mmap.pread": "tab:olive"}
    for name, points in sweep.items():
        xs = sorted(points)
        style = "--" if name.startswith("limit") else "-o"
        ax.plot(xs, [points[x] for x in xs], style, label=name, color=colors.get(name))
    ax.set_xscale("log", base=2)
    ax.set_xticks(args.plot_threads)
    ax.set_xticklabels([str(t) for t in args.plot_threads])
    ax.set_xlabel("threads")
    ax.set_ylabel("GB/s")
    ax.set_ylim(bottom=0)
    ax.set_title(
        f"kvikio {kvikio.__version__}: {format_bytes(args.size)}, task size "
        f"{format_bytes(args.task_size)}, {args.memory} memory, "
        f"{'O_DIRECT' if args.direct_io else 'page cache'}"
    )
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    progress(f"plot written to {path}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.memory == "device":
        try:
            import cupy  # noqa: F401
        except ImportError:
            print("single_node_io: --memory device needs CuPy", file=sys.stderr)
            return 2
    temporary = args.file is None
    path = args.file or os.path.join(args.dir or os.getcwd(), f"kvikio-bench-{os.getpid()}.bin")
    kvikio.defaults.set({"task_size": args.task_size, "auto_direct_io_read": args.direct_io,
                         "auto_direct_io_write": args.direct_io})
    try:
        progress(f"file {path}, {format_bytes(args.size)}, {args.threads} threads, task size "
                 f"{format_bytes(args.task_size)}, {args.memory} memory, "
                 f"{'Direct IO' if args.direct_io else 'page cache'}")
        mem = Memory(args.memory, args.size)
        if args.pre_register_buffer and args.memory == "device":
            kvikio.memory_register(mem.src)
            kvikio.memory_register(mem.dst)
        with kvikio.CuFile(path, "w") as f:  # lay the file down once, untimed
            f.pwrite(mem.src, args.size, 0, args.task_size).get()
        results = []
        for op in args.ops:
            r = measure(args, path, mem, args.threads, op, apis_for(op, args.memory, False))
            api = apis_for(op, args.memory, False)[0]
            results.append({"op": op, "kvikio_gbps": r[api], "limit_gbps": r["limit"],
                            "ratio": r[api] / r["limit"]})
        sweep: dict[str, dict[int, float]] = {}
        if args.plot:
            for threads in args.plot_threads:
                for op in args.ops:
                    r = measure(args, path, mem, threads, op, apis_for(op, args.memory, True))
                    for name, gbps in r.items():
                        key = f"limit ({'pread' if op == 'read' else 'pwrite'})" if name == "limit" else name
                        sweep.setdefault(key, {})[threads] = gbps
    finally:
        if temporary and not args.keep_file and os.path.exists(path):
            os.remove(path)

    if args.json:
        out = {"file": path, "size": args.size, "threads": args.threads,
               "task_size": args.task_size, "direct_io": args.direct_io, "memory": args.memory,
               "repetitions": args.repetitions,
               "results": [{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}
                           for r in results]}
        if args.plot:
            out["sweep"] = {name: {str(t): round(v, 3) for t, v in pts.items()}
                            for name, pts in sweep.items()}
        print(json.dumps(out))
    else:
        print(f"{'op':<8} {'memory':<8} {'kvikio GB/s':>14} {'limit GB/s':>20} {'ratio':>8}")
        for r in results:
            kind = "pread" if r["op"] == "read" else "pwrite"
            print(f"{r['op']:<8} {args.memory:<8} {r['kvikio_gbps']:14.2f} "
                  f"{r['limit_gbps']:13.2f} ({kind}) {r['ratio']:7.2f}x")
        loop = "pread/pwrite" if len(args.ops) > 1 else ("pread" if args.ops[0] == "read" else "pwrite")
        print(f"({format_bytes(args.size)}, {args.threads} threads, task size "
              f"{format_bytes(args.task_size)}, {'O_DIRECT' if args.direct_io else 'page cache'}, "
              f"median of {args.repetitions}; limit = plain parallel {loop} loop over the same "
              f"file and memory{' + one host/device copy' if args.memory == 'device' else ''})")
    if args.plot:
        plot(args.plot, sweep, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
