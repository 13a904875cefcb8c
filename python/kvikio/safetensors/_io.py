"""Running the plans: opening local files or remote objects, reading headers, issuing the
coalesced reads all at once into one allocation each, writing files."""

from __future__ import annotations

import os
import urllib.parse
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

import kvikio
from kvikio.safetensors._format import (
    Header,
    ReadRange,
    SaveEntry,
    TensorInfo,
    header_length,
    layout,
    parse_header,
    plan_reads,
)
from kvikio.safetensors._frameworks import Framework
from kvikio.safetensors.errors import HeaderError

# The first read of a file takes this much, so that one request (one round trip to a remote
# server) usually brings the whole header.
_FIRST_READ = 1 << 20
# With a progress hook, ranges are read in pieces of this size so that progress moves.
PROGRESS_PIECE = 64 << 20

_REMOTE_SCHEMES = ("http", "https", "s3", "webhdfs", "webhdfss")


def is_url(path: Any) -> bool:
    return isinstance(path, str) and urllib.parse.urlsplit(path).scheme.lower() in _REMOTE_SCHEMES


def name_of(path: Any) -> str:
    if is_url(path):
        return kvikio._lib.redact_url(path) if hasattr(kvikio._lib, "redact_url") else path
    return os.fspath(path)


class Source:
    """A local file (:class:`kvikio.CuFile`) or a remote object (:class:`kvikio.RemoteFile`)
    read with ``pread`` futures."""

    def __init__(self, path: Any) -> None:
        self.name = name_of(path)
        if is_url(path):
            self.file: Any = kvikio.RemoteFile.open(path)
        else:
            self.file = kvikio.CuFile(os.fspath(path), "r")
        self.size = self.file.nbytes()

    def pread(self, buf: Any, size: int, offset: int) -> Any:
        return self.file.pread(buf, size, offset)

    def pread_batch(self, requests: List[Tuple[Any, int, int]]) -> Any:
        return self.file.pread_batch(requests)

    def close(self) -> None:
        self.file.close()


def read_header(source: Source) -> Header:
    """Read and parse ``source``'s header: one read, two when it is over 1 MiB."""
    first = min(source.size, _FIRST_READ)
    raw = bytearray(first)
    if first:
        source.pread(raw, first, 0).get()
    n = header_length(bytes(raw[:8]), source.size, source.name)
    if 8 + n > first:
        rest = bytearray(8 + n - first)
        source.pread(rest, len(rest), first).get()
        raw += rest
    return parse_header(bytes(raw), source.size, source.name)


class Progress:
    """Calls a ``callback(done_bytes, total_bytes)`` or a tqdm-like object's ``update(n)``."""

    def __init__(self, hook: Any, total: int) -> None:
        self.hook, self.total, self.done = hook, total, 0
        if hook is True:
            from tqdm.auto import tqdm

            self.hook = tqdm(total=total, unit="B", unit_scale=True, desc="kvikio.safetensors")
            self._owned = True
        else:
            self._owned = False

    def add(self, n: int) -> None:
        self.done += n
        if hasattr(self.hook, "update"):
            self.hook.update(n)
        else:
            self.hook(self.done, self.total)

    def close(self) -> None:
        if self._owned:
            self.hook.close()


class PendingReads:
    """Reads issued (all at once) and not yet waited for; ``wait()`` checks every byte count
    and reports progress as the pieces finish."""

    def __init__(self) -> None:
        self.futures: List[Tuple[Any, int, Source, int]] = []
        self.keep: List[Any] = []

    @property
    def total(self) -> int:
        return sum(n for _, n, _, _ in self.futures)

    def issue(self, source: Source, buf: Any, size: int, offset: int, piece: Optional[int]) -> None:
        if size == 0:
            return
        step = size if piece is None else piece
        for start in range(0, size, step):
            n = min(step, size - start)
            target = buf if (start == 0 and n == size) else buf[start : start + n]
            self.keep.append(target)
            self.futures.append((source.pread(target, n, offset + start), n, source, offset + start))

    def issue_batch(self, source: Source, requests: List[Tuple[Any, int, int]]) -> None:
        """Many small reads as one batch (one future; ranges near each other may share a
        request on the engine)."""
        requests = [r for r in requests if r[1]]
        if not requests:
            return
        total = sum(n for _, n, _ in requests)
        self.keep.append(requests)
        self.futures.append((source.pread_batch(requests), total, source, requests[0][2]))

    def wait(self, progress: Any = None) -> None:
        hook = Progress(progress, self.total) if progress is not None else None
        error: Optional[BaseException] = None
        try:
            for future, n, source, offset in self.futures:
                # Every future is waited for, even after an error, so that no read still
                # writes into a buffer that is handed back or freed.
                try:
                    got = future.get()
                except BaseException as e:  # noqa: BLE001 (re-raised below)
                    error = error or e
                    continue
                if got != n and error is None:
                    error = HeaderError(
                        f"{source.name}: short read: {got} of {n} bytes at offset {offset} "
                        "(the file changed while it was read?)", filename=source.name)
                elif hook is not None:
                    hook.add(n)
        finally:
            if hook is not None:
                hook.close()
            self.futures.clear()
            self.keep.clear()
        if error is not None:
            raise error


class _Staged:
    """Small reads bound for device memory: read together (one batch) into one host buffer,
    then copied to the device in one copy, each range a slice of that one allocation."""

    def __init__(self, fw: Framework, ranges: List[ReadRange]) -> None:
        self.fw, self.slots, offset = fw, {}, 0
        for r in ranges:
            offset += -offset % _STAGE_ALIGN  # each range as aligned as its own allocation
            self.slots[id(r)] = offset
            offset += r.size
        self.host = np.empty(offset, dtype=np.uint8)
        self.device: Any = None

    def requests(self, ranges: List[ReadRange]) -> List[Tuple[Any, int, int]]:
        return [(self.host[self.slots[id(r)] : self.slots[id(r)] + r.size], r.size, r.file_offset)
                for r in ranges]

    def buffer(self, r: ReadRange) -> Any:
        if self.device is None:  # after the reads: one host-to-device copy
            self.device = self.fw.from_host(self.host)
        start = self.slots[id(r)]
        return self.device[start : start + r.size]


# Device-bound reads up to this size are staged through the host together (one batch, one
# copy, one allocation) instead of one small device read and allocation each.
STAGE_BELOW = 1 << 20
_STAGE_ALIGN = 256


def issue_tensors(source: Source, header: Header, infos: Sequence[TensorInfo], fw: Framework,
                  pending: PendingReads, *, separate: bool, max_gap: int,
                  piece: Optional[int]) -> List[Tuple[ReadRange, Any]]:
    """Plan the reads of ``infos`` and issue them: one allocation per range (large ranges
    read straight into it), small device-bound ranges staged together (:class:`_Staged`).

    Returns:
        ``(range, buffer or staging)`` pairs for :func:`views`, valid once ``pending`` is
        waited for.
    """
    if separate:
        ranges = [r for t in infos for r in plan_reads([t], header.data_start)]
    else:
        ranges = plan_reads(infos, header.data_start, max_gap=max_gap)
    small = [r for r in ranges if 0 < r.size <= STAGE_BELOW] if fw.is_device and not separate else []
    staged = _Staged(fw, small) if len(small) > 1 else None
    out: List[Tuple[ReadRange, Any]] = []
    if staged is not None:
        pending.issue_batch(source, staged.requests(small))
    staged_ids = {id(r) for r in small} if staged is not None else set()
    for r in ranges:
        if id(r) in staged_ids:
            out.append((r, staged))
            continue
        buf = fw.empty(r.size)
        pending.issue(source, buf, r.size, r.file_offset, piece)
        out.append((r, buf))
    return out


def views(source_name: str, planned: List[Tuple[ReadRange, Any]], fw: Framework) -> Dict[str, Any]:
    """The tensors of the planned ranges, as views of their buffers."""
    result: Dict[str, Any] = {}
    for r, buf in planned:
        if isinstance(buf, _Staged):
            buf = buf.buffer(r)
        for info, offset in r.members:
            result[info.name] = fw.view(buf, offset, info, source_name)
    return result


def write_file(tensors: Mapping[str, Any], filename: Any, metadata: Optional[Mapping[str, str]],
               fw: Framework) -> None:
    """Write ``tensors`` as a safetensors file, each tensor's bytes with one ``pwrite`` from
    where they are (host or device), all issued at once; to S3 through a multipart upload."""
    if not isinstance(tensors, Mapping):
        raise ValueError(f"expected a dict of tensors, got {type(tensors)}")
    name = name_of(filename)
    fw.check_shared(dict(tensors))
    specs = {}
    for key, tensor in tensors.items():
        if not isinstance(key, str):
            raise ValueError(f"{name}: tensor names must be strings, got {key!r}")
        specs[key] = fw.save_spec(tensor, key)
    entries = [SaveEntry(k, code, shape, nbytes) for k, (code, shape, _, nbytes) in specs.items()]
    prefix, placed = layout(entries, metadata, name)
    total = len(prefix) + sum(e.nbytes for e in entries)
    header = np.frombuffer(prefix, dtype=np.uint8)
    remote = is_url(filename)
    f: Any = _open_for_writing(filename, total) if remote else kvikio.CuFile(os.fspath(filename), "w")
    ok = False
    try:
        if remote:
            # In file order (WebHDFS appends; S3 parts upload in parallel behind write()).
            f.write(header, len(prefix))
            for e, _ in placed:
                if e.nbytes:
                    f.write(specs[e.name][2], e.nbytes)
            futures = []
        else:
            futures = [f.pwrite(header, len(prefix), 0)]
            for e, offset in placed:
                if e.nbytes:
                    futures.append(f.pwrite(specs[e.name][2], e.nbytes, offset))
        first_error: Optional[BaseException] = None
        for fut in futures:
            try:
                fut.get()
            except BaseException as err:  # noqa: BLE001 (re-raised below)
                first_error = first_error or err
        if first_error is not None:
            raise first_error
        ok = True
    finally:
        if not ok and hasattr(f, "abort"):
            f.abort()
        else:
            f.close()


def _open_for_writing(url: str, nbytes: int) -> Any:
    """A remote file opened for writing ``nbytes``: S3 (multipart upload) or WebHDFS."""
    kind = kvikio.infer_remote_endpoint_type(url)
    name = name_of(url)
    if kind == kvikio.RemoteEndpointType.WEBHDFS:
        return kvikio.RemoteFile.open_webhdfs(url, nbytes=nbytes, mode="w")
    if kind in (kvikio.RemoteEndpointType.S3, kvikio.RemoteEndpointType.S3_PUBLIC):
        return kvikio.RemoteFile.open_s3_url(url, nbytes=nbytes, mode="w")
    raise ValueError(f"{name}: save_file writes local files, s3:// (or S3 http) URLs and WebHDFS "
                     f"URLs, not a {kind.name} URL")


def serialize(tensors: Mapping[str, Any], metadata: Optional[Mapping[str, str]],
              fw: Framework) -> bytes:
    """The bytes of a safetensors file (``save``)."""
    if not isinstance(tensors, Mapping):
        raise ValueError(f"expected a dict of tensors, got {type(tensors)}")
    fw.check_shared(dict(tensors))
    specs = {k: fw.save_spec(t, k) for k, t in tensors.items()}
    entries = [SaveEntry(k, code, shape, nbytes) for k, (code, shape, _, nbytes) in specs.items()]
    prefix, placed = layout(entries, metadata)
    parts = [prefix] + [fw.to_host_bytes(specs[e.name][2]) for e, _ in placed]
    return b"".join(parts)


def deserialize(data: bytes, fw: Framework) -> Dict[str, Any]:
    """The tensors of a safetensors file's bytes (``load``), on ``fw``'s device."""
    raw = memoryview(data).cast("B")
    n = header_length(bytes(raw[:8]), len(raw), "<bytes>")
    header = parse_header(bytes(raw[: 8 + n]), len(raw), "<bytes>")
    host = np.frombuffer(raw, dtype=np.uint8)[header.data_start :]
    buf = fw.from_host(host)
    return {t.name: fw.view(buf, t.begin, t, "<bytes>") for t in header.by_offset()}


__all__ = ["Source", "read_header", "PendingReads", "issue_tensors", "views", "write_file",
           "serialize", "deserialize", "is_url"]
