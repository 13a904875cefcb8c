"""Small helpers: a local HTTP file server with Range support (for trying
:meth:`kvikio.RemoteFile.open_http` without a network), :func:`call_once` and the
deprecation helpers."""

from __future__ import annotations

import functools
import inspect
import os
import pathlib
import re
import shutil
import threading
import warnings
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional

from kvikio.errors import KvikioDeprecationWarning

# Python ignores DeprecationWarning outside __main__ by default; upstream warns with a
# FutureWarning, which is shown. Ours is both, so show it, as upstream's would be.
warnings.filterwarnings("default", category=KvikioDeprecationWarning)

__all__ = [
    "LocalHttpServer",
    "RangeRequestHandler",
    "call_once",
    "kvikio_deprecate_module",
    "kvikio_deprecation_notice",
]

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class RangeRequestHandler(SimpleHTTPRequestHandler):
    """Serves a directory like :class:`http.server.SimpleHTTPRequestHandler`, and answers a
    single-range ``Range: bytes=a-b`` (or ``a-``, ``-n``) GET or HEAD with ``206 Partial
    Content`` and ``Content-Range``; an unsatisfiable range gets ``416``. Multi-range
    requests are served whole (200), which HTTP allows."""

    _remaining: Optional[int] = None

    def end_headers(self) -> None:
        self.send_header("Accept-Ranges", "bytes")
        super().end_headers()

    def send_head(self):  # type: ignore[override]
        self._remaining = None
        match = _RANGE.match(self.headers.get("Range", "").strip())
        path = self.translate_path(self.path)
        if match is None or not os.path.isfile(path):
            return super().send_head()
        try:
            f = open(path, "rb")
        except OSError:
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        size = os.fstat(f.fileno()).st_size
        first, last = match.groups()
        if first == "":  # the last `last` bytes
            if last == "" or int(last) == 0:
                f.close()
                return self._unsatisfiable(size)
            start, end = max(size - int(last), 0), size - 1
        else:
            start = int(first)
            end = min(int(last), size - 1) if last != "" else size - 1
        if start >= size or start > end:
            f.close()
            return self._unsatisfiable(size)
        self.send_response(HTTPStatus.PARTIAL_CONTENT)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(end - start + 1))
        self.end_headers()
        f.seek(start)
        self._remaining = end - start + 1
        return f

    def _unsatisfiable(self, size: int) -> None:
        self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
        self.send_header("Content-Range", f"bytes */{size}")
        self.send_header("Content-Length", "0")
        self.end_headers()
        return None

    def copyfile(self, source: Any, outputfile: Any) -> None:
        remaining = self._remaining
        if remaining is None:
            shutil.copyfileobj(source, outputfile)
            return
        while remaining > 0:
            chunk = source.read(min(remaining, 1 << 20))
            if not chunk:
                break
            outputfile.write(chunk)
            remaining -= len(chunk)

    def log_message(self, format: str, *args: Any) -> None:  # quiet, like a test fixture
        pass


class LocalHttpServer:
    """A local HTTP server of the files under ``root_path``, for a ``with`` block.

    It listens on 127.0.0.1 on a free port, serves from threads of this process and stops
    when the block ends or after ``max_lifetime`` seconds, whichever comes first. Inside the
    block ``url`` (``http://127.0.0.1:<port>``), ``ip`` and ``port`` are set::

        with kvikio.utils.LocalHttpServer(root_path="/my/data") as server:
            with kvikio.RemoteFile.open_http(f"{server.url}/file.bin") as f:
                f.read(buf)

    Args:
        root_path: The directory served.
        range_support: Answer Range requests (``206``), which ``RemoteFile`` needs; False
            serves whole files only.
        max_lifetime: Seconds after which the server stops even inside the block.
        handler: A request handler class replacing the default one; it is called with
            ``directory=root_path`` and the keywords in ``handler_options``.
        handler_options: Extra keyword arguments for the handler.
    """

    def __init__(
        self,
        root_path: "str | os.PathLike[str]",
        range_support: bool = True,
        max_lifetime: int = 120,
        handler: Optional[type[BaseHTTPRequestHandler]] = None,
        handler_options: Optional[dict[str, Any]] = None,
    ) -> None:
        self.root_path = root_path
        self.range_support = range_support
        self.max_lifetime = max_lifetime
        self.handler = handler
        self.handler_options = dict(handler_options or {})
        self._httpd: Optional[ThreadingHTTPServer] = None
        self._timer: Optional[threading.Timer] = None

    def __enter__(self) -> "LocalHttpServer":
        if self.handler is not None:
            handler: type[BaseHTTPRequestHandler] = self.handler
        elif self.range_support:
            handler = RangeRequestHandler
        else:
            handler = SimpleHTTPRequestHandler
        options = {**self.handler_options, "directory": os.fspath(pathlib.Path(self.root_path))}
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, **options))
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, name="LocalHttpServer", daemon=True).start()
        self._httpd = httpd
        self._timer = threading.Timer(self.max_lifetime, self._stop)
        self._timer.daemon = True
        self._timer.start()
        self.ip, self.port = httpd.server_address[:2]
        self.url = f"http://{self.ip}:{self.port}"
        return self

    def _stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._stop()


def call_once(func: Callable) -> Callable:
    """Decorate a function so that only its first call runs. Thread-safe.

    Args:
        func: The function.

    Returns:
        A wrapper whose later calls return the first call's result (whatever their
        arguments).
    """
    lock = threading.Lock()
    done = False
    result: Any = None

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal done, result
        with lock:
            if not done:
                result = func(*args, **kwargs)
                done = True
        return result

    return wrapper


def kvikio_deprecation_notice(
    msg: str = "This function is deprecated.", *, since: str
) -> Callable[[Callable], Callable]:
    """Decorate a function so that each call warns that it is deprecated.

    The warning is a :class:`~kvikio.errors.KvikioDeprecationWarning` (a ``FutureWarning``
    and a ``DeprecationWarning``) pointing at the caller; the docstring starts with a
    Sphinx ``deprecated`` note.

    Args:
        msg: The warning's message.
        since: The version that deprecated the function.

    Returns:
        The decorator.
    """

    def decorator(func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            warnings.warn(msg, category=KvikioDeprecationWarning, stacklevel=2)
            return func(*args, **kwargs)

        # cleandoc: the original's indented lines must line up with the note's.
        doc = inspect.cleandoc(func.__doc__ or "")
        wrapper.__doc__ = f".. deprecated:: {since} {msg}\n\n{doc}"
        return wrapper

    return decorator


def kvikio_deprecate_module(msg: str = "", *, since: str) -> None:
    """Warn (:class:`~kvikio.errors.KvikioDeprecationWarning`) that the calling module is
    deprecated; call it at the top of the module.

    Args:
        msg: What to use instead.
        since: The version that deprecated the module.
    """
    warnings.warn(
        f"This module is deprecated since {since}. {msg}",
        category=KvikioDeprecationWarning,
        stacklevel=2,
    )
