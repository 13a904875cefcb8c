"""kvikio.fsspec: the fsspec file systems over local files, HTTP, S3 (moto) and WebHDFS, zarr's
FsspecStore over them, pickling of the file systems, files, stores and settings, and
``await`` on IOFuture. Data are random, sizes and offsets odd; results are compared byte for
byte with the files the servers serve."""

from __future__ import annotations

import asyncio
import io
import pickle
import uuid

import numpy as np
import pytest

import kvikio
import kvikio.defaults

fsspec = pytest.importorskip("fsspec")
kfs = pytest.importorskip("kvikio.fsspec")

RANGES_SEED = 20261201


def _random_ranges(size: int, count: int, seed: int = RANGES_SEED) -> tuple[list, list]:
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, size, count)
    lengths = rng.integers(0, 70_000, count)
    return [int(s) for s in starts], [int(min(size, s + n)) for s, n in zip(starts, lengths)]


def _s3_options(s3_server) -> dict:
    return {
        "key": s3_server.key,
        "secret": s3_server.secret,
        "endpoint_url": s3_server.endpoint,
        "client_kwargs": {"region_name": "us-east-1"},
    }


# -- registration -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "protocol, cls",
    [
        ("kvikio", "KvikioLocalFileSystem"),
        ("kvikio+file", "KvikioLocalFileSystem"),
        ("kvikio+http", "KvikioHTTPFileSystem"),
        ("kvikio+https", "KvikioHTTPFileSystem"),
        ("kvikio+s3", "KvikioS3FileSystem"),
        ("kvikio+webhdfs", "KvikioWebHDFSFileSystem"),
    ],
)
def test_protocols_are_registered_through_the_entry_point(protocol, cls):
    assert fsspec.get_filesystem_class(protocol) is getattr(kfs, cls)
    assert fsspec.get_filesystem_class(protocol).async_impl


def test_unknown_storage_option_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="unknown storage_options secrett"):
        fsspec.filesystem("kvikio+s3", secrett="x", skip_instance_cache=True)
    with pytest.raises(TypeError, match="unknown client_kwargs region"):
        fsspec.filesystem("kvikio+s3", client_kwargs={"region": "x"}, skip_instance_cache=True)


# -- local --------------------------------------------------------------------------------
@pytest.fixture
def local_file(tmp_path, random_bytes):
    data = random_bytes(1_000_003).tobytes()
    path = tmp_path / "sub" / "data.bin"
    path.parent.mkdir()
    path.write_bytes(data)
    return path, data


def test_local_cat_file_and_slices(local_file):
    path, data = local_file
    fs = fsspec.filesystem("kvikio")
    assert fs.cat_file(str(path)) == data
    assert fs.cat_file(f"kvikio://{path}", start=4097, end=900_001) == data[4097:900_001]
    assert fs.cat_file(str(path), start=-12_345) == data[-12_345:]
    assert fs.cat_file(str(path), start=10, end=-10) == data[10:-10]
    assert fs.cat_file(str(path), start=999_990, end=2_000_000) == data[999_990:]
    assert fs.cat_file(str(path), start=5, end=5) == b""


def test_local_cat_ranges_across_files(local_file, tmp_path, random_bytes):
    path, data = local_file
    other = tmp_path / "other.bin"
    other_data = random_bytes(77_777).tobytes()
    other.write_bytes(other_data)
    starts, ends = _random_ranges(len(data), 300)
    paths = [str(path)] * 300 + [str(other)] * 2
    starts += [3, 70_000]
    ends += [9_999, 99_999]
    fs = fsspec.filesystem("kvikio")
    got = fs.cat_ranges(paths, starts, ends)
    want = [data[s:e] for s, e in zip(starts[:300], ends[:300])] + [other_data[3:9_999], other_data[70_000:]]
    assert got == want


def test_local_missing_file(tmp_path):
    fs = fsspec.filesystem("kvikio")
    with pytest.raises(FileNotFoundError):
        fs.cat_file(str(tmp_path / "missing"))
    assert not fs.exists(str(tmp_path / "missing"))
    got = fs.cat_ranges([str(tmp_path / "missing")], [0], [1])
    assert isinstance(got[0], FileNotFoundError)
    with pytest.raises(FileNotFoundError):
        fs.cat_ranges([str(tmp_path / "missing")], [0], [1], on_error="raise")


def test_local_open_read_seek_tell_readinto(local_file):
    path, data = local_file
    fs = fsspec.filesystem("kvikio")
    with fs.open(str(path), "rb") as f:
        assert f.size == len(data) and f.seekable() and f.readable() and not f.writable()
        assert f.read(10) == data[:10]
        assert f.tell() == 10
        f.seek(-100, 2)
        assert f.read() == data[-100:]
        assert f.read(5) == b""  # at the end
        f.seek(500_001)
        buf = np.empty(123_457, dtype=np.uint8)
        assert f.readinto(buf) == buf.nbytes
        assert buf.tobytes() == data[500_001 : 500_001 + 123_457]
        f.seek(3, 1)
        assert f.tell() == 500_001 + 123_457 + 3
        with pytest.raises(ValueError, match="negative position"):
            f.seek(-1)
    with pytest.raises(ValueError, match="closed file"):
        f.read(1)


def test_local_pipe_put_ls_info_rm(tmp_path, random_bytes):
    fs = fsspec.filesystem("kvikio")
    data = random_bytes(65_539).tobytes()
    target = tmp_path / "new" / "deep" / "x.bin"
    fs.pipe_file(str(target), data)
    assert target.read_bytes() == data
    src = tmp_path / "src.bin"
    src.write_bytes(data[::-1])
    fs.put_file(str(src), str(tmp_path / "new" / "y.bin"))
    assert (tmp_path / "new" / "y.bin").read_bytes() == data[::-1]
    with fs.open(str(tmp_path / "new" / "z.bin"), "wb") as f:
        f.write(data[:1000])
        f.write(np.frombuffer(data[1000:], dtype=np.uint8))
    assert (tmp_path / "new" / "z.bin").read_bytes() == data
    listing = {e["name"]: e for e in fs.ls(str(tmp_path / "new"))}
    assert listing[str(tmp_path / "new" / "y.bin")]["size"] == len(data)
    assert listing[str(tmp_path / "new" / "deep")]["type"] == "directory"
    assert fs.info(str(target))["size"] == len(data)
    assert fs.isdir(str(tmp_path / "new" / "deep"))
    fs.rm(str(tmp_path / "new"), recursive=True)
    assert not (tmp_path / "new").exists()


# -- HTTP ---------------------------------------------------------------------------------
def test_http_cat_file_ranges_open_info(http_server):
    data = http_server.data("odd.bin")
    url = http_server.url("odd.bin")
    fs = fsspec.filesystem("kvikio+http", skip_instance_cache=True)
    assert fs.cat_file("kvikio+" + url) == data
    assert fs.cat_file(url, start=1_000_001, end=2_000_003) == data[1_000_001:2_000_003]
    assert fs.cat_file(url, start=-4099) == data[-4099:]
    starts, ends = _random_ranges(len(data), 500)
    assert fs.cat_ranges([url] * 500, starts, ends) == [data[s:e] for s, e in zip(starts, ends)]
    assert fs.info(url) == {"name": url, "size": len(data), "type": "file"}
    assert fs.exists(url)
    assert not fs.exists(http_server.url("missing.bin"))
    with pytest.raises(FileNotFoundError, match="missing.bin"):
        fs.cat_file(http_server.url("missing.bin"))
    with fs.open(url, "rb") as f:
        f.seek(12345)
        assert f.read(54321) == data[12345 : 12345 + 54321]
    with fsspec.open("kvikio+" + url, "rb") as f:
        assert f.read() == data
    with pytest.raises(NotImplementedError, match="no directory listing"):
        fs.ls(http_server.url(""))
    with pytest.raises(NotImplementedError, match="HTTP has no writes"):
        fs.pipe_file(http_server.url("new.bin"), b"x")


# -- S3 -----------------------------------------------------------------------------------
def test_s3_storage_options_read_ranges_write_list_rm(s3_server, random_bytes, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    fs = fsspec.filesystem("kvikio+s3", skip_instance_cache=True, **_s3_options(s3_server))
    data = s3_server.data("my-bucket", "data/file.bin")
    assert fs.cat_file("kvikio+s3://my-bucket/data/file.bin") == data
    assert fs.cat_file("s3://my-bucket/data/file.bin", start=777, end=-777) == data[777:-777]
    starts, ends = _random_ranges(len(data), 400)
    assert fs.cat_ranges(["my-bucket/data/file.bin"] * 400, starts, ends) == [
        data[s:e] for s, e in zip(starts, ends)
    ]
    prefix = f"my-bucket/fsspec-{uuid.uuid4().hex}"
    small = random_bytes(10_001).tobytes()
    big = random_bytes(11 * 1024 * 1024 + 3).tobytes()  # three parts of a multipart upload
    fs.pipe_file(f"{prefix}/a/small.bin", small)
    fs.pipe_file(f"{prefix}/big.bin", big)
    assert fs.cat_file(f"{prefix}/a/small.bin") == small
    assert fs.cat_file(f"{prefix}/big.bin") == big
    with fs.open(f"{prefix}/c.bin", "wb") as f:
        f.write(small[:5000])
        f.write(small[5000:])
    assert fs.cat_file(f"{prefix}/c.bin") == small
    top = {e["name"]: e for e in fs.ls(prefix)}
    assert top == {
        f"{prefix}/big.bin": {"name": f"{prefix}/big.bin", "size": len(big), "type": "file"},
        f"{prefix}/c.bin": {"name": f"{prefix}/c.bin", "size": len(small), "type": "file"},
        f"{prefix}/a": {"name": f"{prefix}/a", "size": 0, "type": "directory"},
    }
    assert fs.info(f"{prefix}/a")["type"] == "directory"
    assert fs.info(f"{prefix}/a/small.bin")["size"] == len(small)
    assert sorted(fs.find(prefix)) == sorted([f"{prefix}/a/small.bin", f"{prefix}/big.bin", f"{prefix}/c.bin"])
    assert not fs.exists(f"{prefix}/nothing")
    with pytest.raises(FileNotFoundError):
        fs.cat_file(f"{prefix}/nothing")
    fs.rm(prefix, recursive=True)
    assert fs.find(prefix) == []


def test_s3_credentials_from_the_environment_do_not_travel_in_a_pickle(s3_env):
    fs = fsspec.filesystem("kvikio+s3", skip_instance_cache=True)
    data = s3_env.data("my-bucket", "b")
    assert fs.cat_file("my-bucket/b") == data
    assert "my-bucket/b" in fs.ls("my-bucket", detail=False)
    blob = pickle.dumps(fs)
    assert s3_env.secret.encode() not in blob and s3_env.key.encode() not in blob
    assert pickle.loads(blob).cat_file("my-bucket/b") == data
    # Passed as arguments, they do (the caller asked for them to).
    explicit = fsspec.filesystem("kvikio+s3", skip_instance_cache=True, **_s3_options(s3_env))
    assert s3_env.secret.encode() in pickle.dumps(explicit)


def test_s3_missing_credentials_name_what_is_missing(s3_server, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    fs = fsspec.filesystem(
        "kvikio+s3", skip_instance_cache=True, endpoint_url=s3_server.endpoint,
        client_kwargs={"region_name": "us-east-1"},
    )
    with pytest.raises(ValueError, match="no credentials"):
        fs.ls("my-bucket")


# -- WebHDFS ------------------------------------------------------------------------------
def test_webhdfs_read_ranges_write_list_rm(webhdfs_server, random_bytes):
    host = f"127.0.0.1:{webhdfs_server.port}"
    fs = fsspec.filesystem("kvikio+webhdfs", skip_instance_cache=True)
    data = (webhdfs_server.root / "odd.bin").read_bytes()
    assert fs.cat_file(f"kvikio+webhdfs://{host}/odd.bin") == data
    starts, ends = _random_ranges(len(data), 200)
    assert fs.cat_ranges([f"{host}/odd.bin"] * 200, starts, ends) == [data[s:e] for s, e in zip(starts, ends)]
    d = f"{host}/fsspec-{uuid.uuid4().hex}"
    payload = random_bytes(300_007).tobytes()
    fs.pipe_file(f"{d}/x.bin", payload)
    fs.pipe_file(f"{d}/sub/y.bin", payload[:7])
    assert fs.cat_file(f"{d}/x.bin") == payload
    assert {e["name"]: (e["type"], e["size"]) for e in fs.ls(d)} == {
        f"{d}/x.bin": ("file", len(payload)),
        f"{d}/sub": ("directory", 0),
    }
    assert fs.info(f"{d}/sub/y.bin")["size"] == 7
    fs.rm_file(f"{d}/x.bin")
    assert not fs.exists(f"{d}/x.bin")
    with pytest.raises(FileNotFoundError):
        fs.cat_file(f"{d}/x.bin")


# -- zarr's FsspecStore over our file systems ----------------------------------------------------
zarr = pytest.importorskip("zarr")


def _array(rng) -> np.ndarray:
    return rng.standard_normal((123, 77)).astype("float32")


def _round_trip(url: str, rng, storage_options: dict | None = None) -> None:
    from zarr.storage import FsspecStore

    a = _array(rng)
    store = FsspecStore.from_url(url, storage_options=storage_options or {})
    z = zarr.create_array(store, shape=a.shape, chunks=(50, 30), dtype=a.dtype, compressors=None)
    z[:] = a
    back = zarr.open_array(FsspecStore.from_url(url, storage_options=storage_options or {}, read_only=True))
    np.testing.assert_array_equal(back[:], a)
    np.testing.assert_array_equal(back[7:101, 3:70], a[7:101, 3:70])


def test_zarr_fsspec_store_local(tmp_path, rng):
    _round_trip(f"kvikio://{tmp_path}/arr.zarr", rng)


def test_zarr_fsspec_store_s3(s3_server, rng):
    _round_trip(f"kvikio+s3://my-bucket/zarr-{uuid.uuid4().hex}", rng, _s3_options(s3_server))


def test_zarr_fsspec_store_webhdfs(webhdfs_server, rng):
    _round_trip(f"kvikio+webhdfs://127.0.0.1:{webhdfs_server.port}/zarr-{uuid.uuid4().hex}", rng)


def test_zarr_fsspec_store_http_reads_an_array_the_server_serves(http_server, rng):
    from zarr.storage import FsspecStore

    name = f"zarr-{uuid.uuid4().hex}"
    a = _array(rng)
    zarr.create_array(str(http_server.root / name), shape=a.shape, chunks=(40, 40), dtype=a.dtype)[:] = a
    store = FsspecStore.from_url(f"kvikio+{http_server.url(name)}", read_only=True)
    np.testing.assert_array_equal(zarr.open_array(store)[:], a)


# -- pickling ------------------------------------------------------------------------------
def test_cufile_pickles_by_path_and_flags(local_file, tmp_path):
    path, data = local_file
    f = kvikio.CuFile(path, "r")
    g = pickle.loads(pickle.dumps(f))
    buf = np.empty(1000, dtype=np.uint8)
    assert g.read(buf, file_offset=777) == 1000 and buf.tobytes() == data[777:1777]
    f.close()
    g.close()
    assert pickle.loads(pickle.dumps(f)).closed
    w = kvikio.CuFile(tmp_path / "w.bin", "w")
    w.write(np.frombuffer(data[:4096], dtype=np.uint8))
    w2 = pickle.loads(pickle.dumps(w))  # reopened "r+": what was written stays
    w2.write(np.frombuffer(data[4096:8192], dtype=np.uint8), file_offset=4096)
    w.close()
    w2.close()
    assert (tmp_path / "w.bin").read_bytes() == data[:8192]


def test_remote_file_pickles_as_its_open_call(http_server, s3_server):
    data = http_server.data("odd.bin")
    f = kvikio.RemoteFile.open_http(http_server.url("odd.bin"))
    g = pickle.loads(pickle.dumps(f))
    assert g.nbytes() == len(data)
    buf = np.empty(5000, dtype=np.uint8)
    assert g.read(buf, file_offset=100) == 5000 and buf.tobytes() == data[100:5100]
    s3 = kvikio.RemoteFile.open_s3(
        "my-bucket", "b", aws_region_name="us-east-1", aws_access_key_id=s3_server.key,
        aws_secret_access_key=s3_server.secret, aws_endpoint_url=s3_server.endpoint,
    )
    s3b = pickle.loads(pickle.dumps(s3))
    buf = np.empty(s3b.nbytes(), dtype=np.uint8)
    s3b.read(buf)
    assert buf.tobytes() == s3_server.data("my-bucket", "b")
    w = kvikio.RemoteFile.open_s3(
        "my-bucket", f"w-{uuid.uuid4().hex}", aws_region_name="us-east-1",
        aws_access_key_id=s3_server.key, aws_secret_access_key=s3_server.secret,
        aws_endpoint_url=s3_server.endpoint, mode="w",
    )
    with pytest.raises(TypeError, match="opened for writing"):
        pickle.dumps(w)
    w.abort()


def test_gdsstore_and_filesystem_and_open_file_pickle(tmp_path, local_file, rng):
    from kvikio.zarr import GDSStore

    a = _array(rng)
    z = zarr.create_array(GDSStore(tmp_path / "g.zarr"), shape=a.shape, chunks=(50, 50), dtype=a.dtype)
    z[:] = a
    store = pickle.loads(pickle.dumps(GDSStore(tmp_path / "g.zarr", read_only=True)))
    assert isinstance(store, GDSStore) and store.read_only
    np.testing.assert_array_equal(zarr.open_array(store)[:], a)
    path, data = local_file
    fs = pickle.loads(pickle.dumps(fsspec.filesystem("kvikio")))
    with fs.open(str(path), "rb") as f:
        f.seek(1234)
        g = pickle.loads(pickle.dumps(f))
        assert g.tell() == 1234 and g.read(10) == data[1234:1244]


def test_settings_snapshot_pickles_and_applies():
    pytest.importorskip("distributed")
    dask_mod = pytest.importorskip("kvikio.dask")
    with kvikio.defaults.set({"num_threads": 5, "compat_mode": "ON"}):
        snap = pickle.loads(pickle.dumps(dask_mod.settings_snapshot()))
    assert snap["num_threads"] == 5 and snap["compat_mode"] == "ON"
    plugin = pickle.loads(pickle.dumps(dask_mod.KvikioSettings(snap)))
    plugin.setup()
    assert kvikio.defaults.get("num_threads") == 5
    assert kvikio.defaults.get("compat_mode") == kvikio.CompatMode.ON
    with pytest.raises(KeyError, match="nonsense"):
        dask_mod.KvikioSettings({"nonsense": 1})


# -- asyncio -------------------------------------------------------------------------------
def test_iofuture_is_awaitable_and_has_a_repr(local_file):
    path, data = local_file

    async def main() -> list[int]:
        with kvikio.CuFile(path, "r") as f:
            bufs = [np.empty(100_003, dtype=np.uint8) for _ in range(8)]
            kvikio.defaults.set("task_size", 4096)
            futures = [f.pread(b, file_offset=i * 100_003) for i, b in enumerate(bufs)]
            assert "kvikio.IOFuture" in repr(futures[0])
            got = await asyncio.gather(*futures)
            for i, b in enumerate(bufs):
                assert b.tobytes() == data[i * 100_003 : (i + 1) * 100_003]
            return got

    assert asyncio.run(main()) == [100_003] * 8


def test_awaiting_a_failed_iofuture_raises_its_error(tmp_path):
    p = tmp_path / "short.bin"
    p.write_bytes(b"x" * 10)

    async def main() -> None:
        with kvikio.CuFile(p, "r") as f:
            await f.pread(np.empty(100, dtype=np.uint8))

    with pytest.raises(RuntimeError):
        asyncio.run(main())


# -- the library's log into Python's logging ------------------------------------------------
def test_library_log_lines_reach_python_logging(http_server, caplog):
    data = http_server.data("file.bin")
    url = http_server.url("file.bin", f"fail=503&count=1&fid=log-{uuid.uuid4().hex}")
    buf = np.empty(len(data), dtype=np.uint8)
    with caplog.at_level("WARNING", logger="kvikio"):
        with kvikio.RemoteFile.open_http(url, nbytes=len(data)) as f:
            assert f.read(buf) == len(data)  # retried once, after a logged warning
        for _ in range(100):  # the lines arrive on the main thread at its next chance
            if caplog.records:
                break
            import time

            time.sleep(0.01)
    assert buf.tobytes() == data
    records = [r for r in caplog.records if r.name == "kvikio"]
    assert records and records[0].levelname == "WARNING"
    assert "503" in records[0].getMessage() and "file.bin" in records[0].getMessage()


# -- device buffers (GPU machine; skipped visibly elsewhere) ------------------------------------
def test_open_readinto_fills_cupy_arrays_local_and_http(cupy, local_file, http_server):
    path, data = local_file
    fs = fsspec.filesystem("kvikio")
    with fs.open(str(path), "rb") as f:
        f.seek(4099)
        out = cupy.empty(300_001, dtype=cupy.uint8)
        assert f.readinto(out) == out.nbytes
        assert cupy.asnumpy(out).tobytes() == data[4099 : 4099 + 300_001]
    url = http_server.url("odd.bin")
    remote = http_server.data("odd.bin")
    with fsspec.filesystem("kvikio+http").open(url, "rb") as f:
        f.seek(-70_000, 2)
        out = cupy.empty(100_000, dtype=cupy.uint8)  # more than is left: 70,000 bytes
        assert f.readinto(out) == 70_000
        assert cupy.asnumpy(out[:70_000]).tobytes() == remote[-70_000:]


def test_a_cancelled_cat_ranges_returns_only_once_its_reads_ended(http_server):
    """The reads fill bytes objects that only the call holds: cancelled, it must wait for
    them (the server delays every answer 0.4 s) rather than free what they write into."""
    import time

    data = http_server.data("odd.bin")
    url = http_server.url("odd.bin", "delay=0.4")
    starts, ends = _random_ranges(len(data), 20)

    async def main():
        fs = kfs.KvikioHTTPFileSystem(asynchronous=True, skip_instance_cache=True)
        fs._sizes[url] = len(data)  # no HEAD: only the range requests are delayed
        task = asyncio.ensure_future(fs._cat_ranges([url] * 20, starts, ends))
        await asyncio.sleep(0.1)
        t0 = time.perf_counter()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        waited = time.perf_counter() - t0
        again = await fs._cat_ranges([url] * 20, starts, ends)
        return waited, again

    kvikio.defaults.set("num_threads", 4)
    waited, again = asyncio.run(main())
    assert waited > 0.2
    assert again == [data[s:e] for s, e in zip(starts, ends)]


# -- bad input: typed errors naming what was wrong --------------------------------------------
def test_bad_input_raises_typed_errors_naming_it(local_file, s3_server, http_server):
    path, data = local_file
    fs = fsspec.filesystem("kvikio")
    with pytest.raises(ValueError, match=r"mode must be 'rb' or 'wb', not 'ab'"):
        fs.open(str(path), "ab")
    with pytest.raises(ValueError, match=r"cat_ranges: 2 paths but 1 starts and 2 ends"):
        fs.cat_ranges([str(path)] * 2, [0], [1, 2])
    with pytest.raises(TypeError, match="paths must be a list, got tuple"):
        fs.cat_ranges((str(path),), [0], [1])
    with fs.open(str(path), "rb") as f:
        with pytest.raises(ValueError, match="whence must be 0, 1 or 2, not 7"):
            f.seek(0, 7)
        with pytest.raises(io.UnsupportedOperation, match="write on a file opened for reading"):
            f.write(b"x")
    with fs.open(str(path) + ".w", "wb") as w:
        with pytest.raises(io.UnsupportedOperation, match="seek on a file opened for writing"):
            w.seek(0)
        with pytest.raises(io.UnsupportedOperation, match="read on a file opened for writing"):
            w.readinto(bytearray(1))
        with pytest.raises(TypeError, match="open for writing cannot be pickled"):
            pickle.dumps(w)
    s3 = fsspec.filesystem("kvikio+s3", skip_instance_cache=True, **_s3_options(s3_server))
    with pytest.raises(ValueError, match=r"kvikio\+s3://my-bucket: expected bucket/key"):
        s3.cat_file("my-bucket")
    anon = fsspec.filesystem("kvikio+s3", skip_instance_cache=True, anon=True, endpoint_url=s3_server.endpoint)
    with pytest.raises(PermissionError, match="anonymous access is read-only"):
        anon.pipe_file("my-bucket/x.bin", b"x")
    with pytest.raises(TypeError, match="unknown storage_options key"):
        fsspec.filesystem("kvikio+webhdfs", key="x", skip_instance_cache=True)
    with pytest.raises(kvikio.RemoteError, match="odd.bin"):  # a 500 after the retries is no FileNotFoundError
        kvikio.defaults.set("http_max_attempts", 1)
        fsspec.filesystem("kvikio+http", skip_instance_cache=True).cat_file(http_server.url("odd.bin", "fail=500"))
