"""Exception classes that are instances of two built-in classes at once.

Ours raises the class a Python user expects (``FileNotFoundError`` for a missing file,
``ValueError`` for a bad URL, ...); upstream KvikIO raises, for the same errors, what its
Cython layer makes of a C++ exception (mostly ``RuntimeError``, ``OverflowError`` for a
negative setting, ``KeyError`` for a read-only driver property). Each class here derives
from both, so ``except`` clauses written either way keep working::

    try:
        kvikio.CuFile("/no/such/file")
    except RuntimeError:          # upstream's class
        ...
    except FileNotFoundError:     # ours (the same exception object)
        ...

The messages are the library's own: they name the file, offset, URL or value.
"""

from __future__ import annotations

import builtins
from typing import Dict, Type

__all__ = [
    "ArgumentTypeError",
    "ClosedFileError",
    "EndOfFileError",
    "InvalidArgumentError",
    "KvikioDeprecationWarning",
    "KvikioOSError",
    "NegativeSettingError",
    "NotSupportedError",
    "ReadOnlyPropertyError",
    "RemoteURLError",
    "SetArgumentsError",
    "SettingTypeError",
    "os_error",
]


class KvikioOSError(OSError, RuntimeError):
    """An OS call failed (``errno`` and ``filename`` as in ``OSError``); also a
    ``RuntimeError``, which is what upstream KvikIO raises for it."""


# The OSError subclasses Python picks from errno, each paired with RuntimeError. Created on
# first use for the rarer ones; the common ones are named here so that they can be
# documented and imported.
class KvikioFileNotFoundError(FileNotFoundError, KvikioOSError):
    """A missing file (``ENOENT``): a ``FileNotFoundError`` and a ``RuntimeError``."""


class KvikioPermissionError(PermissionError, KvikioOSError):
    """``EACCES``/``EPERM``: a ``PermissionError`` and a ``RuntimeError``."""


class KvikioIsADirectoryError(IsADirectoryError, KvikioOSError):
    """``EISDIR``: an ``IsADirectoryError`` and a ``RuntimeError``."""


class KvikioNotADirectoryError(NotADirectoryError, KvikioOSError):
    """``ENOTDIR``: a ``NotADirectoryError`` and a ``RuntimeError``."""


class KvikioFileExistsError(FileExistsError, KvikioOSError):
    """``EEXIST``: a ``FileExistsError`` and a ``RuntimeError``."""


_OS_ERRORS: Dict[type, Type[KvikioOSError]] = {
    builtins.OSError: KvikioOSError,
    builtins.FileNotFoundError: KvikioFileNotFoundError,
    builtins.PermissionError: KvikioPermissionError,
    builtins.IsADirectoryError: KvikioIsADirectoryError,
    builtins.NotADirectoryError: KvikioNotADirectoryError,
    builtins.FileExistsError: KvikioFileExistsError,
}


def os_error(errno: int, message: str) -> KvikioOSError:
    """The exception for an OS error, also a ``RuntimeError``.

    Args:
        errno: The ``errno`` value.
        message: The message (it names the file).

    Returns:
        An instance of the ``OSError`` subclass Python gives ``errno``
        (``FileNotFoundError`` for ``ENOENT``, ...) that derives from
        :class:`KvikioOSError` too.
    """
    base = type(builtins.OSError(errno, message))
    cls = _OS_ERRORS.get(base)
    if cls is None:
        cls = type("Kvikio" + base.__name__, (base, KvikioOSError), {"__module__": __name__})
        _OS_ERRORS[base] = cls
    return cls(errno, message)


class InvalidArgumentError(ValueError, RuntimeError):
    """A bad argument the C++ library refused (``std::invalid_argument``): a wrong open mode
    for the call (a write to a file opened ``"r"``), a bad URL, a bad value. A ``ValueError``
    (ours) and a ``RuntimeError``, which upstream raises for most of these."""


class RemoteURLError(InvalidArgumentError):
    """A URL that no (allowed) remote endpoint type accepts, or missing credentials: a
    ``ValueError`` (ours) and a ``RuntimeError`` (upstream's "Unsupported endpoint URL")."""


class ClosedFileError(InvalidArgumentError):
    """IO on a closed ``CuFile``, ``Mmap`` or ``RemoteFile``: a ``ValueError`` (as for
    Python's own files) and a ``RuntimeError`` (upstream)."""


class EndOfFileError(RuntimeError, ValueError):
    """A read that runs past the end of a file or remote object. Upstream raises
    ``RuntimeError`` for local files and ``ValueError`` for remote ones; this is both."""


class NegativeSettingError(ValueError, OverflowError):
    """A negative value for a setting that counts something: a ``ValueError`` naming the
    setting (ours) and an ``OverflowError`` (upstream's conversion to an unsigned type)."""


class SettingTypeError(InvalidArgumentError, TypeError):
    """``defaults.set`` with a value of the wrong type (an int for ``http_status_codes``, a
    str for a count): a ``ValueError`` naming the setting (ours) and the ``TypeError``
    upstream's conversion raises."""


class ReadOnlyPropertyError(ValueError, KeyError):
    """``cufile_driver.set`` of a read-only property: a ``ValueError`` (ours) and a
    ``KeyError`` (upstream's "This property is read-only.")."""

    # KeyError's str() quotes its argument; this is a message, not a key.
    __str__ = BaseException.__str__


class ArgumentTypeError(TypeError, ValueError):
    """An argument of a type the call does not take (a float or a list for a file path): a
    ``TypeError`` (ours) and the ``ValueError`` upstream raises."""


class SetArgumentsError(TypeError, ValueError):
    """``defaults.set``/``cufile_driver.set`` called with neither a dict nor a key and a
    value: a ``TypeError`` (ours) and a ``ValueError`` (upstream)."""


class KvikioDeprecationWarning(DeprecationWarning, FutureWarning):
    """Warns of a deprecated name: a ``DeprecationWarning`` (ours) and the
    ``FutureWarning`` upstream issues. Shown by default, as a ``FutureWarning`` is
    (:mod:`kvikio.utils` adds a "default" filter for it)."""


class NotSupportedError(ValueError, NotImplementedError):
    """An argument value this implementation does not support (e.g. a text separator in
    :func:`kvikio.numpy.fromfile`): a ``ValueError`` (ours) and the
    ``NotImplementedError`` upstream raises."""
