"""Properties of the cuFile (GPUDirect Storage) driver.

``get(key)`` reads one; ``set({...})`` / ``set(key, value)`` changes the settable ones and,
used as a context manager, restores the previous values on exit. Unknown keys raise
``KeyError``; setting a read-only property raises ``ValueError``. ``is_gds_available`` says
whether GPUDirect Storage proper (nvidia-fs) is present; without a usable cuFile library,
it is False and reading any other property raises ``RuntimeError``.

Sizes are in KiB, as in cuFile.
"""

from __future__ import annotations

import atexit
from typing import Any, Tuple

from kvikio import _lib
from kvikio._settings import SettingsContext, is_negative_int, keys_list, updates_from_args
from kvikio.errors import NegativeSettingError, ReadOnlyPropertyError

__all__ = [
    "ConfigContextManager",
    "DriverProperties",
    "driver_close",
    "driver_open",
    "get",
    "initialize",
    "keys",
    "libcufile_version",
    "properties",
    "set",
]

ConfigContextManager = SettingsContext
"""What :func:`set` returns (upstream's name): applied at once; as a context manager it
restores the previous values on exit."""

# name -> (type, settable), from the library's one table of them (gds/driver.cpp).
_PROPERTIES: dict[str, tuple[type, bool]] = {
    name: (bool if is_flag else int, settable)
    for name, is_flag, settable in _lib.driver_properties()
}


def keys() -> list[str]:
    """The names of all driver properties.

    Returns:
        The property names, read-only ones included.
    """
    return list(_PROPERTIES)


def _check_key(key: str) -> tuple[type, bool]:
    try:
        return _PROPERTIES[key]
    except (KeyError, TypeError):
        raise KeyError(
            f"unknown cuFile driver property {key!r} (known: {keys_list(_PROPERTIES)})"
        ) from None


def get(key: str) -> Any:
    """The current value of a driver property.

    Args:
        key: The property's name (see :func:`keys`).

    Returns:
        Its value, a bool or an int.

    Raises:
        KeyError: ``key`` is not a driver property.
        RuntimeError: cuFile cannot be loaded or its driver cannot be read.
    """
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
        raise ReadOnlyPropertyError(f"cuFile driver property {key!r} is read-only")
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"cuFile driver property {key!r} needs True or False, got {value!r}")
    elif is_negative_int(value):
        raise NegativeSettingError(  # "negative value": what upstream's callers match
            f"cuFile driver property {key!r} needs a non-negative integer, got {value!r} "
            "(a negative value)"
        )
    elif isinstance(value, bool) or not isinstance(value, int):
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
        raise ReadOnlyPropertyError(f"cuFile driver property {key!r} is read-only")
    return get(key)


def set(*args: Any, **kwargs: Any) -> SettingsContext:
    """Set driver properties: ``set({"poll_mode": True})``, ``set("poll_mode", True)`` or
    ``set(poll_mode=True)``.

    Every key and value is checked before anything is set.

    Args:
        *args: A dict of properties and values, or a property's name and its value.
        **kwargs: Properties and values as keywords.

    Returns:
        A context manager; used with ``with``, it restores the previous values on exit.

    Raises:
        KeyError: An unknown property.
        ValueError: A read-only property (:class:`~kvikio.errors.ReadOnlyPropertyError`, also
            a ``KeyError``) or a value of the wrong type or sign.
        TypeError: Neither a dict nor a name and a value
            (:class:`~kvikio.errors.SetArgumentsError`).
        RuntimeError: cuFile cannot be loaded or refused the value.
    """
    updates = updates_from_args(args, kwargs, "set")
    for key, value in updates.items():  # every key and value, before anything is read or set
        _validate(key, value)
    return SettingsContext(updates, _get_for_restore, _set_one)


class DriverProperties:
    """The driver properties as attributes (``properties.poll_mode``, ...): reading one is
    :func:`get`, assigning a settable one is :func:`set`; the read-only ones have no setter
    (``AttributeError``)."""

    def __repr__(self) -> str:
        return "<kvikio.cufile_driver.properties>"


def _attribute(name: str, settable: bool) -> property:
    def fget(self: DriverProperties) -> Any:
        return get(name)

    def fset(self: DriverProperties, value: Any) -> None:
        _set_one(name, value)

    return property(fget, fset if settable else None, doc=f"The ``{name}`` property.")


for _name, (_kind, _settable) in _PROPERTIES.items():
    setattr(DriverProperties, _name, _attribute(_name, _settable))

properties = DriverProperties()
"""The cuFile driver properties as attributes (see :class:`DriverProperties`)."""


def libcufile_version() -> Tuple[int, int]:
    """The version of the libcufile loaded (not of the CUDA toolkit).

    Returns:
        ``(major, minor)``: ``(1, 15)`` for 1.15; ``(0, 0)`` when cuFile is not loaded or
        too old to say (before 1.8).
    """
    major, rest = divmod(int(_lib.libcufile_version()), 1000)
    return (major, rest // 10)


def driver_open() -> None:
    """Open the cuFile driver. Each call must be matched by a :func:`driver_close`; opening
    is otherwise automatic.

    Raises:
        RuntimeError: cuFile is not usable here.
    """
    _lib.driver_open()


def driver_close() -> None:
    """Undo one :func:`driver_open` (nothing if none is open)."""
    _lib.driver_close()


def initialize() -> None:
    """Open the cuFile driver now, and close it when the interpreter exits.

    Raises:
        RuntimeError: cuFile is not usable here.
    """
    driver_open()
    atexit.register(driver_close)
