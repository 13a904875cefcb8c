"""Remote files (HTTP, S3, WebHDFS): :class:`RemoteFile`.

Remote IO is not part of this build yet (it comes with the remote issue). Every way of
opening a remote file raises ``RuntimeError`` saying so; :func:`is_remote_file_available`
returns False.
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["RemoteFile", "is_remote_file_available"]

_MESSAGE = (
    "kvikio.RemoteFile is not available in this build: remote IO (HTTP, S3, WebHDFS) "
    "support is pending (remote issue)"
)


def is_remote_file_available() -> bool:
    """Whether remote IO is available in this build."""
    return False


def _unavailable(url: Any = None) -> NoReturn:
    raise RuntimeError(_MESSAGE + (f"; cannot open {url!r}" if url is not None else ""))


class RemoteFile:
    """A remote file (not available in this build: see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _unavailable()

    @classmethod
    def open_http(cls, url: str, nbytes: Any = None) -> "RemoteFile":
        _unavailable(url)

    @classmethod
    def open_s3(cls, bucket_name: str, object_name: str, nbytes: Any = None, **kwargs: Any) -> "RemoteFile":
        _unavailable(f"s3://{bucket_name}/{object_name}")

    @classmethod
    def open_s3_url(cls, url: str, nbytes: Any = None, **kwargs: Any) -> "RemoteFile":
        _unavailable(url)

    @classmethod
    def open_s3_public(cls, url: str, nbytes: Any = None) -> "RemoteFile":
        _unavailable(url)

    @classmethod
    def open_s3_presigned_url(cls, presigned_url: str, nbytes: Any = None) -> "RemoteFile":
        _unavailable(presigned_url)

    @classmethod
    def open_webhdfs(cls, url: str, nbytes: Any = None) -> "RemoteFile":
        _unavailable(url)

    @classmethod
    def open(cls, url: str, nbytes: Any = None, **kwargs: Any) -> "RemoteFile":
        _unavailable(url)
