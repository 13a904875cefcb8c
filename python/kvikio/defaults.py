"""Process-wide settings of kvikio (the C++ library's ``kvikio::defaults``).

Each starts from its environment variable (or its default) and can be changed at run time::

    kvikio.defaults.get("num_threads")
    kvikio.defaults.set({"num_threads": 16, "task_size": 8 * 1024 * 1024})
    kvikio.defaults.set("compat_mode", kvikio.CompatMode.ON)
    with kvikio.defaults.set("num_threads", 4):
        ...  # restored on exit

======================  ============================  =========================
key                     environment variable          default
======================  ============================  =========================
compat_mode             KVIKIO_COMPAT_MODE            CompatMode.AUTO
num_threads             KVIKIO_NTHREADS               1
task_size               KVIKIO_TASK_SIZE              4 MiB
gds_threshold           KVIKIO_GDS_THRESHOLD          16 KiB
bounce_buffer_size      KVIKIO_BOUNCE_BUFFER_SIZE     16 MiB
auto_direct_io_read     KVIKIO_AUTO_DIRECT_IO_READ    False
auto_direct_io_write    KVIKIO_AUTO_DIRECT_IO_WRITE   True
http_max_attempts       KVIKIO_HTTP_MAX_ATTEMPTS      3
http_status_codes       KVIKIO_HTTP_STATUS_CODES      [429, 500, 502, 503, 504]
http_timeout            KVIKIO_HTTP_TIMEOUT           60 (seconds)
======================  ============================  =========================

Unknown keys raise ``KeyError``; bad values raise ``ValueError`` naming the setting.
"""

from __future__ import annotations

from typing import Any

from kvikio import _lib
from kvikio._lib import CompatMode
from kvikio._settings import SettingsContext, updates_from_args

__all__ = ["get", "set", "keys", "is_compat_mode_preferred"]


def keys() -> list[str]:
    """The names of all settings."""
    return list(_lib.defaults_keys())


def get(key: str) -> Any:
    """The current value of setting ``key``. Raises ``KeyError`` for an unknown key."""
    return _lib.defaults_get(key)


def set(*args: Any, **kwargs: Any) -> SettingsContext:
    """Set one or more settings: ``set({"k": v, ...})``, ``set("k", v)`` or ``set(k=v)``.

    All keys are checked before anything changes; if a value is rejected, the settings
    already changed by this call are put back. The result may be used as a context manager
    that restores the previous values on exit.
    """
    return SettingsContext(updates_from_args(args, kwargs, "set"), get, _lib.defaults_set)


def is_compat_mode_preferred() -> bool:
    """True when files opened now would use POSIX IO rather than cuFile."""
    mode = get("compat_mode")
    if mode == CompatMode.ON:
        return True
    if mode == CompatMode.OFF:
        return False
    return not _lib.driver_is_gds_available()
