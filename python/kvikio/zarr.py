"""Zarr v3 store on kvikio (``GDSStore``): pending (zarr issue).

Importing this module raises ImportError with the reason, as a missing optional feature.
"""

raise ImportError(
    "kvikio.zarr is not available in this build: the Zarr GDSStore is pending (zarr issue)"
)
