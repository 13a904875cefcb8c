"""kvikio on Dask workers: :class:`KvikioSettings`, a ``distributed`` worker plugin that
applies :mod:`kvikio.defaults` (and, optionally, zarr's config) on every worker, those
already running and those that join later.

Settings are per process: values set in the client with :func:`kvikio.defaults.set` do not
reach worker processes by themselves. Register the plugin once::

    from distributed import Client
    from kvikio.dask import KvikioSettings

    client = Client(cluster)
    client.register_plugin(KvikioSettings({"num_threads": 8, "task_size": 4 << 20}))
    # or KvikioSettings() to copy every setting of this process as it is now

The plugin pickles its settings as values (``compat_mode`` by name); the stores and files
that the tasks carry pickle themselves (see :class:`kvikio.CuFile`, :class:`kvikio.RemoteFile`,
:mod:`kvikio.fsspec`).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import kvikio.defaults

try:
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError as e:  # pragma: no cover - exercised where distributed is missing
    raise ImportError("kvikio.dask needs distributed (pip install 'kvikio[dask]')") from e

__all__ = ["KvikioSettings", "settings_snapshot"]


def settings_snapshot() -> dict[str, Any]:
    """Every :mod:`kvikio.defaults` setting of this process, as picklable values.

    Returns:
        ``{name: value}``; ``compat_mode`` by its name, lists as lists.
    """
    out = {}
    for key in kvikio.defaults.keys():
        value = kvikio.defaults.get(key)
        if key == "compat_mode":
            value = value.name
        elif isinstance(value, tuple):
            value = list(value)
        out[key] = value
    return out


class KvikioSettings(WorkerPlugin):
    """Applies kvikio settings on every worker (``setup`` runs on each, joining ones too).

    Args:
        settings: ``{name: value}`` for :func:`kvikio.defaults.set`; None copies every
            setting of this process now (:func:`settings_snapshot`).
        zarr_config: Optional ``zarr.config.set`` values for the workers, e.g.
            ``{"buffer": "zarr.buffer.gpu.Buffer", "ndbuffer": "zarr.buffer.gpu.NDBuffer"}``
            (what ``zarr.config.enable_gpu()`` sets).

    Raises:
        KeyError: An unknown setting (checked here, in the client, before registering).
    """

    name = "kvikio-settings"

    def __init__(
        self, settings: Optional[Mapping[str, Any]] = None, zarr_config: Optional[Mapping[str, Any]] = None
    ) -> None:
        self.settings = dict(settings_snapshot() if settings is None else settings)
        known = set(kvikio.defaults.keys())
        unknown = sorted(set(self.settings) - known)
        if unknown:
            raise KeyError(f"KvikioSettings: unknown kvikio settings {', '.join(unknown)}")
        self.zarr_config = dict(zarr_config or {})

    def setup(self, worker: Any = None) -> None:
        """On the worker: apply the settings (and the zarr config)."""
        kvikio.defaults.set(self.settings)
        if self.zarr_config:
            import zarr

            zarr.config.set(self.zarr_config)

    def __repr__(self) -> str:
        return f"KvikioSettings({self.settings!r})"
