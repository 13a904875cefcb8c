"""fsspec file systems over kvikio: local files, HTTP(S), S3 and WebHDFS.

Registered with fsspec through its ``fsspec.specs`` entry point, so that
``fsspec.filesystem("kvikio+s3")``, ``fsspec.open("kvikio+https://...")``, Dask, xarray,
pandas and zarr's ``FsspecStore`` find them once kvikio is installed:

============================  ==========================================  ====================
protocol                      path (what ``_strip_protocol`` keeps)       class
============================  ==========================================  ====================
``kvikio``, ``kvikio+file``   a local path                                KvikioLocalFileSystem
``kvikio+http(s)``            the whole ``http(s)://`` URL                KvikioHTTPFileSystem
``kvikio+s3``                 ``bucket/key``                              KvikioS3FileSystem
``kvikio+webhdfs``            ``host:port/path`` (``/webhdfs/v1`` added)  KvikioWebHDFSFileSystem
============================  ==========================================  ====================

Every one is an :class:`fsspec.asyn.AsyncFileSystem` (zarr's ``FsspecStore`` requires that).
Reads are kvikio's: ``cat_file`` is one parallel ``pread``; ``cat_ranges`` reads all the
ranges of one file in one ``pread_batch`` (ranges within 64 KiB of each other share a range
request; the requests run in parallel) and the batches of all files at once; ``open()``
gives a seekable file whose ``readinto`` takes host or device (CuPy, Numba, PyTorch)
buffers. Writes (``pipe_file``, ``put_file``, ``open(..., "wb")``) go through
:class:`kvikio.RemoteFile` in write mode (S3 multipart upload, WebHDFS CREATE) or
:class:`kvikio.CuFile` locally; HTTP has no writes. Listing: local directories, S3
ListObjectsV2 (signed here with SigV4, as libkvikio signs reads), WebHDFS LISTSTATUS; HTTP
has ``info``/``exists`` (a HEAD request) but no ``ls``.

The size of a remote file is asked once (a HEAD or status request) and remembered by the
file system instance, as fsspec's ``HTTPFileSystem`` does; writes through the instance and
``invalidate_cache()`` forget it. Local sizes are read at each open.

S3 ``storage_options`` take s3fs's names: ``key``, ``secret``, ``token``, ``endpoint_url``,
``client_kwargs={"region_name": ..., "endpoint_url": ...}``, ``anon``. Anything not given
comes from the ``AWS_*`` environment of the process doing the request, read at each request.

Pickling: a file system pickles as the arguments it was made with (fsspec's own rule), so
credentials travel in a pickle only when they were passed as arguments; credentials from the
environment never do, and each process reads its own.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import hmac
import io
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from typing import Any, Iterable, Optional

import numpy as np

try:
    from fsspec.asyn import AsyncFileSystem
except ImportError as e:  # pragma: no cover - exercised where fsspec is missing
    raise ImportError("kvikio.fsspec needs fsspec (pip install 'kvikio[fsspec]')") from e

import kvikio
from kvikio import _aio
from kvikio._lib import _fresh_bytes
from kvikio.remote_file import RemoteError, RemoteFile

__all__ = [
    "KvikioFile",
    "KvikioHTTPFileSystem",
    "KvikioLocalFileSystem",
    "KvikioS3FileSystem",
    "KvikioWebHDFSFileSystem",
]


def _nbytes(buf: Any) -> int:
    """Bytes of a host or device buffer."""
    n = getattr(buf, "nbytes", None)
    if isinstance(n, int):
        return n
    cai = getattr(buf, "__cuda_array_interface__", None)
    if cai is not None:
        count = 1
        for d in cai["shape"]:
            count *= d
        return count * np.dtype(cai["typestr"]).itemsize
    return memoryview(buf).nbytes


def _settle(futures: Iterable[Any]) -> None:
    """Blocks until every future's IO has ended: it writes into bytes objects (_fresh_bytes)
    that nothing else keeps alive, so they must not be freed before. Only done() is asked: a
    waiter thread may be waiting on the same futures, and get() beside it is not allowed."""
    for f in futures:
        while not f.done():
            time.sleep(1e-4)


def _clip(start: Optional[int], end: Optional[int], size: int) -> tuple[int, int]:
    """(offset, nbytes) of ``[start, end)`` of a ``size``-byte file, Python-slice style."""
    s = 0 if start is None else (max(0, size + start) if start < 0 else min(start, size))
    e = size if end is None else (max(0, size + end) if end < 0 else min(end, size))
    return s, max(0, e - s)


def _missing(e: RemoteError, path: str) -> Exception:
    """A 404 as FileNotFoundError (what fsspec and zarr expect); anything else as it is."""
    if getattr(e, "http_status", 0) == 404:
        err = FileNotFoundError(2, f"No such file: {path} ({e})", path)
        err.__cause__ = e
        return err
    return e


class _Base(AsyncFileSystem):
    """What the kvikio file systems share: reads and writes through kvikio handles. A
    subclass says how to open a path (``_open_handle``), and lists and stats it."""

    cachable = True
    root_marker = ""

    #: Options of fsspec itself, which every file system takes.
    _fsspec_options = frozenset(
        ("asynchronous", "loop", "batch_size", "use_listings_cache", "listings_expiry_time", "max_paths")
    )

    def __init__(self, *args: Any, **storage_options: Any) -> None:
        self._check_options(storage_options)
        super().__init__(*args, **storage_options)
        self._sizes: dict[str, int] = {}

    # what a subclass provides ---------------------------------------------------------
    _options: tuple[str, ...] = ()

    def _check_options(self, options: dict) -> None:
        unknown = sorted(set(options) - set(self._options) - self._fsspec_options)
        if unknown:
            raise TypeError(
                f"{type(self).__name__}: unknown storage_options {', '.join(unknown)} "
                f"(known: {', '.join(self._options) or 'none'})"
            )

    def _open_handle(self, path: str, mode: str, nbytes: Optional[int]) -> Any:
        """A RemoteFile or CuFile of ``path`` (stripped) for ``mode`` "r" or "w"."""
        raise NotImplementedError

    # opening ----------------------------------------------------------------------------
    def _reader_sync(self, path: str) -> tuple[Any, int]:
        size = self._sizes.get(path)
        try:
            handle = self._open_handle(path, "r", size)
        except RemoteError as e:
            raise _missing(e, path) from None
        if size is None:
            size = self._sizes[path] = handle.nbytes()
        return handle, size

    async def _reader(self, path: str) -> tuple[Any, int]:
        if path in self._sizes:  # no request: open on the loop
            return self._reader_sync(path)
        return await asyncio.to_thread(self._reader_sync, path)

    def invalidate_cache(self, path: Optional[str] = None) -> None:
        if path is None:
            self._sizes.clear()
        else:
            self._sizes.pop(self._strip_protocol(path), None)
        super().invalidate_cache(path)

    # reads ------------------------------------------------------------------------------
    async def _cat_file(self, path: str, start: Optional[int] = None, end: Optional[int] = None, **kwargs: Any) -> bytes:
        path = self._strip_protocol(path)
        handle, size = await self._reader(path)
        try:
            offset, n = _clip(start, end, size)
            if not n:
                return b""
            out, view = _fresh_bytes(n)
            future = handle.pread(view, n, offset)
            try:
                got = await _aio.wait(future)
            except BaseException:
                _settle([future])
                raise
            if got != n:
                raise OSError(f"{path}: read {got} of {n} bytes at offset {offset}")
            return out
        finally:
            handle.close()

    async def _cat_ranges(
        self,
        paths: list,
        starts: Any,
        ends: Any,
        max_gap: Optional[int] = None,
        batch_size: Optional[int] = None,
        on_error: str = "return",
        **kwargs: Any,
    ) -> list:
        """All ranges of each file in one ``pread_batch``, every file's batch at once."""
        if not isinstance(paths, list):
            raise TypeError(f"cat_ranges: paths must be a list, got {type(paths).__name__}")
        if not isinstance(starts, Iterable):
            starts = [starts] * len(paths)
        if not isinstance(ends, Iterable):
            ends = [ends] * len(paths)
        starts, ends = list(starts), list(ends)
        if len(starts) != len(paths) or len(ends) != len(paths):
            raise ValueError(
                f"cat_ranges: {len(paths)} paths but {len(starts)} starts and {len(ends)} ends"
            )
        by_path: dict[str, list[int]] = {}
        for i, p in enumerate(paths):
            by_path.setdefault(self._strip_protocol(p), []).append(i)
        out: list = [None] * len(paths)
        names = list(by_path)
        opened = await asyncio.gather(*(self._reader(p) for p in names), return_exceptions=True)
        pending = []
        try:
            for name, got in zip(names, opened):
                idx = by_path[name]
                if isinstance(got, BaseException):
                    for i in idx:
                        out[i] = got
                    continue
                handle, size = got
                requests, expected = [], 0
                for i in idx:
                    offset, n = _clip(starts[i], ends[i], size)
                    if n:
                        out[i], view = _fresh_bytes(n)
                        requests.append((view, n, offset))
                        expected += n
                    else:
                        out[i] = b""
                if requests:
                    try:
                        pending.append((name, idx, expected, handle.pread_batch(requests)))
                    except Exception as e:  # noqa: BLE001 - placed in the output
                        for i in idx:
                            out[i] = e
            for name, idx, expected, future in pending:
                try:
                    got = await _aio.wait(future)
                    if got != expected:
                        raise OSError(f"{name}: read {got} of {expected} bytes")
                except Exception as e:  # noqa: BLE001 - placed in the output
                    for i in idx:
                        out[i] = e
        finally:
            # Cancelled, or failed before every batch was awaited: the reads still fill `out`.
            _settle(p[3] for p in pending)
            for got in opened:
                if not isinstance(got, BaseException):
                    got[0].close()
        if on_error != "return":
            for v in out:
                if isinstance(v, BaseException):
                    raise v
        return out

    async def _get_file(self, rpath: str, lpath: str, **kwargs: Any) -> None:
        data = await self._cat_file(rpath)
        if os.path.isdir(lpath):
            return
        await asyncio.to_thread(_write_local, lpath, data)

    # writes -----------------------------------------------------------------------------
    def _write_sync(self, path: str, chunks: Iterable[Any]) -> None:
        handle = self._open_handle(path, "w", None)
        offset = 0
        try:
            for chunk in chunks:
                n = _nbytes(chunk)
                if n:
                    handle.write(chunk, n, offset)  # CuFile.write has no position of its own
                    offset += n
        except BaseException:
            _abort(handle)
            raise
        handle.close()
        self._sizes.pop(path, None)
        self.invalidate_cache(self._parent(path))

    async def _pipe_file(self, path: str, value: Any, mode: str = "overwrite", **kwargs: Any) -> None:
        path = self._strip_protocol(path)
        if mode == "create" and await self._exists(path):
            raise FileExistsError(path)
        await asyncio.to_thread(self._write_sync, path, [value])

    async def _put_file(self, lpath: str, rpath: str, mode: str = "overwrite", callback: Any = None, **kwargs: Any) -> None:
        if os.path.isdir(lpath):
            return await self._makedirs(rpath, exist_ok=True)
        rpath = self._strip_protocol(rpath)
        if mode == "create" and await self._exists(rpath):
            raise FileExistsError(rpath)
        await asyncio.to_thread(self._write_sync, rpath, _local_chunks(lpath))

    def _open(self, path: str, mode: str = "rb", block_size: Any = None, autocommit: bool = True, cache_options: Any = None, **kwargs: Any) -> "KvikioFile":
        path = self._strip_protocol(path)
        if mode not in ("rb", "wb"):
            raise ValueError(f"{type(self).__name__}.open({path!r}): mode must be 'rb' or 'wb', not {mode!r}")
        if mode == "rb":
            handle, size = self._reader_sync(path)
            return KvikioFile(self, path, handle, "rb", size)
        self._sizes.pop(path, None)
        return KvikioFile(self, path, self._open_handle(path, "w", None), "wb", 0)

    async def _makedirs(self, path: str, exist_ok: bool = False) -> None:
        pass  # object stores and WebHDFS create parents with the object

    async def _mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        pass

    async def _rm(self, path: Any, recursive: bool = False, batch_size: Any = None, maxdepth: Any = None, **kwargs: Any) -> None:
        paths = await self._expand_path(path, recursive=recursive, maxdepth=maxdepth)
        for p in reversed(paths):
            await self._rm_file(p)
        self.invalidate_cache()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.protocol[0]}://>"


def _abort(handle: Any) -> None:
    abort = getattr(handle, "abort", None)
    if abort is not None:
        abort()
    else:
        handle.close()


def _local_chunks(path: str, chunk: int = 16 << 20):
    with open(path, "rb") as f:
        while True:
            data = f.read(chunk)
            if not data:
                return
            yield data


def _write_local(path: str, data: bytes) -> None:
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


class KvikioFile(io.RawIOBase):
    """A file of a kvikio file system, from ``fs.open(path, "rb" | "wb")``.

    Reading: ``read``, ``readinto`` (host or device buffers: a CuPy array is filled straight
    from storage), ``seek``/``tell``; reads at the end return no bytes. Writing: ``write``
    appends in order; ``close()`` commits (S3: the object appears then), and leaving a
    ``with`` block on an exception aborts.
    """

    def __init__(self, fs: _Base, path: str, handle: Any, mode: str, size: int) -> None:
        super().__init__()
        self.fs, self.path, self.mode = fs, path, mode
        self._handle, self._size, self._pos = handle, size, 0

    # io.RawIOBase
    def readable(self) -> bool:
        return self.mode == "rb"

    def writable(self) -> bool:
        return self.mode == "wb"

    def seekable(self) -> bool:
        return self.mode == "rb"

    @property
    def size(self) -> int:
        return self._size

    def tell(self) -> int:
        self._check_open()
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._check_open()
        if self.mode != "rb":
            raise io.UnsupportedOperation(f"{self.path}: seek on a file opened for writing")
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}.get(whence)
        if base is None:
            raise ValueError(f"{self.path}: whence must be 0, 1 or 2, not {whence!r}")
        if base + offset < 0:
            raise ValueError(f"{self.path}: seek to a negative position ({base + offset})")
        self._pos = base + offset
        return self._pos

    def readinto(self, buf: Any) -> int:
        """Read up to the buffer's size at the position (host or device memory)."""
        self._check_open()
        if self.mode != "rb":
            raise io.UnsupportedOperation(f"{self.path}: read on a file opened for writing")
        n = max(0, min(_nbytes(buf), self._size - self._pos))
        if n:
            got = self._handle.read(buf, n, self._pos)
            self._pos += got
            return got
        return 0

    def read(self, size: int = -1) -> bytes:
        self._check_open()
        if size is None or size < 0:
            size = max(0, self._size - self._pos)
        want = max(0, min(size, self._size - self._pos))
        if not want:
            return b""
        out, view = _fresh_bytes(want)  # read straight into the bytes returned (no copy)
        got = self.readinto(view)  # blocking: the view is filled when it returns
        return out if got == want else out[:got]

    def readall(self) -> bytes:
        return self.read(-1)

    def write(self, buf: Any) -> int:
        self._check_open()
        if self.mode != "wb":
            raise io.UnsupportedOperation(f"{self.path}: write on a file opened for reading")
        n = _nbytes(buf)
        if n:
            self._handle.write(buf, n, self._pos)
        self._pos += n
        return n

    def close(self) -> None:
        if not self.closed:
            try:
                self._handle.close()
            finally:
                super().close()
                if self.mode == "wb":
                    self.fs.invalidate_cache(self.path)

    def abort(self) -> None:
        """Leaves no object behind (writing); closes."""
        if not self.closed:
            try:
                _abort(self._handle)
            finally:
                super().close()

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is not None and self.mode == "wb":
            self.abort()
        else:
            self.close()

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError(f"I/O operation on a closed file ({self.path})")

    def __repr__(self) -> str:
        return f"<KvikioFile {self.fs.protocol[0]}://{self.path} mode={self.mode!r}>"

    def __reduce__(self) -> Any:
        if self.mode != "rb":
            raise TypeError(f"{self.path}: a file open for writing cannot be pickled")
        return _reopen_file, (self.fs, self.path, self._pos, self.closed)


def _reopen_file(fs: _Base, path: str, pos: int, closed: bool) -> KvikioFile:
    f = fs._open(path, "rb")
    f._pos = pos
    if closed:
        f.close()
    return f


# -- local files ---------------------------------------------------------------------------
class KvikioLocalFileSystem(_Base):
    """Local files through :class:`kvikio.CuFile` (``kvikio://`` or ``kvikio+file://``)."""

    protocol = ("kvikio", "kvikio+file")
    root_marker = "/"

    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        path = os.fspath(path)
        for p in ("kvikio+file://", "kvikio://", "file://"):
            if path.startswith(p):
                path = path[len(p):]
                break
        path = os.path.abspath(os.path.expanduser(path)) if path else os.getcwd()
        return path

    def _open_handle(self, path: str, mode: str, nbytes: Optional[int]) -> Any:
        if mode == "w":
            parent = os.path.dirname(path)
            if parent:
                os.makedirs(parent, exist_ok=True)
        return kvikio.CuFile(path, mode)

    def _reader_sync(self, path: str) -> tuple[Any, int]:
        f = kvikio.CuFile(path, "r")  # a local size is cheap and never cached: files change
        return f, f.nbytes()

    async def _reader(self, path: str) -> tuple[Any, int]:
        return self._reader_sync(path)

    async def _cat_ranges(self, paths: list, starts: Any, ends: Any, max_gap: Any = None, batch_size: Any = None, on_error: str = "return", **kwargs: Any) -> list:
        return await super()._cat_ranges(paths, starts, ends, max_gap, batch_size, on_error, **kwargs)

    async def _info(self, path: str, **kwargs: Any) -> dict:
        path = self._strip_protocol(path)
        st = os.stat(path)
        kind = "directory" if os.path.isdir(path) else "file"
        return {"name": path, "size": st.st_size if kind == "file" else 0, "type": kind, "mtime": st.st_mtime}

    async def _ls(self, path: str, detail: bool = True, **kwargs: Any) -> list:
        path = self._strip_protocol(path)
        if not os.path.isdir(path):
            info = await self._info(path)
            return [info] if detail else [info["name"]]
        out = []
        with os.scandir(path) as it:
            for e in it:
                full = os.path.join(path, e.name)
                if detail:
                    isdir = e.is_dir()
                    out.append({"name": full, "size": 0 if isdir else e.stat().st_size, "type": "directory" if isdir else "file"})
                else:
                    out.append(full)
        return out

    async def _rm_file(self, path: str, **kwargs: Any) -> None:
        path = self._strip_protocol(path)
        if os.path.isdir(path):
            os.rmdir(path)
        else:
            os.remove(path)

    async def _makedirs(self, path: str, exist_ok: bool = False) -> None:
        os.makedirs(self._strip_protocol(path), exist_ok=exist_ok)

    async def _mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        path = self._strip_protocol(path)
        if create_parents:
            os.makedirs(path, exist_ok=True)
        else:
            os.mkdir(path)


# -- HTTP(S) -----------------------------------------------------------------------------
class KvikioHTTPFileSystem(_Base):
    """HTTP(S) URLs served with Range support (``kvikio+http://``, ``kvikio+https://``);
    paths are the plain ``http(s)://`` URLs. ``info``/``exists`` are a HEAD request; HTTP
    has no listing and no writes here."""

    protocol = ("kvikio+http", "kvikio+https")

    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        path = os.fspath(path)
        if path.startswith("kvikio+"):
            path = path[len("kvikio+"):]
        return path

    @classmethod
    def _parent(cls, path: str) -> str:
        return path.rsplit("/", 1)[0]

    def unstrip_protocol(self, name: str) -> str:
        return name if name.startswith("kvikio+") else "kvikio+" + name

    def _open_handle(self, path: str, mode: str, nbytes: Optional[int]) -> Any:
        if mode != "r":
            raise NotImplementedError(f"{path}: HTTP has no writes (use kvikio+s3 or kvikio+webhdfs)")
        return RemoteFile.open_http(path, nbytes)

    async def _info(self, path: str, **kwargs: Any) -> dict:
        path = self._strip_protocol(path)
        handle, size = await self._reader(path)
        handle.close()
        return {"name": path, "size": size, "type": "file"}

    async def _ls(self, path: str, detail: bool = True, **kwargs: Any) -> list:
        raise NotImplementedError(f"{path}: HTTP has no directory listing")

    async def _rm_file(self, path: str, **kwargs: Any) -> None:
        raise NotImplementedError(f"{path}: HTTP has no deletes")


# -- S3 ----------------------------------------------------------------------------------
def _quote(s: str, safe: str = "-_.~") -> str:
    return urllib.parse.quote(s, safe=safe)


class KvikioS3FileSystem(_Base):
    """S3 objects as ``kvikio+s3://bucket/key`` (paths ``bucket/key``).

    storage_options (s3fs's names): ``key``, ``secret``, ``token``, ``endpoint_url``,
    ``client_kwargs={"region_name", "endpoint_url"}``, ``anon`` (unsigned reads of public
    objects). Unset ones come from ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
    ``AWS_SESSION_TOKEN``, ``AWS_ENDPOINT_URL`` and ``AWS_DEFAULT_REGION`` when a request is
    made. An endpoint is addressed path-style (``<endpoint>/<bucket>/<key>``), AWS
    virtual-hosted style.
    """

    protocol = ("kvikio+s3",)
    _options = ("key", "secret", "token", "endpoint_url", "client_kwargs", "anon")

    def __init__(self, *args: Any, **storage_options: Any) -> None:
        super().__init__(*args, **storage_options)
        opts = storage_options
        ck = dict(opts.get("client_kwargs") or {})
        unknown = sorted(set(ck) - {"region_name", "endpoint_url"})
        if unknown:
            raise TypeError(f"KvikioS3FileSystem: unknown client_kwargs {', '.join(unknown)} (known: region_name, endpoint_url)")
        self._key, self._secret, self._token = opts.get("key"), opts.get("secret"), opts.get("token")
        self._endpoint = opts.get("endpoint_url") or ck.get("endpoint_url")
        self._region = ck.get("region_name")
        self._anon = bool(opts.get("anon", False))

    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        path = os.fspath(path)
        for p in ("kvikio+s3://", "s3://"):
            if path.startswith(p):
                path = path[len(p):]
                break
        return path.strip("/")

    @staticmethod
    def _split(path: str) -> tuple[str, str]:
        bucket, _, key = path.partition("/")
        return bucket, key

    def _env(self) -> tuple[Optional[str], Optional[str], Optional[str], Optional[str], Optional[str]]:
        """(key, secret, token, region, endpoint): arguments, else this process' AWS_*."""
        e = os.environ.get
        key = self._key if self._key is not None else e("AWS_ACCESS_KEY_ID")
        secret = self._secret if self._secret is not None else e("AWS_SECRET_ACCESS_KEY")
        token = self._token if self._token is not None else (e("AWS_SESSION_TOKEN") if self._key is None else None)
        region = self._region or e("AWS_DEFAULT_REGION") or e("AWS_REGION")
        endpoint = self._endpoint or e("AWS_ENDPOINT_URL")
        return key, secret, token, region, endpoint

    def _url(self, bucket: str, key: str = "", endpoint: Optional[str] = None, region: Optional[str] = None) -> str:
        if endpoint:
            return f"{endpoint.rstrip('/')}/{bucket}" + (f"/{_quote(key, '-_.~/')}" if key else "/")
        return f"https://{bucket}.s3.{region or 'us-east-1'}.amazonaws.com/" + _quote(key, "-_.~/")

    def _open_handle(self, path: str, mode: str, nbytes: Optional[int]) -> Any:
        bucket, key = self._split(path)
        if not bucket or not key:
            raise ValueError(f"kvikio+s3://{path}: expected bucket/key")
        if self._anon:
            if mode != "r":
                raise PermissionError(f"kvikio+s3://{path}: anonymous access is read-only")
            _, _, _, region, endpoint = self._env()
            return RemoteFile.open_s3_public(self._url(bucket, key, endpoint, region), nbytes)
        return RemoteFile.open_s3(
            bucket, key, nbytes if mode == "r" else None,
            aws_region_name=self._region, aws_access_key_id=self._key,
            aws_secret_access_key=self._secret, aws_endpoint_url=self._endpoint,
            aws_session_token=self._token, mode=mode,
        )

    # signed requests for what libkvikio has no call for: listing and deleting
    def _request(self, method: str, bucket: str, key: str = "", query: Optional[dict] = None) -> bytes:
        akey, secret, token, region, endpoint = self._env()
        url = self._url(bucket, key, endpoint, region)
        query = query or {}
        qs = "&".join(f"{_quote(k)}={_quote(str(v))}" for k, v in sorted(query.items()))
        headers = {}
        if not self._anon:
            if not akey or not secret:
                raise ValueError(f"s3://{bucket}/{key}: no credentials (key/secret storage_options or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)")
            if not region:
                raise ValueError(f"s3://{bucket}/{key}: no region (client_kwargs.region_name or AWS_DEFAULT_REGION)")
            headers = _sigv4(method, url, qs, region, akey, secret, token)
        req = urllib.request.Request(url + (f"?{qs}" if qs else ""), method=method, headers=headers)
        timeout = kvikio.defaults.get("http_timeout")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.read()
        except urllib.error.HTTPError as e:
            body = e.read()[:300].decode("utf-8", "replace")
            msg = f"{method} s3://{bucket}/{key}: HTTP {e.code}: {body}"
            if e.code == 404:
                raise FileNotFoundError(2, msg, f"{bucket}/{key}") from None
            if e.code == 403:
                raise PermissionError(13, msg, f"{bucket}/{key}") from None
            raise OSError(msg) from None

    def _list_sync(self, bucket: str, prefix: str, delimiter: Optional[str], max_keys: Optional[int] = None) -> tuple[list, list]:
        """(objects as info dicts, common prefixes) of ListObjectsV2, following continuations."""
        ns = "{http://s3.amazonaws.com/doc/2006-03-01/}"
        files, dirs, token = [], [], None
        while True:
            q = {"list-type": "2", "prefix": prefix}
            if delimiter:
                q["delimiter"] = delimiter
            if max_keys:
                q["max-keys"] = str(max_keys)
            if token:
                q["continuation-token"] = token
            root = ET.fromstring(self._request("GET", bucket, "", q))

            def find(el: Any, tag: str) -> Any:
                x = el.find(ns + tag)
                return x if x is not None else el.find(tag)

            for c in list(root.iter(ns + "Contents")) + list(root.iter("Contents")):
                k = find(c, "Key").text
                files.append({"name": f"{bucket}/{k}", "size": int(find(c, "Size").text), "type": "file"})
            for c in list(root.iter(ns + "CommonPrefixes")) + list(root.iter("CommonPrefixes")):
                dirs.append(f"{bucket}/{find(c, 'Prefix').text.rstrip('/')}")
            more = find(root, "IsTruncated")
            nxt = find(root, "NextContinuationToken")
            if max_keys or more is None or more.text != "true" or nxt is None:
                return files, dirs
            token = nxt.text

    async def _ls(self, path: str, detail: bool = True, **kwargs: Any) -> list:
        path = self._strip_protocol(path)
        bucket, key = self._split(path)
        prefix = key + "/" if key else ""
        files, dirs = await asyncio.to_thread(self._list_sync, bucket, prefix, "/")
        if not files and not dirs and key:
            info = await self._info(path)  # a file lists as itself
            return [info] if detail else [info["name"]]
        for f in files:
            self._sizes[f["name"]] = f["size"]
        out = files + [{"name": d, "size": 0, "type": "directory"} for d in dirs]
        return out if detail else [o["name"] for o in out]

    async def _info(self, path: str, **kwargs: Any) -> dict:
        path = self._strip_protocol(path)
        bucket, key = self._split(path)
        if not key:
            return {"name": bucket, "size": 0, "type": "directory"}
        try:
            _, size = await self._reader(path)
            return {"name": path, "size": size, "type": "file"}
        except FileNotFoundError:
            files, dirs = await asyncio.to_thread(self._list_sync, bucket, key + "/", "/", 1)
            if files or dirs:
                return {"name": path, "size": 0, "type": "directory"}
            raise

    async def _rm_file(self, path: str, **kwargs: Any) -> None:
        path = self._strip_protocol(path)
        bucket, key = self._split(path)
        if key:
            await asyncio.to_thread(self._request, "DELETE", bucket, key)
        self._sizes.pop(path, None)


def _sigv4(method: str, url: str, query: str, region: str, key: str, secret: str, token: Optional[str]) -> dict:
    """The headers of an AWS Signature Version 4 signed request without a body."""
    u = urllib.parse.urlsplit(url)
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    payload = hashlib.sha256(b"").hexdigest()
    headers = {"host": u.netloc, "x-amz-content-sha256": payload, "x-amz-date": amz_date}
    if token:
        headers["x-amz-security-token"] = token
    names = sorted(headers)
    canonical = "\n".join([
        method, u.path or "/", query,
        "".join(f"{n}:{headers[n]}\n" for n in names), ";".join(names), payload,
    ])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for part in (day, region, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["Authorization"] = f"AWS4-HMAC-SHA256 Credential={key}/{scope}, SignedHeaders={';'.join(names)}, Signature={sig}"
    del headers["host"]  # urllib sends it
    return headers


# -- WebHDFS -----------------------------------------------------------------------------
class KvikioWebHDFSFileSystem(_Base):
    """Files of a Hadoop name node as ``kvikio+webhdfs://host:port/path`` (paths
    ``host:port/path``; requests go to ``http(s)://host:port/webhdfs/v1/path``).

    storage_options: ``user`` (sent as ``user.name``), ``use_https`` (default False).
    """

    protocol = ("kvikio+webhdfs",)
    _options = ("user", "use_https")

    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        path = os.fspath(path)
        for p in ("kvikio+webhdfs://", "webhdfs://"):
            if path.startswith(p):
                path = path[len(p):]
                break
        return path.rstrip("/")

    def __init__(self, *args: Any, **storage_options: Any) -> None:
        super().__init__(*args, **storage_options)
        self._user = storage_options.get("user")
        self._scheme = "https" if storage_options.get("use_https") else "http"

    def _url(self, path: str, op: Optional[str] = None, **params: str) -> str:
        host, _, rest = path.partition("/")
        scheme = self._scheme
        q = {}
        if op:
            q["op"] = op
        q.update(params)
        user = self._user
        if user:
            q["user.name"] = user
        url = f"{scheme}://{host}/webhdfs/v1/{_quote(rest, '-_.~/')}"
        return url + ("?" + urllib.parse.urlencode(q) if q else "")

    def _open_handle(self, path: str, mode: str, nbytes: Optional[int]) -> Any:
        return RemoteFile.open_webhdfs(self._url(path), nbytes if mode == "r" else None, mode=mode)

    def _json(self, method: str, path: str, op: str, **params: str) -> dict:
        req = urllib.request.Request(self._url(path, op, **params), method=method)
        try:
            with urllib.request.urlopen(req, timeout=kvikio.defaults.get("http_timeout")) as r:
                body = r.read()
        except urllib.error.HTTPError as e:
            msg = f"{op} webhdfs://{path}: HTTP {e.code}: {e.read()[:300].decode('utf-8', 'replace')}"
            if e.code == 404:
                raise FileNotFoundError(2, msg, path) from None
            raise OSError(msg) from None
        return json.loads(body) if body else {}

    def _entry(self, parent: str, st: dict) -> dict:
        name = f"{parent}/{st['pathSuffix']}" if st.get("pathSuffix") else parent
        kind = "directory" if st.get("type") == "DIRECTORY" else "file"
        return {"name": name, "size": int(st.get("length", 0)), "type": kind}

    async def _info(self, path: str, **kwargs: Any) -> dict:
        path = self._strip_protocol(path)
        st = await asyncio.to_thread(self._json, "GET", path, "GETFILESTATUS")
        return self._entry(path, st["FileStatus"])

    async def _ls(self, path: str, detail: bool = True, **kwargs: Any) -> list:
        path = self._strip_protocol(path)
        st = await asyncio.to_thread(self._json, "GET", path, "LISTSTATUS")
        out = [self._entry(path, s) for s in st["FileStatuses"]["FileStatus"]]
        return out if detail else [o["name"] for o in out]

    async def _rm_file(self, path: str, **kwargs: Any) -> None:
        path = self._strip_protocol(path)
        await asyncio.to_thread(self._json, "DELETE", path, "DELETE")
        self._sizes.pop(path, None)
