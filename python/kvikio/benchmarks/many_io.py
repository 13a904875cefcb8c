"""Many requests in flight: N preads issued before the first ``get()``, against one large pread.

    python -m kvikio.benchmarks.many_io [--memory host device] [--framework cupy torch]
                                        [--cases 1x1GiB 8x32MiB ... ckpt] [--threads 16]
                                        [--compare-upstream PYTHON] [--json]

Every case reads the same file region: ``N x SIZE`` is N preads of SIZE bytes, each into a
buffer of its own, all issued before the first ``get()``; ``ckpt`` is a checkpoint's mix
(per layer four 8 MiB attention matrices, three 22 MiB MLP matrices and five 4 KiB norm and
bias vectors between them). Each case is reported as a ratio to ONE pread of all its bytes
into one buffer, timed in the same process and the same round (the limit this pattern should
reach). Further rows: ``--threads`` threads sharing one handle, each ``read()``-ing 4 KiB at
random offsets into a buffer of its own (reads/s), and the seed's checkpoint pattern (one
blocking ``write``/``read`` per array, in sequence).

With ``--compare-upstream PYTHON`` the same file runs as a script under ``PYTHON`` (an
interpreter where ``import kvikio`` is upstream KvikIO) over the same file, in the same run,
and the table gives ours against upstream. As a script this file imports nothing of our
package but ``kvikio`` itself, so it times whichever kvikio that interpreter has.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


def parse_size(text: str) -> int:
    units = {"KiB": KiB, "MiB": MiB, "GiB": GiB, "B": 1}
    for unit, scale in units.items():
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * scale)
    return int(text)


def checkpoint_mix(total: int) -> list[int]:
    """Tensor sizes of a bf16 transformer checkpoint (hidden 2048, MLP 5632) of about
    ``total`` bytes: large matrices with small norm and bias vectors between them."""
    layer = [8 * MiB, 4 * KiB, 8 * MiB, 4 * KiB, 8 * MiB, 4 * KiB, 8 * MiB, 4 * KiB,
             2048 * 5632 * 2, 2048 * 5632 * 2, 4 * KiB, 2048 * 5632 * 2]
    sizes: list[int] = []
    while sum(sizes) + sum(layer) <= total:
        sizes += layer
    return sizes


def case_sizes(name: str, limit: int) -> list[int]:
    if name == "ckpt":
        return checkpoint_mix(limit)
    n, size = name.split("x")
    return [parse_size(size)] * int(n)


class Memory:
    """Buffers of one kind: host (NumPy) or device (CuPy or torch)."""

    def __init__(self, memory: str, framework: str):
        import numpy

        self.device = memory == "device"
        self.framework = framework
        self.np = numpy
        if self.device and framework == "cupy":
            import cupy

            self.cp = cupy
        elif self.device:
            import torch

            self.torch = torch

    def empty(self, nbytes: int):
        if not self.device:
            return self.np.empty(nbytes, dtype="uint8")
        if self.framework == "cupy":
            return self.cp.empty(nbytes, dtype="uint8")
        return self.torch.empty(nbytes, dtype=self.torch.uint8, device="cuda")

    def sync(self):
        if self.device and self.framework == "cupy":
            self.cp.cuda.runtime.deviceSynchronize()
        elif self.device:
            self.torch.cuda.synchronize()

    def equal(self, a, b) -> bool:
        if not self.device:
            return bool((a == b).all())
        if self.framework == "cupy":
            return bool((a == b).all())
        return bool(self.torch.equal(a, b))

    def fill_random(self, buf, seed: int):
        data = self.np.random.default_rng(seed).integers(0, 256, len(buf), dtype="uint8")
        if not self.device:
            buf[:] = data
        elif self.framework == "cupy":
            buf.set(data)
        else:
            buf.copy_(self.torch.from_numpy(data))


def make_file(path: str, size: int) -> None:
    if os.path.exists(path) and os.path.getsize(path) == size:
        return
    rng = random.Random(1)
    with open(path, "wb") as f:
        block = 64 * MiB
        done = 0
        while done < size:
            n = min(block, size - done)
            f.write(rng.randbytes(n))
            done += n


def time_case(f, mem: Memory, sizes: list[int], repetitions: int) -> dict:
    """Seconds of the N-pread pattern and of the one large pread, taking turns, and the
    check that both read the same bytes."""
    total = sum(sizes)
    offsets, pos = [], 0
    for s in sizes:
        offsets.append(pos)
        pos += s
    bufs = [mem.empty(s) for s in sizes]
    big = mem.empty(total)
    many_s, one_s = [], []
    for rep in range(repetitions + 1):  # the first round is a warm-up
        order = ("many", "one") if rep % 2 == 0 else ("one", "many")
        for which in order:
            mem.sync()
            t0 = time.perf_counter()
            if which == "many":
                futures = [f.pread(b, s, o) for b, s, o in zip(bufs, sizes, offsets)]
                got = sum(fu.get() for fu in futures)
            else:
                got = f.pread(big, total, 0).get()
            mem.sync()
            dt = time.perf_counter() - t0
            if got != total:
                raise RuntimeError(f"{which}: read {got} of {total} bytes")
            if rep > 0:
                (many_s if which == "many" else one_s).append(dt)
    for b, s, o in zip(bufs, sizes, offsets):
        if not mem.equal(b, big[o:o + s]):
            raise RuntimeError(f"the pread of {s} bytes at {o} differs from the large read")
    return {"n": len(sizes), "bytes": total, "many_s": min(many_s), "one_s": min(one_s)}


def time_small_reads(path: str, file_size: int, mem: Memory, threads: int, seconds: float) -> dict:
    """Reads/s of ``threads`` threads sharing one handle, each read()-ing 4 KiB at random
    aligned offsets into a buffer of its own; every read checked against the file."""
    import kvikio

    io = 4 * KiB
    counts = [0] * threads
    errors: list[BaseException] = []
    start = threading.Barrier(threads + 1)
    stop = threading.Event()
    with open(path, "rb") as raw, kvikio.CuFile(path, "r") as f:

        def work(i: int):
            try:
                buf = mem.empty(io)
                rng = random.Random(i)
                start.wait()
                n = 0
                while not stop.is_set():
                    off = rng.randrange(file_size // io) * io
                    f.read(buf, io, off)
                    n += 1
                counts[i] = n
                off = rng.randrange(file_size // io) * io  # one read checked after the clock
                f.read(buf, io, off)
                host = mem.np.asarray(buf.get() if mem.device and mem.framework == "cupy"
                                      else (buf.cpu().numpy() if mem.device else buf))
                if host.tobytes() != os.pread(raw.fileno(), io, off):
                    raise RuntimeError(f"thread {i}: 4 KiB read at {off} differs from the file")
            except BaseException as e:  # noqa: BLE001 - reported by the caller
                errors.append(e)
                start.abort()

        ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for t in ts:
            t.start()
        start.wait()
        t0 = time.perf_counter()
        time.sleep(seconds)
        stop.set()
        for t in ts:
            t.join()
        dt = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return {"reads_per_s": sum(counts) / dt}


def time_seed_checkpoint(dirname: str, mem: Memory, sizes: list[int], repetitions: int) -> dict:
    """The seed's "Save and Load GPU Model Checkpoints": one blocking write, then one blocking
    read, per array, in sequence; the arrays read back equal those written."""
    import kvikio

    path = os.path.join(dirname, "seed-checkpoint.bin")
    arrays = []
    for i, s in enumerate(sizes):
        a = mem.empty(s)
        mem.fill_random(a, i)
        arrays.append(a)
    save_s, load_s = [], []
    for rep in range(repetitions + 1):
        mem.sync()
        t0 = time.perf_counter()
        with kvikio.CuFile(path, "w") as f:
            offset = 0
            for a in arrays:
                f.write(a, file_offset=offset)
                offset += len(a)
        t1 = time.perf_counter()
        loaded = []
        with kvikio.CuFile(path, "r") as f:
            offset = 0
            for s in sizes:
                a = mem.empty(s)
                f.read(a, file_offset=offset)
                offset += s
                loaded.append(a)
        mem.sync()
        t2 = time.perf_counter()
        if rep > 0:
            save_s.append(t1 - t0)
            load_s.append(t2 - t1)
    for i, (a, b) in enumerate(zip(arrays, loaded)):
        if not mem.equal(a, b):
            raise RuntimeError(f"seed checkpoint: array {i} read back differs")
    os.unlink(path)
    return {"bytes": sum(sizes), "save_s": min(save_s), "load_s": min(load_s)}


def run_all(spec: dict) -> dict:
    import kvikio
    import kvikio.defaults

    try:
        kvikio.defaults.set({"num_threads": spec["threads"]})
    except (AttributeError, TypeError):
        kvikio.defaults.num_threads_reset(spec["threads"])
    out = {"kvikio": {"version": getattr(kvikio, "__version__", "?"), "file": kvikio.__file__},
           "rows": []}
    path = spec["file"]
    file_size = os.path.getsize(path)
    for memory in spec["memory"]:
        frameworks = spec["frameworks"] if memory == "device" else ["numpy"]
        for fw in frameworks:
            mem = Memory(memory, fw)
            with kvikio.CuFile(path, "r") as f:
                for case in spec["cases"]:
                    sizes = case_sizes(case, file_size)
                    r = time_case(f, mem, sizes, spec["repetitions"])
                    out["rows"].append({"memory": memory, "framework": fw, "case": case, **r})
            r = time_small_reads(path, file_size, mem, spec["threads"], spec["seconds"])
            out["rows"].append({"memory": memory, "framework": fw,
                                "case": f"{spec['threads']}x4KiB read()", **r})
            sizes = checkpoint_mix(min(spec["seed_bytes"], file_size)) or [spec["seed_bytes"]]
            r = time_seed_checkpoint(spec["dir"], mem, sizes, spec["repetitions"])
            out["rows"].append({"memory": memory, "framework": fw, "case": "seed checkpoint", **r})
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", default=None, help="where the file goes (default: a temporary dir here)")
    p.add_argument("--size", default="4GiB", help="the file's size: the largest case's bytes")
    p.add_argument("--memory", nargs="+", default=["host", "device"], choices=["host", "device"])
    p.add_argument("--framework", nargs="+", default=["cupy", "torch"], choices=["cupy", "torch"])
    p.add_argument("--cases", nargs="+",
                   default=["1x1GiB", "8x32MiB", "128x32MiB", "128x8MiB", "512x1MiB",
                            "4096x256KiB", "ckpt"])
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--repetitions", type=int, default=3)
    p.add_argument("--seconds", type=float, default=2.0, help="duration of the 4 KiB read() row")
    p.add_argument("--seed-bytes", default="1GiB", help="size of the seed-pattern checkpoint")
    p.add_argument("--compare-upstream", metavar="PYTHON", default=None)
    p.add_argument("--json", action="store_true")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker is not None:  # run under another interpreter: one JSON answer
        print(json.dumps(run_all(json.loads(args.worker))))
        return 0

    with tempfile.TemporaryDirectory(dir=args.dir or os.getcwd(), prefix="many-io-") as d:
        path = os.path.join(d, "data.bin")
        make_file(path, parse_size(args.size))
        spec = {"file": path, "dir": d, "memory": args.memory, "frameworks": args.framework,
                "cases": args.cases, "threads": args.threads, "repetitions": args.repetitions,
                "seconds": args.seconds, "seed_bytes": parse_size(args.seed_bytes)}
        answers = {"ours": run_all(spec)}
        if args.compare_upstream:
            r = subprocess.run([args.compare_upstream, os.path.abspath(__file__),
                                "--worker", json.dumps(spec)],
                               capture_output=True, text=True, cwd="/tmp")
            if r.returncode != 0:
                answers["upstream"] = {"error": r.stderr[-2000:]}
            else:
                answers["upstream"] = json.loads(r.stdout.strip().splitlines()[-1])
    if args.json:
        print(json.dumps(answers, indent=1))
        return 0
    print_table(answers)
    return 0


def rate(row: dict) -> str:
    if "reads_per_s" in row:
        return f"{row['reads_per_s'] / 1e3:.1f} K/s"
    if "save_s" in row:
        return f"save {row['bytes'] / row['save_s'] / 1e9:.2f} load {row['bytes'] / row['load_s'] / 1e9:.2f} GB/s"
    return f"{row['bytes'] / row['many_s'] / 1e9:.2f} GB/s ({row['many_s'] and row['one_s'] / row['many_s']:.2f}x one pread)"


def print_table(answers: dict) -> None:
    ours = answers["ours"]
    up = answers.get("upstream")
    print(f"ours: kvikio {ours['kvikio']['version']} ({ours['kvikio']['file']})")
    if up and "error" in up:
        print(f"upstream failed: {up['error']}")
        up = None
    elif up:
        print(f"upstream: kvikio {up['kvikio']['version']} ({up['kvikio']['file']})")
    for i, row in enumerate(ours["rows"]):
        line = f"{row['memory']:6} {row['framework']:5} {row['case']:18} ours {rate(row)}"
        if up:
            u = up["rows"][i]
            line += f" | upstream {rate(u)}"
            if "reads_per_s" in row:
                line += f" | ours/upstream {row['reads_per_s'] / u['reads_per_s']:.2f}x"
            elif "save_s" in row:
                line += (f" | ours/upstream save {u['save_s'] / row['save_s']:.2f}x"
                         f" load {u['load_s'] / row['load_s']:.2f}x")
            else:
                line += f" | ours/upstream {u['many_s'] / row['many_s']:.2f}x"
        print(line)


if __name__ == "__main__":
    sys.exit(main())
