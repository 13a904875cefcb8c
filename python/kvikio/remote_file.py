"""Remote files (HTTP/HTTPS, S3, WebHDFS): :class:`RemoteFile` over libkvikio's RemoteHandle.

Reads are HTTP range requests made by the C++ library (libcurl); ``pread`` splits a read into
``task_size`` pieces run in parallel on the shared thread pool, with the GIL released. Failed
requests are retried as the ``http_max_attempts``, ``http_status_codes`` and ``http_timeout``
settings say (:mod:`kvikio.defaults`).

Errors: a request that still fails raises :class:`RemoteError` (a ``RuntimeError``; its
subclasses say how it failed) whose message and ``url`` attribute name the URL with
credentials and signatures removed, and whose ``http_status`` is the last HTTP status (0 when
no response came). A malformed URL, a bad scheme, or missing credentials or region raise
``ValueError``; a read past the end of the object raises ``RuntimeError`` before any request
is sent; a size larger than the buffer raises ``ValueError``.
"""

from __future__ import annotations

import enum
import functools
import inspect
import io
import urllib.parse
from typing import Any, Callable, Iterable, Optional, TypeVar

from kvikio import _lib
from kvikio.cufile import IOFuture
from kvikio.errors import RemoteURLError

RemoteEndpointType = _lib.RemoteEndpointType


class RemoteIOBackend(str, enum.Enum):
    """How remote range reads run, the values of the ``remote_io_backend`` setting (as
    upstream KvikIO names them). A ``str`` too: ``defaults.get("remote_io_backend")`` gives
    the name, which equals the member, and ``set`` takes either."""

    #: Each range request on a thread of the pool, blocking in libcurl's easy interface.
    EASY_THREADPOOL = "EASY_THREADPOOL"
    #: Range requests into host memory driven by reactor threads on libcurl's multi interface.
    MULTI_POLL = "MULTI_POLL"
"""The kinds of remote endpoint: ``AUTO`` (inferred from the URL), ``S3``, ``S3_PUBLIC``,
``S3_PRESIGNED_URL``, ``WEBHDFS``, ``HTTP``."""



class RemoteError(RuntimeError):
    """A remote request failed (after the retries the settings allow).

    Raised by the C++ library's kvikio::RemoteError (the native module maps each subclass
    to the one of the same name).

    Args:
        message: The error message (it names the redacted URL).
        url: The URL with credentials, signatures and tokens removed; kept as ``url``.
        http_status: The last HTTP status received, 0 when no response arrived; kept as
            ``http_status``.
    """

    def __init__(self, message: str, url: str = "", http_status: int = 0) -> None:
        super().__init__(message)
        self.url = url
        self.http_status = http_status


class RemoteHttpError(RemoteError):
    """The server answered with an error status (404, 403, 416, or a retried 5xx)."""


class RemoteTransportError(RemoteError):
    """No usable response: connection refused or dropped, TLS or DNS failure."""


class RemoteTimeoutError(RemoteTransportError):
    """Every attempt took longer than the ``http_timeout`` setting."""


class RemoteRangeError(RemoteError, OverflowError):
    """The server ignored the Range header (answered with other bytes than asked for), on any
    read, from offset 0 too. Also the ``OverflowError`` upstream raises there ("maybe the
    server doesn't support file ranges?")."""


class RemoteTruncatedError(RemoteError):
    """The body was shorter than the range asked for, on every attempt."""


class RemoteWriteError(RemoteError):
    """A write could not be done or committed as asked (bytes rewritten after their part was
    sent, too many parts partly written for the ``max_buffered_parts`` bound, ...). When
    ``close()`` raises it, the upload was aborted first."""


class RemoteIncompleteWriteError(RemoteWriteError):
    """``close()`` found bytes of ``[0, size)`` that no write covered; the message names the
    holes. The upload was aborted: no object became visible."""


class RemoteWritePastEndError(RemoteWriteError):
    """A write ends past the declared ``nbytes`` (or past S3's 10,000 parts of ``part_size``)."""


class RemoteModeError(RemoteError, io.UnsupportedOperation):
    """A read on a file opened for writing, or a write on one opened for reading."""


__all__ = [
    "RemoteEndpointType",
    "RemoteIOBackend",
    "RemoteURLError",
    "RemoteError",
    "RemoteFile",
    "RemoteHttpError",
    "RemoteIncompleteWriteError",
    "RemoteModeError",
    "RemoteWriteError",
    "RemoteWritePastEndError",
    "RemoteRangeError",
    "RemoteTimeoutError",
    "RemoteTransportError",
    "RemoteTruncatedError",
    "infer_remote_endpoint_type",
    "is_remote_file_available",
]

_F = TypeVar("_F", bound=Callable[..., Any])


def _url_errors(func: _F) -> _F:
    """A ValueError from opening (a URL no endpoint type accepts, missing credentials or
    region) becomes :class:`kvikio.errors.RemoteURLError`: still a ValueError, and also the
    RuntimeError upstream KvikIO raises there."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RemoteURLError:
            raise
        except ValueError as e:
            raise RemoteURLError(str(e)) from None

    return wrapper  # type: ignore[return-value]


@_url_errors
def infer_remote_endpoint_type(url: str) -> RemoteEndpointType:
    """The endpoint type :meth:`RemoteFile.open` picks for a URL under ``AUTO``, without any
    request.

    ``S3`` for ``s3://`` and AWS S3 URLs when credentials and a region are available
    (arguments aside: the ``AWS_*`` environment), else ``S3_PUBLIC``; ``S3_PRESIGNED_URL``
    for presigned URLs; ``WEBHDFS`` for ``.../webhdfs/v1/...``; ``HTTP`` for any other
    http(s) URL.

    Args:
        url: The URL.

    Returns:
        The inferred endpoint type (never ``AUTO``).

    Raises:
        kvikio.errors.RemoteURLError: The URL is malformed or has another scheme (a
            ``ValueError`` and a ``RuntimeError``).
    """
    return _lib.infer_remote_endpoint_type(url)


def is_remote_file_available() -> bool:
    """Whether remote IO is available in this build.

    Returns:
        Always True (libcurl is required).
    """
    return True


def _region(aws_region_name: Optional[str], kwargs: dict[str, Any], who: str) -> Optional[str]:
    """The region from ``aws_region_name`` or its alias ``aws_region`` (not both)."""
    alias = kwargs.pop("aws_region", None)
    if kwargs:
        raise TypeError(f"{who}() got unexpected keyword arguments: {', '.join(sorted(kwargs))}")
    if alias is not None and aws_region_name is not None and alias != aws_region_name:
        raise ValueError(
            f"{who}(): aws_region {alias!r} and aws_region_name {aws_region_name!r} disagree"
        )
    return aws_region_name if aws_region_name is not None else alias


def _remember(func: _F) -> _F:
    """Records how a RemoteFile was opened (the method and the caller's own arguments, by
    name), so that it can be opened again when unpickled."""
    signature = inspect.signature(func)

    @functools.wraps(func)
    def wrapper(cls: Any, *args: Any, **kwargs: Any) -> Any:
        f = func(cls, *args, **kwargs)
        bound = signature.bind(cls, *args, **kwargs).arguments
        bound.pop("cls", None)
        bound.update(bound.pop("kwargs", {}))
        f._opened_by = (func.__name__, bound)
        return f

    return wrapper  # type: ignore[return-value]


def _unpickle_remote(method: str, kwargs: dict, nbytes: Optional[int], closed: bool) -> Any:
    if kwargs.get("nbytes") is None and nbytes is not None:
        kwargs = {**kwargs, "nbytes": nbytes}  # known: no size request
    f = getattr(RemoteFile, method)(**kwargs)
    if closed:
        f.close()
    return f


class RemoteFile:
    """A remote file, opened with one of the ``open*`` class methods (not constructed directly).

    Pickling: a file opened for reading pickles as the ``open*`` call that made it (and its
    size, so no size request is made again) and is opened again where it is unpickled.
    Credentials travel in the pickle only if they were passed as arguments to that call;
    those taken from the ``AWS_*`` environment never do: the unpickling process uses its own.
    A file opened for writing cannot be pickled (an upload in progress does not move).

    ``nbytes()`` is known once opened (no request). ``read``/``pread`` take host buffers
    (anything with the buffer protocol: NumPy arrays, bytearray) and device buffers (CuPy,
    Numba, DLPack tensors; staged through pinned bounce buffers); ``size`` defaults to the
    whole buffer. Usable as a context manager; ``close()`` is idempotent and reads already
    queued still complete.

    Args:
        handle: The native handle an ``open*`` method made.

    Raises:
        TypeError: ``handle`` is not a native handle (use the ``open*`` methods).
    """

    def __init__(self, handle: Any) -> None:
        if not isinstance(handle, _lib.RemoteFile):
            raise TypeError(
                "RemoteFile is opened with RemoteFile.open, open_http, open_s3, open_s3_url, "
                f"open_s3_public, open_s3_presigned_url or open_webhdfs, not from {type(handle)!r}"
            )
        self._handle = handle

    # -- opening ----------------------------------------------------------------------
    @classmethod
    @_remember
    @_url_errors
    def open_http(cls, url: str, nbytes: Optional[int] = None) -> RemoteFile:
        """Open an HTTP/HTTPS URL served with Range support.

        Args:
            url: The URL.
            nbytes: The size of the file; None asks the server (a HEAD request).

        Returns:
            The opened file.

        Raises:
            ValueError: The URL is malformed or not http(s)
                (:class:`~kvikio.errors.RemoteURLError`).
            RemoteError: The HEAD request failed after the retries.
        """
        return cls(_lib.RemoteFile.open_http(url, nbytes))

    @classmethod
    @_remember
    @_url_errors
    def open_s3(
        cls,
        bucket_name: str,
        object_name: str,
        nbytes: Optional[int] = None,
        aws_region_name: Optional[str] = None,
        aws_access_key_id: Optional[str] = None,
        aws_secret_access_key: Optional[str] = None,
        aws_endpoint_url: Optional[str] = None,
        aws_session_token: Optional[str] = None,
        mode: str = "r",
        part_size: Optional[int] = None,
        max_buffered_parts: Optional[int] = None,
        **kwargs: Any,
    ) -> RemoteFile:
        """Open an S3 object by bucket and name, signing requests (SigV4).

        ``mode="w"`` opens it for writing (see :meth:`write`): the object is created at
        ``close()`` (a multipart upload of ``part_size`` parts, or one PutObject when it is
        smaller than a part). Arguments left as None come from the environment. ``aws_region``
        is accepted as a keyword alias of ``aws_region_name``.

        Args:
            bucket_name: The bucket.
            object_name: The object's key.
            nbytes: The object's size (reading: None asks the server; writing: the declared
                size, optional).
            aws_region_name: The region; None reads ``AWS_DEFAULT_REGION``.
            aws_access_key_id: The access key; None reads ``AWS_ACCESS_KEY_ID``.
            aws_secret_access_key: The secret key; None reads ``AWS_SECRET_ACCESS_KEY``.
            aws_endpoint_url: An S3-compatible server, addressed path-style as
                ``<endpoint>/<bucket>/<object>``; None reads ``AWS_ENDPOINT_URL``, else AWS.
            aws_session_token: A temporary credentials' token; None reads ``AWS_SESSION_TOKEN``.
            mode: ``"r"`` to read, ``"w"`` to write.
            part_size: Bytes per uploaded part when writing; None is ``max(task_size, 5 MiB)``.
            max_buffered_parts: When writing, the most parts held in host memory at once;
                None is ``max(8, 2 x num_threads)``.

        Returns:
            The opened file.

        Raises:
            ValueError: Credentials or region are missing, the names or the endpoint are
                malformed, or ``aws_region`` and ``aws_region_name`` disagree
                (:class:`~kvikio.errors.RemoteURLError`).
            TypeError: An unknown keyword argument.
            RemoteError: The size request failed after the retries.
        """
        region = _region(aws_region_name, kwargs, "open_s3")
        return cls(
            _lib.RemoteFile.open_s3(
                bucket_name,
                object_name,
                nbytes,
                region,
                aws_access_key_id,
                aws_secret_access_key,
                aws_endpoint_url,
                aws_session_token,
                mode,
                part_size,
                max_buffered_parts,
            )
        )

    @classmethod
    @_remember
    @_url_errors
    def open_s3_url(
        cls,
        url: str,
        nbytes: Optional[int] = None,
        aws_region_name: Optional[str] = None,
        aws_access_key_id: Optional[str] = None,
        aws_secret_access_key: Optional[str] = None,
        aws_endpoint_url: Optional[str] = None,
        aws_session_token: Optional[str] = None,
        mode: str = "r",
        part_size: Optional[int] = None,
        max_buffered_parts: Optional[int] = None,
        **kwargs: Any,
    ) -> RemoteFile:
        """Open an S3 object by URL.

        ``s3://<bucket>/<object>`` (the server chosen as in :meth:`open_s3`) or the object's
        full http(s) URL (``aws_endpoint_url`` is then not used).

        Args:
            url: The object's URL.
            nbytes: As in :meth:`open_s3`.
            aws_region_name: As in :meth:`open_s3`.
            aws_access_key_id: As in :meth:`open_s3`.
            aws_secret_access_key: As in :meth:`open_s3`.
            aws_endpoint_url: As in :meth:`open_s3`, for ``s3://`` URLs only.
            aws_session_token: As in :meth:`open_s3`.
            mode: ``"r"`` to read, ``"w"`` to write.
            part_size: As in :meth:`open_s3`.
            max_buffered_parts: As in :meth:`open_s3`.

        Returns:
            The opened file.

        Raises:
            ValueError: Another scheme, a malformed URL, or missing credentials or region
                (:class:`~kvikio.errors.RemoteURLError`).
            TypeError: An unknown keyword argument.
            RemoteError: The size request failed after the retries.
        """
        region = _region(aws_region_name, kwargs, "open_s3_url")
        scheme = urllib.parse.urlsplit(url).scheme.lower()
        if scheme in ("http", "https"):
            return cls(
                _lib.RemoteFile.open_s3_from_http_url(
                    url,
                    nbytes,
                    region,
                    aws_access_key_id,
                    aws_secret_access_key,
                    aws_session_token,
                    mode,
                    part_size,
                    max_buffered_parts,
                )
            )
        if scheme == "s3":
            return cls(
                _lib.RemoteFile.open_s3_from_s3_url(
                    url,
                    nbytes,
                    region,
                    aws_access_key_id,
                    aws_secret_access_key,
                    aws_endpoint_url,
                    aws_session_token,
                    mode,
                    part_size,
                    max_buffered_parts,
                )
            )
        raise ValueError(
            # "Unsupported protocol" is what upstream's callers match (libcurl's words).
            f"open_s3_url: Unsupported protocol {scheme!r} in {_lib.redact_url(url)!r} "
            "(expected s3://, http:// or https://)"
        )

    @classmethod
    @_remember
    @_url_errors
    def open_s3_public(cls, url: str, nbytes: Optional[int] = None) -> RemoteFile:
        """Open an anonymously readable S3 object (no signing).

        Args:
            url: ``s3://<bucket>/<object>`` (resolved with ``AWS_ENDPOINT_URL`` or
                ``AWS_DEFAULT_REGION``) or an http(s) URL.
            nbytes: The object's size; None asks the server.

        Returns:
            The opened file.

        Raises:
            ValueError: The URL is malformed or has another scheme
                (:class:`~kvikio.errors.RemoteURLError`).
            RemoteError: The size request failed after the retries.
        """
        return cls(_lib.RemoteFile.open_s3_public(url, nbytes))

    @classmethod
    @_remember
    @_url_errors
    def open_s3_presigned_url(
        cls, presigned_url: str, nbytes: Optional[int] = None, mode: str = "r"
    ) -> RemoteFile:
        """Open an S3 presigned URL. Messages never show the signature.

        Args:
            presigned_url: A presigned GET URL (reading; the size comes from a one-byte GET,
                since a presigned URL allows one method only) or PUT URL (writing: the whole
                object is held in host memory and sent as one PUT at ``close()``).
            nbytes: The object's size; None asks the server.
            mode: ``"r"`` to read, ``"w"`` to write.

        Returns:
            The opened file.

        Raises:
            ValueError: The URL is malformed (:class:`~kvikio.errors.RemoteURLError`).
            RemoteError: The size request failed after the retries.
        """
        return cls(_lib.RemoteFile.open_s3_presigned_url(presigned_url, nbytes, mode))

    @classmethod
    @_remember
    @_url_errors
    def open_webhdfs(
        cls,
        url: str,
        nbytes: Optional[int] = None,
        mode: str = "r",
        part_size: Optional[int] = None,
        overwrite: bool = True,
        max_buffered_parts: Optional[int] = None,
    ) -> RemoteFile:
        """Open a file through Apache Hadoop's WebHDFS REST API.

        Writes go in file order, ``part_size`` bytes at a time, through the name node's
        redirect to a data node.

        Args:
            url: ``http(s)://<namenode>:<port>/webhdfs/v1/<path>[?user.name=<user>]``.
            nbytes: The file's size; None asks the name node (``op=GETFILESTATUS``).
            mode: ``"r"`` to read, ``"w"`` to create (``op=CREATE``), ``"a"`` to append
                (``op=APPEND``; offsets count from the file's former end).
            part_size: Bytes per request when writing; None uses the default part size.
            overwrite: With ``mode="w"``, replace an existing file (else ``close()`` raises
                RemoteWriteError and the file is kept). The bytes go to a hidden sibling
                renamed onto the file at ``close()``, so a failed write keeps the old file.
            max_buffered_parts: When writing, the most parts held in host memory at once;
                None is ``max(8, 2 x num_threads)``.

        Returns:
            The opened file.

        Raises:
            ValueError: The URL is malformed or not http(s) (:class:`~kvikio.errors.RemoteURLError`).
            RemoteError: The status request failed after the retries.
        """
        return cls(_lib.RemoteFile.open_webhdfs(
                url, nbytes, mode, part_size, overwrite, max_buffered_parts
            ))

    @classmethod
    @_remember
    @_url_errors
    def open(
        cls,
        url: str,
        remote_endpoint_type: RemoteEndpointType = RemoteEndpointType.AUTO,
        allow_list: Optional[list] = None,
        nbytes: Optional[int] = None,
    ) -> RemoteFile:
        """Open a URL as a given endpoint type, or as the one inferred from it.

        Args:
            url: The URL.
            remote_endpoint_type: The endpoint type; ``AUTO`` infers it from the URL, trying
                the types of ``allow_list`` in order.
            allow_list: The endpoint types allowed (default: S3, S3_PRESIGNED_URL, WEBHDFS,
                HTTP). An explicit type must be in it when one is given.
            nbytes: The file's size; None asks the server.

        Returns:
            The opened file.

        Raises:
            ValueError: No allowed type accepts the URL (:class:`~kvikio.errors.RemoteURLError`).
            RemoteError: The size request failed after the retries.
        """
        if allow_list is not None:
            allow_list = list(allow_list)
        return cls(_lib.RemoteFile.open(url, remote_endpoint_type, allow_list, nbytes))

    # -- life cycle -------------------------------------------------------------------
    def close(self) -> None:
        """Close the file (idempotent). Reads already queued still complete.

        A file opened for writing is committed: the object becomes visible only if the bytes
        written cover ``[0, size)`` without a hole; otherwise, or if any upload failed, the
        upload is aborted (no object, no parts left behind) and the error raised.

        Raises:
            kvikio.remote_file.RemoteIncompleteWriteError: Bytes of ``[0, size)`` were never
                written; the message names the holes.
            kvikio.remote_file.RemoteWriteError: An upload or the commit failed.
        """
        self._handle.close()

    def abort(self) -> None:
        """Abort a write: no object becomes visible and no uploaded parts are left behind.

        WebHDFS: a created file is deleted, an append truncated back. Closes the file;
        idempotent; a no-op on a file opened for reading.
        """
        self._handle.abort()

    def mode(self) -> str:
        """What the file was opened for.

        Returns:
            ``"r"``, ``"w"`` or ``"a"``.
        """
        return self._handle.mode()

    @property
    def closed(self) -> bool:
        """True once the file is closed."""
        return self._handle.closed

    def __enter__(self) -> RemoteFile:
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        # An exception inside `with` must not commit a half-written object.
        if exc_type is not None:
            self.abort()
        else:
            self.close()

    def __str__(self) -> str:
        return str(self._handle) if not self.closed else "RemoteFile(closed)"

    def __repr__(self) -> str:
        return f"<kvikio.RemoteFile {self}>"

    def __reduce__(self) -> tuple:
        opened_by = getattr(self, "_opened_by", None)
        if opened_by is None:
            raise TypeError("this RemoteFile was not made by an open* method: it cannot be pickled")
        if not self.closed and self.mode() != "r":
            raise TypeError(
                f"{self}: a RemoteFile opened for writing (mode {self.mode()!r}) cannot be pickled"
            )
        method, kwargs = opened_by
        return _unpickle_remote, (method, kwargs, self._nbytes_or_none(), self.closed)

    def _nbytes_or_none(self) -> Any:
        return None if self.closed else self.nbytes()

    # -- queries ----------------------------------------------------------------------
    def remote_endpoint_type(self) -> RemoteEndpointType:
        """The kind of endpoint this file was opened as.

        Returns:
            The endpoint type (never ``AUTO``).
        """
        return self._handle.remote_endpoint_type()

    def nbytes(self) -> int:
        """The file's size in bytes (known since opening: no request).

        Returns:
            The size.
        """
        return self._handle.nbytes()

    # -- IO ---------------------------------------------------------------------------
    def read(
        self, buf: Any, size: Optional[int] = None, file_offset: int = 0, task_size: Optional[int] = None
    ) -> int:
        """Read into ``buf`` in parallel; blocks (GIL released).

        Ctrl-C interrupts the wait (KeyboardInterrupt within about 20 ms); the range requests
        run on, and kvikio holds ``buf`` and the handle until they end.

        Args:
            buf: Host or device buffer to read into.
            size: Bytes to read; None reads ``buf``'s size.
            file_offset: Byte offset in the file to read from.
            task_size: Bytes per parallel range request; None uses the ``task_size`` setting.

        Returns:
            The bytes read.

        Raises:
            ValueError: ``size`` exceeds ``buf``, or the file is closed.
            RuntimeError: The read runs past the end of the file (before any request).
            RemoteError: A request failed after the retries (a ``RuntimeError`` too).
            kvikio.remote_file.RemoteModeError: The file is opened for writing.
        """
        return self._handle.read(buf, size, file_offset, task_size)

    def pread(
        self, buf: Any, size: Optional[int] = None, file_offset: int = 0, task_size: Optional[int] = None
    ) -> IOFuture:
        """Like :meth:`read`, but returns at once; ``buf`` is held until the read is done.

        Args:
            buf: Host or device buffer to read into.
            size: Bytes to read; None reads ``buf``'s size.
            file_offset: Byte offset in the file to read from.
            task_size: Bytes per parallel range request; None uses the ``task_size`` setting.

        Returns:
            A future whose ``get()`` returns the bytes read (or raises the error).

        Raises:
            ValueError: ``size`` exceeds ``buf``, or the file is closed.
            RuntimeError: The read runs past the end of the file (before any request).
            kvikio.remote_file.RemoteModeError: The file is opened for writing.
        """
        return self._handle.pread(buf, size, file_offset, task_size)

    def pread_batch(self, requests: Iterable[tuple]) -> IOFuture:
        """Read many ranges of this object in one call; non-blocking.

        Like :meth:`kvikio.CuFile.pread_batch`. Every request is checked before anything is
        sent. Requests into host memory that lie within 64 KiB of each other share one range
        request of at most ``task_size`` bytes; the range requests go out in parallel (on the
        thread pool, or with ``remote_io_backend`` ``"MULTI_POLL"`` on libcurl multi
        reactors).

        Args:
            requests: ``(buf, size, file_offset)`` tuples; ``size`` None reads the whole
                buffer, ``file_offset`` defaults to 0.

        Returns:
            A future whose ``get()`` returns the total bytes read, or raises the error of the
            lowest-numbered failed request once every request has finished.

        Raises:
            ValueError: A request is malformed or reaches past the object's end; the message
                names its index (``"batch request 3: ..."``).
        """
        return self._handle.pread_batch(requests)

    def write(
        self,
        buf: Any,
        size: Optional[int] = None,
        file_offset: Optional[int] = None,
        task_size: Optional[int] = None,
    ) -> int:
        """Write ``buf`` to a file opened with ``mode="w"`` or ``"a"``.

        Returns once the bytes are copied into part buffers (GIL released; ``buf`` may be
        reused); complete parts upload in the background, in parallel. Writes may come in any
        order and from several threads. Host memory is bounded by ``max(8, 2 x num_threads)``
        parts; a write that needs one more waits for an upload. The copy runs on a thread of
        the calling thread's own, so that Ctrl-C interrupts the wait (KeyboardInterrupt within
        about 20 ms); the write then runs on, and kvikio holds ``buf`` until it ends.

        Args:
            buf: Host or device buffer to write from.
            size: Bytes to write; None writes all of ``buf``.
            file_offset: Byte offset in the object; None continues after the previous
                ``write`` (0 at first).
            task_size: Accepted for symmetry with :meth:`read`; parts are ``part_size`` bytes.

        Returns:
            ``size``.

        Raises:
            ValueError: ``size`` exceeds ``buf``, or the file is closed.
            kvikio.remote_file.RemoteModeError: The file is opened for reading.
            kvikio.remote_file.RemoteWritePastEndError: The write ends past the declared size.
            kvikio.remote_file.RemoteWriteError: The bytes cannot be taken (rewritten after
                their part was sent, or an earlier upload failed).
        """
        return self._handle.write(buf, size, file_offset, task_size)

    def pwrite(
        self, buf: Any, size: Optional[int] = None, file_offset: int = 0, task_size: Optional[int] = None
    ) -> IOFuture:
        """Like :meth:`write` at ``file_offset``, returning a future.

        Args:
            buf: Host or device buffer to write from.
            size: Bytes to write; None writes all of ``buf``.
            file_offset: Byte offset in the object.
            task_size: Accepted for symmetry with :meth:`pread`.

        Returns:
            A future, ready once the bytes are taken, whose ``get()`` returns ``size``.

        Raises:
            ValueError: ``size`` exceeds ``buf``, or the file is closed.
            kvikio.remote_file.RemoteModeError: The file is opened for reading.
        """
        return self._handle.pwrite(buf, size, file_offset, task_size)
