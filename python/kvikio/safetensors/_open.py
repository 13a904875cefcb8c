"""``safe_open``: a safetensors file, or a sharded checkpoint's index, opened for reading."""

from __future__ import annotations

import json
import os
import posixpath
import urllib.parse
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

import numpy as np

from kvikio.remote_file import RemoteError
from kvikio.safetensors._format import Header, TensorInfo
from kvikio.safetensors._frameworks import Framework, framework_for
from kvikio.safetensors._io import (
    PROGRESS_PIECE,
    PendingReads,
    Source,
    is_url,
    issue_tensors,
    name_of,
    read_header,
    views,
)
from kvikio.safetensors._slice import plan_slice
from kvikio.safetensors.errors import (
    IndexFileError,
    MissingShardError,
    TensorNotFoundError,
)

# Above this many runs, or under this many bytes a run, a slice reads the span that holds
# its runs and gathers on the host instead of one request per run.
_MAX_RUNS = 1 << 16
_MIN_RUN = 512

Selection = Union[None, Iterable[str], Callable[[str], bool]]
# safetensors' backends, accepted so that calls written for it run unchanged.
_BACKENDS = ("kvikio", "mmap", "pread")


def is_index(path: Any) -> bool:
    text = path if isinstance(path, str) else os.fspath(path)
    return text.endswith(".index.json")


def _shard_path(index: Any, shard: str) -> Any:
    if is_url(index):
        parts = urllib.parse.urlsplit(index)
        return urllib.parse.urlunsplit(parts._replace(path=posixpath.join(
            posixpath.dirname(parts.path), shard)))
    return os.path.join(os.path.dirname(os.fspath(index)), shard)


def _read_index(path: Any) -> Dict[str, Any]:
    name = name_of(path)
    try:
        if is_url(path):
            src = Source(path)
            try:
                raw = bytearray(src.size)
                if src.size:
                    src.pread(raw, src.size, 0).get()
            finally:
                src.close()
            text = bytes(raw).decode("utf-8")
        else:
            with open(os.fspath(path), "rb") as f:
                text = f.read().decode("utf-8")
        doc = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise IndexFileError(f"{name}: not a safetensors index: {e}", filename=name) from None
    weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(weight_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
    ):
        raise IndexFileError(f"{name}: not a safetensors index: no weight_map of tensor names "
                             "to shard files", filename=name)
    for tensor, shard in weight_map.items():
        if os.path.isabs(shard) or ".." in shard.replace("\\", "/").split("/"):
            raise IndexFileError(f"{name}: tensor {tensor!r}: shard {shard!r} is outside the "
                                 "index's directory", filename=name, tensor=tensor)
    return doc


def _selected(names: Sequence[str], tensors: Selection, where: str) -> List[str]:
    if tensors is None:
        return list(names)
    if callable(tensors):
        return [n for n in names if tensors(n)]
    wanted = list(tensors)
    known = set(names)
    for n in wanted:
        if n not in known:
            raise TensorNotFoundError(f"{where}: no tensor {n!r}", filename=where, tensor=n)
    return wanted


class _File:
    """One open safetensors file: its source and its header."""

    def __init__(self, path: Any) -> None:
        self.source = Source(path)
        try:
            self.header: Header = read_header(self.source)
        except BaseException:
            self.source.close()
            raise

    def close(self) -> None:
        self.source.close()


class safe_open:  # noqa: N801 (the safetensors package's name)
    """A safetensors file, or the ``*.safetensors.index.json`` of a sharded checkpoint, open
    for reading tensors into host or device memory, as ``safetensors.safe_open`` does.

    Reads go through :class:`kvikio.CuFile` (local paths) or :class:`kvikio.RemoteFile`
    (``http(s)://``, ``s3://``, ``webhdfs://`` URLs): the header plans them, adjacent tensors
    share one read into one allocation (the tensors are views of it), and every read of a
    :meth:`get_tensors` call is issued at once.

    Args:
        filename: The file, the index (its shards are opened on first use) or a URL.
        framework: ``"pt"`` (torch), ``"numpy"``/``"np"`` or ``"cupy"``.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or an ordinal (numpy: cpu only; cupy:
            cuda only, default the current device).
        separate: Give each tensor its own allocation instead of views of a shared one.
        max_gap: Bytes between two wanted tensors that a read may span (and throw away) to
            join them into one read; 0 joins only adjacent tensors.
        backend: Accepted for ``safetensors``' ``backend="mmap"``/``"pread"``; the reads are
            kvikio's whichever is given.
        progress: Off (None, the default); a ``callback(done_bytes, total_bytes)``; an object
            with ``update(n)`` (a ``tqdm`` bar); or True for a ``tqdm`` bar. It counts the
            bytes read: the tensors' and, before each read of 1 MiB or more, under 4 KiB
            that align its start to a page.

    Raises:
        FileNotFoundError: The file does not exist (a ``RuntimeError`` too).
        kvikio.safetensors.SafetensorError: The header or the index is bad: the subclasses of
            :mod:`kvikio.safetensors.errors` say how, and the message names the file and the
            tensor.
        ValueError: An unknown framework or device.
    """

    def __init__(self, filename: Any, framework: str = "pt", device: Any = "cpu", *,
                 separate: bool = False, max_gap: int = 0, progress: Any = None,
                 backend: str = "kvikio") -> None:
        if backend not in _BACKENDS:
            raise ValueError(f"backend {backend!r} is not one of {', '.join(_BACKENDS)}")
        self._fw: Framework = framework_for(framework, None if framework in ("cupy", "cp")
                                            and device == "cpu" else device)
        self._separate = bool(separate)
        if max_gap < 0:
            raise ValueError(f"max_gap must be >= 0, got {max_gap}")
        self._max_gap = max_gap
        self._progress = progress
        self._name = name_of(filename)
        self._files: Dict[Any, _File] = {}
        self._closed = False
        if is_index(filename):
            doc = _read_index(filename)
            self._where = {t: _shard_path(filename, s) for t, s in doc["weight_map"].items()}
            meta = doc.get("metadata")
            self._metadata = ({str(k): str(v) for k, v in meta.items()}
                              if isinstance(meta, dict) else None)
            self._index_shards = {t: s for t, s in doc["weight_map"].items()}
        else:
            f = _File(filename)
            self._files[filename] = f
            self._where = {t: filename for t in f.header.tensors}
            self._metadata = f.header.metadata
            self._index_shards = None

    # -- the safetensors API ----------------------------------------------------------
    def __enter__(self) -> "safe_open":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file(s); idempotent. Tensors already returned stay valid."""
        for f in self._files.values():
            f.close()
        self._files.clear()
        self._closed = True

    def keys(self) -> List[str]:
        """The tensor names.

        Returns:
            The names, sorted.
        """
        return sorted(self._where)

    def offset_keys(self) -> List[str]:
        """The tensor names in file order.

        Returns:
            The names by offset (shard after shard for an index).
        """
        return self._in_file_order(list(self._where))

    def _in_file_order(self, names: List[str]) -> List[str]:
        by_path: Dict[Any, List[str]] = {}
        for n in names:
            by_path.setdefault(self._where[n], []).append(n)
        out: List[str] = []
        for path in dict.fromkeys(self._where.values()):
            if path in by_path:
                tensors = self._file(path).header.tensors
                out += sorted(by_path[path], key=lambda n: (tensors[n].begin, tensors[n].end))
        return out

    def metadata(self) -> Optional[Dict[str, str]]:
        """The free-form metadata.

        Returns:
            The header's ``__metadata__`` (an index's ``metadata``), or None.
        """
        return None if self._metadata is None else dict(self._metadata)

    def get_tensor(self, name: str) -> Any:
        """One tensor, in its own allocation.

        Args:
            name: The tensor's name.

        Returns:
            The tensor, on the device of this ``safe_open``.

        Raises:
            KeyError: No such tensor (:class:`~kvikio.safetensors.errors.TensorNotFoundError`).
            TypeError: The framework cannot hold its dtype
                (:class:`~kvikio.safetensors.errors.UnsupportedDtypeError`).
        """
        return self.get_tensors([name])[name]

    def get_tensors(self, tensors: Selection = None) -> Dict[str, Any]:
        """Many tensors at once: every read of every file issued before any is waited for.

        Args:
            tensors: None for all; a list of names; or a predicate on the name (a filter).

        Returns:
            The tensors by name, in file order (or in the order of the list given).

        Raises:
            KeyError: A name the file does not have
                (:class:`~kvikio.safetensors.errors.TensorNotFoundError`).
        """
        self._check_open()
        if tensors is None or callable(tensors):
            # Only the shards that hold a wanted tensor are opened.
            names = self._in_file_order(_selected(list(self._where), tensors, self._name))
        else:
            names = _selected(list(self._where), tensors, self._name)
        for n in names:
            if n not in self._where:
                raise TensorNotFoundError(f"{self._name}: no tensor {n!r}", filename=self._name,
                                          tensor=n)
        by_file: Dict[Any, List[TensorInfo]] = {}
        for n in names:
            by_file.setdefault(self._where[n], []).append(self._info(n))
        pending = PendingReads()
        planned = []
        piece = PROGRESS_PIECE if self._progress is not None else None
        for path, infos in by_file.items():
            f = self._file(path)
            for info in infos:  # before any read: a dtype the framework lacks fails first
                self._fw.check(info, f.source.name)
        try:
            for path, infos in by_file.items():
                f = self._file(path)
                planned.append((f, issue_tensors(f.source, f.header, infos, self._fw, pending,
                                                 separate=self._separate,
                                                 max_gap=self._max_gap, piece=piece)))
        except BaseException:
            try:
                pending.wait()  # no read may still write into a buffer being dropped
            except BaseException:  # noqa: BLE001 (the first error is the one to report)
                pass
            raise
        pending.wait(self._progress)
        result: Dict[str, Any] = {}
        for f, ranges in planned:
            result.update(views(f.source.name, ranges, self._fw))
        return {n: result[n] for n in names}

    def get_slice(self, name: str) -> "Slice":
        """A lazy view of one tensor: indexing it reads only the selected bytes.

        Args:
            name: The tensor's name.

        Returns:
            A :class:`Slice`.
        """
        self._check_open()
        return Slice(self, self._info(name))

    # -- internals --------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self._name}: safe_open is closed")

    def _file(self, path: Any) -> _File:
        self._check_open()
        f = self._files.get(path)
        if f is None:
            if not is_url(path) and not os.path.exists(os.fspath(path)):
                tensor = next((t for t, p in self._where.items() if p == path), None)
                raise MissingShardError(
                    f"{self._name}: shard {name_of(path)} (of tensor {tensor!r}) does not exist",
                    filename=name_of(path), tensor=tensor)
            try:
                f = _File(path)
            except RemoteError as e:
                if self._index_shards is None or e.http_status != 404:
                    raise
                tensor = next((t for t, p in self._where.items() if p == path), None)
                raise MissingShardError(
                    f"{self._name}: shard {name_of(path)} (of tensor {tensor!r}) does not exist "
                    "(HTTP 404)", filename=name_of(path), tensor=tensor) from e
            if self._index_shards is not None:
                # An index may name a tensor its shard lacks: an error naming both.
                for t, p in self._where.items():
                    if p == path and t not in f.header.tensors:
                        f.close()
                        raise TensorNotFoundError(
                            f"{self._name}: tensor {t!r} is not in its shard {f.source.name}",
                            filename=f.source.name, tensor=t)
            self._files[path] = f
        return f

    def _info(self, name: str) -> TensorInfo:
        path = self._where.get(name)
        if path is None:
            raise TensorNotFoundError(f"{self._name}: no tensor {name!r}", filename=self._name,
                                      tensor=name)
        return self._file(path).header.tensors[name]


class Slice:
    """A tensor of an open file, read on indexing: ``s[a:b]`` (rows, one read),
    ``s[:, a:b]`` (columns, one read per row), any ints, ``...`` and positive-step slices.

    Args:
        owner: The open file.
        info: The tensor.
    """

    def __init__(self, owner: safe_open, info: TensorInfo) -> None:
        self._owner, self._info = owner, info

    def get_shape(self) -> List[int]:
        """The tensor's shape.

        Returns:
            The shape, as the header gives it.
        """
        return list(self._info.shape)

    def get_dtype(self) -> str:
        """The tensor's dtype.

        Returns:
            Its safetensors code ("F32", "BF16", ...).
        """
        return self._info.dtype.code

    def __len__(self) -> int:
        if not self._info.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._info.shape[0]

    def __getitem__(self, key: Any) -> Any:
        owner, info = self._owner, self._info
        fw = owner._fw
        f = owner._file(owner._where[info.name])
        plan = plan_slice(info, key)
        out_info = TensorInfo(info.name, info.dtype, plan.shape, 0, plan.nbytes)
        fw.check(info, f.source.name)
        base = f.header.data_start + info.begin
        runs = len(plan.offsets)
        pending = PendingReads()
        if plan.nbytes == 0:
            return fw.view(fw.empty(0), 0, out_info, f.source.name)
        if runs == 1:
            buf = fw.empty(plan.nbytes)
            pending.issue(f.source, buf, plan.nbytes, base + int(plan.offsets[0]), None)
            pending.wait(owner._progress)
            return fw.view(buf, 0, out_info, f.source.name)
        host = np.empty(plan.nbytes, dtype=np.uint8)
        if runs <= _MAX_RUNS and plan.run >= _MIN_RUN:
            # Strided: one read per run, in one batch, into one host buffer, then one copy.
            pending.issue_batch(f.source, [
                (host[i * plan.run : (i + 1) * plan.run], plan.run, base + off)
                for i, off in enumerate(plan.offsets.tolist())])
            pending.wait(owner._progress)
        else:
            lo = int(plan.offsets.min())
            hi = int(plan.offsets.max()) + plan.run
            span = np.empty(hi - lo, dtype=np.uint8)
            pending.issue(f.source, span, hi - lo, base + lo, None)
            pending.wait(owner._progress)
            idx = (plan.offsets - lo)[:, None] + np.arange(plan.run, dtype=np.int64)
            host[:] = span[idx.reshape(-1)]
        return fw.view(fw.from_host(host), 0, out_info, f.source.name)


__all__ = ["safe_open", "Slice", "is_index"]
