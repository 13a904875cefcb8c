"""Process-wide settings of kvikio (the C++ library's ``kvikio::defaults``).

Each starts from its environment variable (or its default) and can be changed at run time::

    kvikio.defaults.get("num_threads")
    kvikio.defaults.set({"num_threads": 16, "task_size": 8 * 1024 * 1024})
    kvikio.defaults.set("compat_mode", kvikio.CompatMode.ON)
    with kvikio.defaults.set("num_threads", 4):
        ...  # restored on exit

``keys()`` lists the settings. Their environment variables, defaults and accepted values are
defined once, in the C++ library's settings table (``kvikio::defaults``); ``kvikio info``
prints each with its variable, current value and source. ``compat_mode`` takes a
``CompatMode`` or its name (``"on"``, ``"OFF"``, ``"auto"``).

Unknown keys raise ``KeyError``; bad values raise ``ValueError`` naming the setting.
"""

from __future__ import annotations

from typing import Any

from kvikio import _lib
from kvikio._settings import SettingsContext, updates_from_args, upstream_typed

__all__ = ["ConfigContextManager", "get", "set", "keys", "is_compat_mode_preferred"]

ConfigContextManager = SettingsContext
"""What :func:`set` returns (upstream's name): the values are applied at once; as a context
manager it restores the previous ones on exit."""

# Upstream's undocumented alias of num_threads (its C++ name).
_ALIASES = {"thread_pool_nthreads": "num_threads"}


def keys() -> list[str]:
    """The names of all settings.

    Returns:
        The setting names, in the order of the C++ settings table.
    """
    return list(_lib.defaults_keys())


def get(key: str) -> Any:
    """The current value of a setting.

    Args:
        key: The setting's name (see :func:`keys`).

    Returns:
        Its value; for ``compat_mode`` a :class:`~kvikio.CompatMode`.

    Raises:
        KeyError: ``key`` is not a setting.
    """
    return _lib.defaults_get(_ALIASES.get(key, key) if isinstance(key, str) else key)


def set(*args: Any, **kwargs: Any) -> SettingsContext:
    """Set one or more settings: ``set({"k": v, ...})``, ``set("k", v)`` or ``set(k=v)``.

    All keys are checked before anything changes; if a value is rejected, the settings
    already changed by this call are put back.

    Args:
        *args: A dict of settings and values, or a setting's name and its value.
        **kwargs: Settings and values as keywords.

    Returns:
        A context manager; used with ``with``, it restores the previous values on exit.

    Raises:
        KeyError: An unknown setting.
        ValueError: A value the setting does not accept; the message names the setting
            (a negative count is :class:`~kvikio.errors.NegativeSettingError`, also an
            ``OverflowError``; a value of the wrong type is
            :class:`~kvikio.errors.SettingTypeError`, also a ``TypeError``).
        TypeError: Neither a dict nor a name and a value
            (:class:`~kvikio.errors.SetArgumentsError`).
    """
    updates = {
        _ALIASES.get(k, k): v for k, v in updates_from_args(args, kwargs, "set").items()
    }
    return SettingsContext(updates, get, upstream_typed(_lib.defaults_set, get))


def is_compat_mode_preferred() -> bool:
    """Whether files opened now would use POSIX IO rather than cuFile.

    The library decides (the same answer as C++ ``defaults::is_compat_mode_preferred``): ON
    means POSIX, OFF cuFile, and AUTO cuFile only where GPUDirect Storage really works
    (libcufile loads, its driver opens and nvidia-fs is present).

    Returns:
        True for POSIX IO, False for cuFile.
    """
    return _lib.is_compat_mode_preferred()
