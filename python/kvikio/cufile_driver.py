"""Properties of the cuFile (GPUDirect Storage) driver.

``get(key)`` reads one; ``set({...})`` / ``set(key, value)`` changes the settable ones and,
used as a context manager, restores the previous values on exit. Unknown keys raise
``KeyError``; setting a read-only property raises ``ValueError``. ``is_gds_available`` says
whether GPUDirect Storage proper (nvidia-fs) is present; without a usable cuFile library,
it is False and reading any other property raises ``RuntimeError``.

Sizes are in KiB, as in cuFile.
"""

from __future__ import annotations

from typing import Any

from kvikio import _lib
from kvikio._settings import SettingsContext, keys_list, updates_from_args

__all__ = ["get", "set", "keys"]

# name -> (type, settable)
_PROPERTIES: dict[str, tuple[type, bool]] = {
    "is_gds_available": (bool, False),
    "major_version": (int, False),
    "minor_version": (int, False),
    "allow_compat_mode": (bool, False),
    "poll_mode": (bool, True),
    "poll_thresh_size": (int, True),
    "max_device_cache_size": (int, True),
    "per_buffer_cache_size": (int, False),
    "max_pinned_memory_size": (int, True),
    "max_batch_io_size": (int, False),
}


def keys() -> list[str]:
    """The names of all driver properties."""
    return list(_PROPERTIES)


def _check_key(key: str) -> tuple[type, bool]:
    try:
        return _PROPERTIES[key]
    except (KeyError, TypeError):
        raise KeyError(
            f"unknown cuFile driver property {key!r} (known: {keys_list(_PROPERTIES)})"
        ) from None


def get(key: str) -> Any:
    """The current value of driver property ``key``."""
    kind, _ = _check_key(key)
    if key == "is_gds_available":
        return bool(_lib.driver_is_gds_available())
    try:
        return kind(_lib.driver_get(key))
    except RuntimeError as e:
        if key in str(e):
            raise
        raise RuntimeError(f"cannot read cuFile driver property {key!r}: {e}") from e


def _validate(key: str, value: Any) -> None:
    kind, settable = _check_key(key)
    if not settable:
        raise ValueError(f"cuFile driver property {key!r} is read-only")
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"cuFile driver property {key!r} needs True or False, got {value!r}")
    elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"cuFile driver property {key!r} needs a non-negative integer, got {value!r}"
        )


def _set_one(key: str, value: Any) -> None:
    _validate(key, value)
    kind, _ = _PROPERTIES[key]
    try:
        _lib.driver_set(key, int(value), kind is bool)
    except RuntimeError as e:
        if key in str(e):
            raise
        raise RuntimeError(f"cannot set cuFile driver property {key!r}: {e}") from e


def _get_for_restore(key: str) -> Any:
    kind, settable = _check_key(key)
    if not settable:
        raise ValueError(f"cuFile driver property {key!r} is read-only")
    return get(key)


def set(*args: Any, **kwargs: Any) -> SettingsContext:
    """Set driver properties: ``set({"poll_mode": True})`` or ``set("poll_mode", True)``.

    Usable as a context manager that restores the previous values on exit.
    """
    updates = updates_from_args(args, kwargs, "set")
    for key, value in updates.items():  # every key and value, before anything is read or set
        _validate(key, value)
    return SettingsContext(updates, _get_for_restore, _set_one)
