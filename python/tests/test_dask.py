"""Dask end to end: a distributed.LocalCluster of 2 worker processes reads zarr arrays through
GDSStore and through zarr's FsspecStore over kvikio's fsspec file systems (loopback HTTP,
moto S3, WebHDFS); results are compared element by element with the source, and settings
reach the workers through kvikio.dask.KvikioSettings. One cluster for the module."""

from __future__ import annotations

import uuid

import numpy as np
import pytest


da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
zarr = pytest.importorskip("zarr")
pytest.importorskip("fsspec")

from kvikio.dask import KvikioSettings  # noqa: E402
from kvikio.zarr import GDSStore  # noqa: E402
from zarr.storage import FsspecStore  # noqa: E402

WORKER_SETTINGS = {"num_threads": 3, "task_size": (1 << 20) + 4096, "http_max_attempts": 5}


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=2, dashboard_address=None, silence_logs=40
    )
    c = distributed.Client(cluster)
    c.register_plugin(KvikioSettings(WORKER_SETTINGS))
    yield c
    c.close()
    cluster.close()


def _worker_settings() -> dict:
    import os

    import kvikio.defaults

    return {"pid": os.getpid(), **{k: kvikio.defaults.get(k) for k in WORKER_SETTINGS}}


def test_settings_reach_every_worker_process(client):
    got = client.run(_worker_settings)
    assert len(got) == 2
    pids = {v["pid"] for v in got.values()}
    assert len(pids) == 2
    import os

    assert os.getpid() not in pids  # separate processes
    for v in got.values():
        assert {k: v[k] for k in WORKER_SETTINGS} == WORKER_SETTINGS


def _source(rng) -> np.ndarray:
    return rng.standard_normal((300, 170)).astype("float64")


def _check(arr: zarr.Array, a: np.ndarray, client) -> None:
    d = da.from_zarr(arr)
    assert d.npartitions > 4
    got = client.compute(d).result()
    np.testing.assert_array_equal(got, a)
    np.testing.assert_array_equal(client.compute(d[17:251, 5:160]).result(), a[17:251, 5:160])


def test_gdsstore_read_on_two_worker_processes(client, tmp_path, rng):
    a = _source(rng)
    z = zarr.create_array(GDSStore(tmp_path / "a.zarr"), shape=a.shape, chunks=(64, 50), dtype=a.dtype)
    z[:] = a
    _check(zarr.open_array(GDSStore(tmp_path / "a.zarr", read_only=True)), a, client)


def test_fsspec_store_over_http_on_two_worker_processes(client, http_server, rng):
    a = _source(rng)
    name = f"dask-{uuid.uuid4().hex}"
    zarr.create_array(str(http_server.root / name), shape=a.shape, chunks=(64, 50), dtype=a.dtype)[:] = a
    store = FsspecStore.from_url(f"kvikio+{http_server.url(name)}", read_only=True)
    _check(zarr.open_array(store), a, client)


def test_fsspec_store_over_s3_on_two_worker_processes(client, s3_server, rng):
    a = _source(rng)
    opts = {
        "key": s3_server.key,
        "secret": s3_server.secret,
        "endpoint_url": s3_server.endpoint,
        "client_kwargs": {"region_name": "us-east-1"},
    }
    url = f"kvikio+s3://my-bucket/dask-{uuid.uuid4().hex}"
    zarr.create_array(FsspecStore.from_url(url, storage_options=opts), shape=a.shape, chunks=(64, 50), dtype=a.dtype)[:] = a
    _check(zarr.open_array(FsspecStore.from_url(url, storage_options=opts, read_only=True)), a, client)


def test_fsspec_store_over_webhdfs_on_two_worker_processes(client, webhdfs_server, rng):
    a = _source(rng)
    url = f"kvikio+webhdfs://127.0.0.1:{webhdfs_server.port}/dask-{uuid.uuid4().hex}"
    zarr.create_array(FsspecStore.from_url(url), shape=a.shape, chunks=(64, 50), dtype=a.dtype)[:] = a
    _check(zarr.open_array(FsspecStore.from_url(url, read_only=True)), a, client)


def test_xarray_open_zarr_over_gdsstore_on_two_worker_processes(client, tmp_path, rng):
    xr = pytest.importorskip("xarray")
    a = _source(rng)
    ds = xr.Dataset({"t": (("y", "x"), a)}, coords={"y": np.arange(a.shape[0]), "x": np.arange(a.shape[1])})
    ds.to_zarr(GDSStore(tmp_path / "x.zarr"), zarr_format=3, consolidated=False,
               encoding={"t": {"chunks": (64, 50)}})
    back = xr.open_zarr(GDSStore(tmp_path / "x.zarr", read_only=True), consolidated=False)
    assert back["t"].chunks is not None  # dask-backed
    got = client.compute(back["t"].data).result()
    np.testing.assert_array_equal(got, a)
    np.testing.assert_array_equal(back["y"].values, np.arange(a.shape[0]))
