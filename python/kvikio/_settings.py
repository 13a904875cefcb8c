"""The get/set machinery shared by kvikio.defaults and kvikio.cufile_driver."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from kvikio.errors import NegativeSettingError, SetArgumentsError, SettingTypeError


class SettingsContext:
    """The result of ``set(...)``: the values are already applied when it is created.

    Used as a plain call, the values stay. Used as a context manager, the previous values are
    restored on exit (in reverse order), whether or not the block raised. Made by
    :func:`kvikio.defaults.set` and :func:`kvikio.cufile_driver.set`, not directly.

    Args:
        updates: The names and new values.
        getter: Reads a value (to restore it later).
        setter: Sets a value.

    Raises:
        KeyError: An unknown name (before anything changes).
        ValueError: A value the setter refused; the values set before it are put back.
    """

    def __init__(
        self,
        updates: Mapping[str, Any],
        getter: Callable[[str], Any],
        setter: Callable[[str, Any], None],
    ) -> None:
        self._previous: list[tuple[str, Any]] = []
        self._setter = setter
        # Read every old value first: an unknown key raises KeyError before anything changes.
        old = [(key, getter(key)) for key in updates]
        try:
            for (key, previous), value in zip(old, updates.values()):
                setter(key, value)
                self._previous.append((key, previous))
        except BaseException:
            self._restore()  # all or nothing
            raise

    def _restore(self) -> None:
        while self._previous:
            key, value = self._previous.pop()
            self._setter(key, value)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        self._restore()


def updates_from_args(args: tuple, kwargs: dict, func: str) -> dict[str, Any]:
    """``set({"a": 1, "b": 2})``, ``set("a", 1)`` or ``set(a=1)`` -> {"a": 1, ...}."""
    if len(args) == 1 and isinstance(args[0], Mapping):
        updates = dict(args[0])
    elif len(args) == 2 and isinstance(args[0], str):
        updates = {args[0]: args[1]}
    elif not args:
        updates = {}
    else:
        raise SetArgumentsError(
            f"{func}() takes a dict of settings or a key and a value, got {args!r}"
        )
    overlap = set(updates) & set(kwargs)
    if overlap:
        raise TypeError(f"{func}() got {sorted(overlap)} both positionally and as keywords")
    updates.update(kwargs)
    for key in updates:
        if not isinstance(key, str):
            raise KeyError(f"setting names are strings, got {key!r}")
    return updates


def is_negative_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value < 0


def upstream_typed(
    setter: Callable[[str, Any], None], getter: Callable[[str], Any]
) -> Callable[[str, Any], None]:
    """``setter`` whose ValueError is also the class upstream raises for the value: a
    :class:`NegativeSettingError` (an OverflowError) for a negative integer, a
    :class:`SettingTypeError` (a TypeError) for a value of another type than the setting's
    (an int for a list of status codes, a str for a count). The message is the library's."""

    def set_one(key: str, value: Any) -> None:
        try:
            setter(key, value)
        except (NegativeSettingError, SettingTypeError):
            raise
        except ValueError as e:
            if is_negative_int(value):
                raise NegativeSettingError(str(e)) from None
            current = getter(key)
            if not isinstance(value, type(current)) and not (
                isinstance(current, list) and isinstance(value, (tuple, set, frozenset))
            ):
                raise SettingTypeError(str(e)) from None
            if isinstance(current, list) and not all(
                isinstance(v, int) and not isinstance(v, bool) for v in value
            ):
                raise SettingTypeError(str(e)) from None
            raise

    return set_one


def keys_list(keys: Iterable[str]) -> str:
    return ", ".join(keys)
