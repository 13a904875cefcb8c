"""``python -m kvikio.benchmarks.checkpoint``: loading and saving a sharded safetensors
checkpoint with :mod:`kvikio.safetensors`, next to the loaders people use and to the
machine's own limits, measured in the same run.

It makes a checkpoint of ``--size`` bytes in ``--shards`` shards with an
``model.safetensors.index.json`` (per layer: two large matrices and small norm and bias
vectors between them; bf16 where torch is importable, else f16), then, each in its own
process (so that the peak host RSS is its own):

- ``kvikio``: ``kvikio.safetensors.{torch,cupy,numpy}.load_file(index, device)``;
- ``safetensors``: ``safetensors.torch.load_file(shard, device)`` per shard (numpy on a CPU
  without torch); ``fastsafetensors``, ``runai-model-streamer``, ``instanttensor`` where
  importable ("not installed" otherwise).

Beside them: the page-cache-to-device limit (a plain parallel pread loop of every shard into
pinned host memory, and a separate host-to-device copy of it: the limit of a pipeline that
overlaps the two is bytes / max(both times)); with ``--cold`` each load runs after the
shards' pages are dropped (``drop_file_page_cache``, no root needed), against a cold
O_DIRECT parallel pread of the same bytes. ``save_file`` of the loaded tensors is timed
against a plain parallel pwrite of the same bytes (after a device-to-host copy on a GPU).
Every loader's tensors are counted; ours are compared bit for bit with safetensors' own
load. Reports bytes, GB/s, ratio to the limit, peak host RSS and pinned bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import mmap
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

import numpy as np

from kvikio.benchmarks.single_node_io import format_bytes, parse_bytes, positive

PAGE = 4096
LOADERS = ("kvikio", "safetensors", "fastsafetensors", "runai-model-streamer", "instanttensor")


def progress(line: str) -> None:
    print(f"[checkpoint] {line}", file=sys.stderr, flush=True)


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m kvikio.benchmarks.checkpoint",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=lambda t: parse_bytes("--size", t), default=1 << 30,
                   help="checkpoint bytes (default 1 GiB)")
    p.add_argument("--shards", type=positive("--shards"), default=2)
    p.add_argument("--hidden", type=positive("--hidden"), default=4096,
                   help="hidden size: matrices are hidden x 4*hidden (shrunk for small --size)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    p.add_argument("--dir", default=None, help="where the checkpoint goes (default a temp dir)")
    p.add_argument("--threads", type=positive("--threads"), default=os.cpu_count() or 1)
    p.add_argument("--task-size", type=lambda t: parse_bytes("--task-size", t), default=16 << 20)
    p.add_argument("--repetitions", type=positive("--repetitions"), default=3)
    p.add_argument("--loaders", default=",".join(LOADERS),
                   help=f"comma-separated, of {', '.join(LOADERS)}")
    p.add_argument("--cold", action="store_true", help="also time loads with a cold page cache")
    p.add_argument("--no-save", action="store_true", help="skip the save_file measurement")
    p.add_argument("--no-verify", action="store_true", help="skip the bit-exact comparison")
    p.add_argument("--keep", action="store_true", help="keep the checkpoint")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.loaders = [x.strip() for x in args.loaders.split(",") if x.strip()]
    for x in args.loaders:
        if x not in LOADERS:
            p.error(f"unknown loader {x!r} (one of {', '.join(LOADERS)})")
    return args


def _torch():
    try:
        import torch

        return torch
    except ImportError:
        return None


def _is_cuda(device: str) -> bool:
    return device != "cpu"


# -- the checkpoint --------------------------------------------------------------------


def make_checkpoint(root: str, size: int, shards: int, hidden: int, code: str) -> Dict[str, Any]:
    """Shards of layers (w_in hidden x 4h, norm h, w_out 4h x h, bias h), random bytes,
    written with safetensors' own writer where it is installed (else ours), and the index."""
    from kvikio.safetensors._format import SaveEntry, layout

    itemsize = 2
    per_layer = lambda h: (8 * h * h + 2 * h) * itemsize  # noqa: E731
    layers_min = 8 * shards
    while hidden > 16 and per_layer(hidden) * layers_min > size:
        hidden //= 2
    layers = max(shards, size // per_layer(hidden))
    rng = np.random.default_rng(29)
    weight_map: Dict[str, str] = {}
    files = []
    per_shard = math.ceil(layers / shards)
    for s in range(shards):
        name = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        entries = []
        for i in range(s * per_shard, min(layers, (s + 1) * per_shard)):
            for t, shape in ((f"model.layers.{i}.mlp.up.weight", (hidden, 4 * hidden)),
                             (f"model.layers.{i}.norm.weight", (hidden,)),
                             (f"model.layers.{i}.mlp.down.weight", (4 * hidden, hidden)),
                             (f"model.layers.{i}.mlp.down.bias", (hidden,))):
                entries.append(SaveEntry(t, code, shape, math.prod(shape) * itemsize))
                weight_map[t] = name
        prefix, placed = layout(entries, {"format": "pt"})
        path = os.path.join(root, name)
        with open(path, "wb") as f:
            f.write(prefix)
            for e, _ in placed:
                # Random 16-bit words, NaN patterns included: the comparison is of bits.
                f.write(rng.integers(0, 256, size=e.nbytes, dtype=np.uint8).tobytes())
        files.append(path)
    index = os.path.join(root, "model.safetensors.index.json")
    total = sum(os.path.getsize(f) for f in files)
    with open(index, "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f)
    return {"index": index, "files": files, "bytes": total, "tensors": len(weight_map),
            "hidden": hidden, "layers": layers}


# -- one loader in its own process ------------------------------------------------------


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _sync(device: str) -> None:
    if not _is_cuda(device):
        return
    torch = _torch()
    if torch is not None:
        torch.cuda.synchronize()
    else:
        import cupy

        cupy.cuda.runtime.deviceSynchronize()


def _load(loader: str, ck: Dict[str, Any], device: str) -> Dict[str, Any]:
    torch = _torch()
    files, index = ck["files"], ck["index"]
    if loader == "kvikio":
        if torch is not None:
            import kvikio.safetensors.torch as m
        elif _is_cuda(device):
            import kvikio.safetensors.cupy as m
        else:
            import kvikio.safetensors.numpy as m
        return m.load_file(index, device=device)
    if loader == "safetensors":
        if torch is not None:
            from safetensors.torch import load_file
            out: Dict[str, Any] = {}
            for f in files:
                out.update(load_file(f, device=device))
            return out
        if _is_cuda(device):
            raise RuntimeError("safetensors on a GPU needs torch")
        from safetensors.numpy import load_file as np_load
        out = {}
        for f in files:
            out.update(np_load(f))
        return out
    if torch is None:
        raise RuntimeError(f"{loader} needs torch")
    dev = torch.device(device)
    if loader == "fastsafetensors":
        from fastsafetensors import SafeTensorsFileLoader, SingleGroup

        fl = SafeTensorsFileLoader(SingleGroup(), dev, nogds=True)
        fl.add_filenames({0: files})
        fb = fl.copy_files_to_device()
        with open(index) as fh:
            names = list(json.load(fh)["weight_map"])
        out = {k: fb.get_tensor(k).clone() for k in names}  # clone: fb's buffers go at close
        fb.close()
        fl.close()
        return out
    if loader == "runai-model-streamer":
        from runai_model_streamer import SafetensorsStreamer

        out = {}
        with SafetensorsStreamer() as s:
            if hasattr(s, "stream_files"):
                s.stream_files(files)
                for name, t in s.get_tensors():
                    out[name] = t.to(dev)
            else:  # older releases: one file at a time
                for f in files:
                    s.stream_file(f)
                    for name, t in s.get_tensors():
                        out[name] = t.to(dev)
        return out
    if loader == "instanttensor":
        from instanttensor import safe_open

        # Its safe_open-style interface, over the list of shards.
        out = {}
        with safe_open(files, framework="pt", device=str(dev)) as f:
            for name in f.keys():
                out[name] = f.get_tensor(name)
        return out
    raise ValueError(loader)


def worker(spec: Dict[str, Any]) -> Dict[str, Any]:
    import kvikio
    import kvikio.defaults

    kvikio.defaults.set({"num_threads": spec["threads"], "task_size": spec["task_size"]})
    if spec["cold"] and spec["loader"] == "kvikio":
        # What a user loading from cold storage sets: reads bypass the page cache.
        kvikio.defaults.set("auto_direct_io_read", True)
    ck, device = spec["checkpoint"], spec["device"]
    if _is_cuda(device):
        torch = _torch()
        if torch is not None:
            torch.empty(1, device=device)  # the CUDA context, outside the timing
    base = _rss()
    seconds = []
    count = nbytes = 0
    for _ in range(spec["repetitions"]):
        if spec["cold"]:
            for f in ck["files"]:
                kvikio.drop_file_page_cache(f)
        t0 = time.perf_counter()
        out = _load(spec["loader"], ck, device)
        _sync(device)
        seconds.append(time.perf_counter() - t0)
        count = len(out)
        nbytes = sum(_nbytes(t) for t in out.values())
        del out
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"seconds": statistics.median(seconds), "tensors": count, "tensor_bytes": nbytes,
            "peak_rss_over_start": max(0, peak - base)}


def _nbytes(t: Any) -> int:
    if hasattr(t, "nbytes"):
        return int(t.nbytes)
    return int(t.numel() * t.element_size())


def run_loader(args: argparse.Namespace, loader: str, ck: Dict[str, Any], cold: bool) -> Dict[str, Any]:
    modules = {"safetensors": "safetensors", "fastsafetensors": "fastsafetensors",
               "runai-model-streamer": "runai_model_streamer", "instanttensor": "instanttensor"}
    if loader in modules:
        import importlib.util

        if importlib.util.find_spec(modules[loader]) is None:
            return {"error": "not installed"}
    spec = {"loader": loader, "checkpoint": ck, "device": args.device, "threads": args.threads,
            "task_size": args.task_size, "repetitions": args.repetitions, "cold": cold}
    r = subprocess.run([sys.executable, "-m", "kvikio.benchmarks.checkpoint", "--worker",
                        json.dumps(spec)], capture_output=True, text=True)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["failed"])[-1]
        return {"error": last[:200]}
    return json.loads(r.stdout.strip().splitlines()[-1])


# -- the limits -------------------------------------------------------------------------


def _aligned_host(n: int, device: str):
    """A page-aligned host buffer: pinned (torch or cupy) on a GPU, an anonymous map else."""
    if _is_cuda(device):
        torch = _torch()
        if torch is not None:
            t = torch.empty(n, dtype=torch.uint8, pin_memory=True)
            return t.numpy(), t
        import cupy

        mem = cupy.cuda.alloc_pinned_memory(n)
        return np.frombuffer(mem, dtype=np.uint8, count=n), mem
    m = mmap.mmap(-1, max(n, PAGE))
    return np.frombuffer(m, dtype=np.uint8, count=n), m


def _device_buffer(n: int, device: str):
    torch = _torch()
    if torch is not None:
        return torch.empty(n, dtype=torch.uint8, device=device)
    import cupy

    return cupy.empty(n, dtype=cupy.uint8)


def _h2d_seconds(host: np.ndarray, keep: Any, dev: Any, device: str) -> float:
    torch = _torch()
    t0 = time.perf_counter()
    if torch is not None:
        dev.copy_(keep if isinstance(keep, torch.Tensor) else torch.from_numpy(host),
                  non_blocking=True)
    else:
        dev.set(host)
    _sync(device)
    return time.perf_counter() - t0


def read_limit(args: argparse.Namespace, ck: Dict[str, Any], direct: bool) -> Dict[str, Any]:
    """Seconds of a plain parallel pread of every shard into (pinned) host memory, and of the
    host-to-device copy; the limit is bytes / max of the two."""
    from kvikio import _bench

    sizes = [os.path.getsize(f) for f in ck["files"]]
    if direct:
        sizes = [s - s % PAGE for s in sizes]
    host, keep = _aligned_host(max(sizes), args.device)
    dev = _device_buffer(max(sizes), args.device) if _is_cuda(args.device) else None
    runs_read, runs_copy = [], []
    for _ in range(args.repetitions):
        if direct:
            import kvikio

            for f in ck["files"]:
                kvikio.drop_file_page_cache(f)
        t_read = t_copy = 0.0
        for f, n in zip(ck["files"], sizes):
            fd = os.open(f, os.O_RDONLY | (os.O_DIRECT if direct else 0))
            try:
                t_read += _bench.plain_parallel_io(False, fd, host, n, args.threads, args.task_size)
            finally:
                os.close(fd)
            if dev is not None:
                t_copy += _h2d_seconds(host[:n], keep, dev, args.device)
        runs_read.append(t_read)
        runs_copy.append(t_copy)
    read, copy = statistics.median(runs_read), statistics.median(runs_copy)
    return {"bytes": sum(sizes), "seconds": max(read, copy), "read_seconds": read,
            "copy_seconds": copy, "pinned_bytes": max(sizes) if dev is not None else 0}


def write_limit(args: argparse.Namespace, ck: Dict[str, Any], out_dir: str) -> Dict[str, Any]:
    from kvikio import _bench

    sizes = [os.path.getsize(f) for f in ck["files"]]
    host, keep = _aligned_host(max(sizes), args.device)
    dev = _device_buffer(max(sizes), args.device) if _is_cuda(args.device) else None
    runs = []
    for _ in range(args.repetitions):
        t_write = t_copy = 0.0
        for i, n in enumerate(sizes):
            if dev is not None:
                t0 = time.perf_counter()
                if _torch() is not None:
                    keep[:n].copy_(dev[:n])
                else:
                    dev[:n].get(out=host[:n])
                _sync(args.device)
                t_copy += time.perf_counter() - t0
            path = os.path.join(out_dir, f"limit-{i}.bin")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                t_write += _bench.plain_parallel_io(True, fd, host, n, args.threads, args.task_size)
            finally:
                os.close(fd)
            os.remove(path)
        runs.append(max(t_write, t_copy))
    return {"bytes": sum(sizes), "seconds": statistics.median(runs)}


# -- save_file and verification ------------------------------------------------------------


def _framework_module(device: str):
    if _torch() is not None:
        import kvikio.safetensors.torch as m
    elif _is_cuda(device):
        import kvikio.safetensors.cupy as m
    else:
        import kvikio.safetensors.numpy as m
    return m


def measure_save(args: argparse.Namespace, ck: Dict[str, Any], out_dir: str) -> Dict[str, Any]:
    """save_file of each shard's tensors (loaded with ours, on the device); the files must be
    byte-identical to the shards (written by safetensors' writer, or ours without it)."""
    from kvikio.safetensors import safe_open

    m = _framework_module(args.device)
    framework = "pt" if _torch() is not None else ("cupy" if _is_cuda(args.device) else "numpy")
    shards = []
    for f in ck["files"]:
        with safe_open(f, framework, args.device) as s:
            shards.append((s.get_tensors(), s.metadata()))
    runs = []
    identical = True
    for rep in range(args.repetitions):
        t = 0.0
        for i, (tensors, meta) in enumerate(shards):
            path = os.path.join(out_dir, f"saved-{i}.safetensors")
            t0 = time.perf_counter()
            m.save_file(tensors, path, metadata=meta)
            t += time.perf_counter() - t0
            if rep == 0:
                identical &= _digest(path) == _digest(ck["files"][i])
            os.remove(path)
        runs.append(t)
    return {"bytes": ck["bytes"], "seconds": statistics.median(runs), "identical": identical}


def _digest(path: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(16 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify(args: argparse.Namespace, ck: Dict[str, Any]) -> str:
    """Ours, on the device, against safetensors' own load on the CPU, bit for bit."""
    import importlib.util

    if importlib.util.find_spec("safetensors") is None:
        return "safetensors not installed"
    m = _framework_module(args.device)
    ours = m.load_file(ck["index"], device=args.device)
    torch = _torch()
    for f in ck["files"]:
        if torch is not None:
            from safetensors.torch import load_file as ref_load

            ref = ref_load(f)
            for k, t in ref.items():
                if not torch.equal(ours[k].cpu().view(torch.uint8), t.view(torch.uint8)):
                    return f"MISMATCH in {k}"
        else:
            from safetensors.numpy import load_file as ref_np

            for k, t in ref_np(f).items():
                got = ours[k]
                got = got.get() if hasattr(got, "get") else got
                if got.tobytes() != t.tobytes() or got.shape != t.shape:
                    return f"MISMATCH in {k}"
    return f"bit-exact ({len(ours)} tensors)"


# -- main -----------------------------------------------------------------------------


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    if _is_cuda(args.device) and _torch() is None:
        import importlib.util

        if importlib.util.find_spec("cupy") is None:
            print("checkpoint: --device cuda needs torch or CuPy", file=sys.stderr)
            return 2
    import kvikio.defaults

    kvikio.defaults.set({"num_threads": args.threads, "task_size": args.task_size})
    code = "BF16" if _torch() is not None else "F16"
    root = args.dir or tempfile.mkdtemp(prefix="kvikio-checkpoint-")
    os.makedirs(root, exist_ok=True)
    result: Dict[str, Any] = {"device": args.device, "threads": args.threads,
                              "task_size": args.task_size, "repetitions": args.repetitions}
    try:
        progress(f"writing a {format_bytes(args.size)} {code} checkpoint in {args.shards} shards "
                 f"to {root}")
        ck = make_checkpoint(root, args.size, args.shards, args.hidden, code)
        result["checkpoint"] = {k: ck[k] for k in ("bytes", "tensors", "hidden", "layers")}
        result["checkpoint"]["shards"] = len(ck["files"])
        result["checkpoint"]["dtype"] = code
        for f in ck["files"]:  # the page cache warm for the hot runs
            with open(f, "rb") as fh:
                while fh.read(64 << 20):
                    pass
        progress("page-cache-to-device limit")
        hot_limit = read_limit(args, ck, direct=False)
        result["limit_hot"] = hot_limit
        modes = [("hot", hot_limit)]
        if args.cold:
            progress("cold Direct IO limit")
            try:
                cold_limit = read_limit(args, ck, direct=True)
                result["limit_cold"] = cold_limit
                modes.append(("cold", cold_limit))
            except OSError as e:
                result["limit_cold"] = {"error": f"O_DIRECT read failed: {e}"}
        result["loads"] = {}
        for mode, lim in modes:
            for loader in args.loaders:
                progress(f"{mode}: {loader}")
                r = run_loader(args, loader, ck, cold=(mode == "cold"))
                if "seconds" in r:
                    r["gbps"] = ck["bytes"] / r["seconds"] / 1e9
                    r["ratio_to_limit"] = r["gbps"] / (lim["bytes"] / lim["seconds"] / 1e9)
                    if loader == "kvikio":
                        r["pinned_bytes_bound"] = (
                            kvikio.defaults.get("bounce_buffer_size") * args.threads
                            if _is_cuda(args.device) else 0)
                result["loads"].setdefault(mode, {})[loader] = r
        if not args.no_save:
            progress("save_file and the write limit")
            out_dir = tempfile.mkdtemp(prefix="saved-", dir=root)
            save = measure_save(args, ck, out_dir)
            wl = write_limit(args, ck, out_dir)
            save["gbps"] = save["bytes"] / save["seconds"] / 1e9
            wl["gbps"] = wl["bytes"] / wl["seconds"] / 1e9
            save["ratio_to_limit"] = save["gbps"] / wl["gbps"]
            result["save"], result["limit_write"] = save, wl
        if not args.no_verify:
            progress("verifying ours against safetensors")
            result["verify"] = verify(args, ck)
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    for lim in ("limit_hot", "limit_cold"):
        if lim in result and "seconds" in result[lim]:
            result[lim]["gbps"] = result[lim]["bytes"] / result[lim]["seconds"] / 1e9
    if args.json:
        print(json.dumps(result, default=str))
    else:
        print_table(result)
    return 0 if not str(result.get("verify", "")).startswith("MISMATCH") else 1


def print_table(r: Dict[str, Any]) -> None:
    ck = r["checkpoint"]
    print(f"checkpoint: {format_bytes(ck['bytes'])} {ck['dtype']}, {ck['tensors']} tensors, "
          f"{ck['shards']} shards; device {r['device']}, {r['threads']} threads")
    print(f"{'mode':<5} {'loader':<22} {'GB/s':>8} {'x limit':>8} {'kvikio x':>9} "
          f"{'peak RSS':>10} {'tensors':>8}")
    for mode, loads in r.get("loads", {}).items():
        lim = r[f"limit_{mode}"]
        ours = loads.get("kvikio", {}).get("gbps")
        print(f"{mode:<5} {'limit':<22} {lim['gbps']:8.2f} {1:8.2f}")
        for loader, x in loads.items():
            if "error" in x:
                print(f"{mode:<5} {loader:<22} {x['error']}")
                continue
            # kvikio x: how many times this loader's throughput ours is.
            vs = f"{ours / x['gbps']:9.2f}" if ours else f"{'':>9}"
            print(f"{mode:<5} {loader:<22} {x['gbps']:8.2f} {x['ratio_to_limit']:8.2f} {vs} "
                  f"{format_bytes(x['peak_rss_over_start']):>10} {x['tensors']:>8}")
    if "save" in r:
        s, w = r["save"], r["limit_write"]
        print(f"save  {'kvikio save_file':<22} {s['gbps']:8.2f} {s['ratio_to_limit']:8.2f}   "
              f"byte-identical: {s['identical']}")
        print(f"save  {'limit (plain pwrite)':<22} {w['gbps']:8.2f} {1:8.2f}")
    if "verify" in r:
        print(f"verify: {r['verify']}")
    print("(limit = plain parallel pread into pinned memory and a host-to-device copy, "
          "bytes / max of the two; cold = O_DIRECT; median of the repetitions)")


if __name__ == "__main__":
    sys.exit(main())
