"""kvikio.zarr.GDSStore: zarr's own store conformance tests, round trips against LocalStore,
and the import guard."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

zarr = pytest.importorskip("zarr", minversion="3")

from zarr.core.buffer import cpu  # noqa: E402
from zarr.storage import LocalStore  # noqa: E402
from zarr.testing.store import StoreTests  # noqa: E402

from kvikio.zarr import GDSStore  # noqa: E402

try:
    import cupy

    cupy.cuda.runtime.getDeviceCount()
    HAVE_GPU = True
except Exception:  # no CuPy, or CuPy without a device
    HAVE_GPU = False

needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason="needs a GPU and CuPy")


class TestGDSStoreConformance(StoreTests[GDSStore, cpu.Buffer]):
    store_cls = GDSStore
    buffer_cls = cpu.Buffer

    async def get(self, store: GDSStore, key: str) -> cpu.Buffer:
        return self.buffer_cls.from_bytes((store.root / key).read_bytes())

    async def set(self, store: GDSStore, key: str, value) -> None:
        path = store.root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(value.to_bytes())

    @pytest.fixture
    def store_kwargs(self, tmp_path) -> dict:
        return {"root": str(tmp_path)}

    def test_store_repr(self, store: GDSStore) -> None:
        assert repr(store) == f"GDSStore('file://{store.root.as_posix()}')"

    def test_store_supports_writes(self, store: GDSStore) -> None:
        assert store.supports_writes

    def test_store_supports_listing(self, store: GDSStore) -> None:
        assert store.supports_listing


@needs_gpu
class TestGDSStoreConformanceGPU(TestGDSStoreConformance):
    """The same conformance suite with zarr configured for GPU buffers: every value the store
    hands back, and every value written through it, lives in device memory."""

    buffer_cls = None  # set by the fixture below: zarr.core.buffer.gpu needs CuPy to import

    @pytest.fixture(autouse=True)
    def _gpu_buffers(self):
        from zarr.core.buffer import gpu

        type(self).buffer_cls = gpu.Buffer
        with zarr.config.enable_gpu():
            yield

    async def test_values_come_back_in_device_memory(self, store: GDSStore) -> None:
        from zarr.core.buffer import default_buffer_prototype

        payload = np.random.default_rng(7).integers(0, 256, 3 * 4096 + 5, dtype=np.uint8)
        await store.set("c/0", self.buffer_cls.from_bytes(payload.tobytes()))
        got = await store.get("c/0", prototype=default_buffer_prototype())
        assert isinstance(got.as_array_like(), cupy.ndarray)
        cupy.testing.assert_array_equal(got.as_array_like(), cupy.asarray(payload))
        assert (store.root / "c/0").read_bytes() == payload.tobytes()


@pytest.mark.parametrize(
    ("dtype", "shape", "chunks"),
    [
        ("float32", (1000, 1000), (100, 100)),
        ("int16", (37, 53, 11), (8, 16, 5)),
        ("uint8", (4097,), (1000,)),
        ("float64", (3, 1), (2, 1)),
        ("complex64", (250, 7), (64, 7)),
    ],
)
@pytest.mark.parametrize("compressed", [False, True])
@pytest.mark.parametrize("memory", ["host", pytest.param("gpu", marks=needs_gpu)])
def test_round_trip_matches_local_store(tmp_path, dtype, shape, chunks, compressed, memory):
    rng = np.random.default_rng(sum(shape))
    data = rng.standard_normal(shape) * 1000
    if np.dtype(dtype).kind == "c":
        data = data + 1j * rng.standard_normal(shape)
    data = data.astype(dtype)
    compressors = "auto" if compressed else None
    # With GPU buffers zarr hands the store device memory to write and to read into; the
    # arrays come back as CuPy arrays, compared on the host.
    config = zarr.config.enable_gpu() if memory == "gpu" else contextlib.nullcontext()
    as_host = cupy.asnumpy if memory == "gpu" else np.asarray
    source = cupy.asarray(data) if memory == "gpu" else data

    with config:
        arrays = {}
        for name, store in (("gds", GDSStore(tmp_path / "gds.zarr")), ("local", LocalStore(tmp_path / "local.zarr"))):
            z = zarr.create_array(store=store, shape=shape, chunks=chunks, dtype=dtype, compressors=compressors)
            z[...] = source
            arrays[name] = zarr.open_array(store=store, mode="r")

        whole = arrays["gds"][...]
        if memory == "gpu":
            assert isinstance(whole, cupy.ndarray)
        np.testing.assert_array_equal(as_host(whole), data)
        np.testing.assert_array_equal(as_host(whole), as_host(arrays["local"][...]))
        # A slice that cuts through chunks reads only what it needs and agrees too.
        window = tuple(slice(s // 3, s // 3 + max(1, s // 2)) for s in shape)
        np.testing.assert_array_equal(as_host(arrays["gds"][window]), data[window])
    # The chunk files are byte for byte those LocalStore wrote.
    for chunk in sorted((tmp_path / "local.zarr").rglob("c/*")):
        if chunk.is_file():
            twin = tmp_path / "gds.zarr" / chunk.relative_to(tmp_path / "local.zarr")
            assert twin.read_bytes() == chunk.read_bytes()


async def test_byte_ranges_are_served_without_reading_whole_values(tmp_path):
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
    from zarr.core.buffer import default_buffer_prototype

    payload = np.random.default_rng(1).integers(0, 256, 10_001, dtype=np.uint8).tobytes()
    store = await GDSStore.open(root=tmp_path)
    await store.set("k", cpu.Buffer.from_bytes(payload))
    proto = default_buffer_prototype()
    cases = {
        RangeByteRequest(4095, 8193): payload[4095:8193],
        RangeByteRequest(9000, 20000): payload[9000:],
        OffsetByteRequest(4097): payload[4097:],
        SuffixByteRequest(123): payload[-123:],
        SuffixByteRequest(50_000): payload,
    }
    for request, expected in cases.items():
        got = await store.get("k", prototype=proto, byte_range=request)
        assert got.to_bytes() == expected, request


async def test_failed_write_leaves_the_old_value(tmp_path, monkeypatch):
    import kvikio.zarr as kz

    store = await GDSStore.open(root=tmp_path)
    await store.set("k", cpu.Buffer.from_bytes(b"old value"))

    class Boom(RuntimeError):
        pass

    def failing_replace(src, dst):
        raise Boom("disk vanished")

    monkeypatch.setattr(kz.os, "replace", failing_replace)
    with pytest.raises(Boom):
        await store.set("k", cpu.Buffer.from_bytes(b"new value that never lands"))
    assert (tmp_path / "k").read_bytes() == b"old value"
    assert [p.name for p in tmp_path.iterdir()] == ["k"], "the partial file must be removed"


def test_read_only_store_refuses_writes(tmp_path):
    GDSStore(tmp_path).set_sync("k", cpu.Buffer.from_bytes(b"x"))
    ro = GDSStore(tmp_path, read_only=True)
    with pytest.raises(ValueError, match="read-only"):
        ro.set_sync("k", cpu.Buffer.from_bytes(b"y"))
    assert ro.get_sync("k").to_bytes() == b"x"


@pytest.mark.parametrize(
    ("fake_version", "needle"), [("2.18.3", "zarr 2.18.3 is installed"), (None, "not installed")]
)
def test_import_without_zarr3_explains_what_is_needed(tmp_path, fake_version, needle):
    fake = tmp_path / "fake"
    fake.mkdir()
    if fake_version is None:
        # A module that fails to import stands in for a missing zarr.
        (fake / "zarr.py").write_text("raise ImportError('No module named zarr')\n")
    else:
        (fake / "zarr.py").write_text(f"__version__ = {fake_version!r}\n")
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(fake)!r})
        try:
            import kvikio.zarr
        except ImportError as e:
            print(e)
            sys.exit(0)
        sys.exit("imported without error")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "zarr>=3" in out.stdout
    assert needle in out.stdout


@needs_gpu
def test_gpu_chunks_come_back_as_cupy(tmp_path):
    with zarr.config.enable_gpu():
        store = GDSStore(root=tmp_path / "data.zarr")
        z = zarr.create_array(store=store, shape=(1000, 1000), chunks=(100, 100), dtype="float32", overwrite=True)
        data = cupy.random.default_rng(3).standard_normal((1000, 1000), dtype=cupy.float32)
        z[...] = data
        chunk = z[:100, :100]
        assert isinstance(chunk, cupy.ndarray)
        cupy.testing.assert_array_equal(chunk, data[:100, :100])
        cupy.testing.assert_array_equal(z[...], data)


# -- the read paths of GDSStore.get / get_partial_values (issue 14) ------------------------
# get() reads a small value on the event loop's thread, a larger one on kvikio's pool while
# the loop polls (a slow one is then waited for on a worker thread), a large one on a worker
# thread;
# get_partial_values reads every value in one kvikio.pread_batch call. Each configuration
# below sends the same values down a different one of those paths.
_READ_PATHS = {
    "inline": {"inline_read_bytes": 1 << 30},
    "pool+poll": {"inline_read_bytes": 0, "thread_wait_bytes": 1 << 30, "poll_seconds": 10.0},
    "pool, waited on a thread": {"inline_read_bytes": 0, "thread_wait_bytes": 1 << 30, "poll_seconds": 0.0},
    "worker thread": {"inline_read_bytes": 0, "thread_wait_bytes": 0},
    "defaults": {},
}
_SIZES = (0, 1, 4095, 65536, (256 << 10) + 1, (5 << 20) + 3)


def _memory_context(memory):
    return zarr.config.enable_gpu() if memory == "gpu" else contextlib.nullcontext()


def _to_bytes(buf) -> bytes:
    arr = buf.as_array_like()
    return (cupy.asnumpy(arr) if HAVE_GPU and isinstance(arr, cupy.ndarray) else np.asarray(arr)).tobytes()


def _payloads(root) -> dict[str, bytes]:
    rng = np.random.default_rng(14)
    values = {}
    for i, size in enumerate(_SIZES):
        values[f"c/{i}"] = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        (root / "c").mkdir(exist_ok=True)
        (root / "c" / str(i)).write_bytes(values[f"c/{i}"])
    return values


@pytest.mark.parametrize("path", list(_READ_PATHS))
@pytest.mark.parametrize("memory", ["host", pytest.param("gpu", marks=needs_gpu)])
async def test_get_reads_every_size_byte_for_byte(tmp_path, path, memory):
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
    from zarr.core.buffer import default_buffer_prototype

    values = _payloads(tmp_path)
    store = await GDSStore.open(root=tmp_path, read_only=True)
    for name, value in _READ_PATHS[path].items():
        setattr(store, name, value)
    with _memory_context(memory):
        proto = default_buffer_prototype()
        for key, payload in values.items():
            n = len(payload)
            cases = {None: payload, RangeByteRequest(n // 3, n // 3 + n // 2): payload[n // 3: n // 3 + n // 2],
                     OffsetByteRequest(n // 4): payload[n // 4:], SuffixByteRequest(n // 5 + 1): payload[-(n // 5 + 1):] if n else b"",
                     RangeByteRequest(n + 10, n + 20): b""}
            for request, expected in cases.items():
                got = await store.get(key, prototype=proto, byte_range=request)
                assert _to_bytes(got) == expected, (key, request)
                if memory == "gpu":
                    assert isinstance(got.as_array_like(), cupy.ndarray)
            assert _to_bytes(store.get_sync(key, prototype=proto)) == payload


async def test_small_values_are_read_without_a_thread_hop(tmp_path, monkeypatch):
    import kvikio.zarr as kz
    from zarr.core.buffer import default_buffer_prototype

    values = _payloads(tmp_path)
    hops = []

    async def counting_to_thread(fn, *args, **kwargs):
        # Only the store's own reads count: zarr's LocalStore (3.4) opens its root this way.
        if not str(getattr(fn, "__module__", "")).startswith("zarr"):
            hops.append(fn)
        return fn(*args, **kwargs)

    monkeypatch.setattr(kz.asyncio, "to_thread", counting_to_thread)
    store = await GDSStore.open(root=tmp_path, read_only=True)
    store.slow_open_seconds = float("inf")  # a loaded machine's slow open must not count here
    proto = default_buffer_prototype()
    for key in ("c/0", "c/1", "c/2", "c/3"):  # up to 64 KiB: inline on the loop
        assert (await store.get(key, prototype=proto)).to_bytes() == values[key]
    assert hops == []
    # A value of thread_wait_bytes or more waits on a worker thread: one hop.
    assert (await store.get("c/5", prototype=proto)).to_bytes() == values["c/5"]
    assert len(hops) == 1


@pytest.mark.parametrize("memory", ["host", pytest.param("gpu", marks=needs_gpu)])
async def test_get_partial_values_is_one_batch(tmp_path, monkeypatch, memory):
    import kvikio
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
    from zarr.core.buffer import default_buffer_prototype

    values = _payloads(tmp_path)
    (tmp_path / "dir").mkdir()
    batches = []
    real = kvikio.pread_batch

    def counting_pread_batch(requests):
        batches.append(list(requests))
        return real(batches[-1])

    monkeypatch.setattr(kvikio, "pread_batch", counting_pread_batch)
    store = await GDSStore.open(root=tmp_path, read_only=True)
    ranges = [("c/5", RangeByteRequest(1 << 20, (3 << 20) + 7)), ("missing", None), ("c/2", None),
              ("c/0", None), ("c/4", OffsetByteRequest(1000)), ("dir", None), ("c/2/x", None),
              ("c/3", SuffixByteRequest(100)), ("c/5", None)]
    with _memory_context(memory):
        got = await store.get_partial_values(default_buffer_prototype(), ranges)
    expected = [values["c/5"][1 << 20:(3 << 20) + 7], None, values["c/2"], values["c/0"],
                values["c/4"][1000:], None, None, values["c/3"][-100:], values["c/5"]]
    assert [None if g is None else _to_bytes(g) for g in got] == expected
    assert len(batches) == 1 and len(batches[0]) == 5  # the empty value needs no IO
    # LocalStore agrees on the values that exist (a missing one raises there).
    present = [(r, e) for r, e in zip(ranges, expected) if e is not None]
    local = await LocalStore.open(root=tmp_path, read_only=True)
    with _memory_context(memory):
        theirs = await local.get_partial_values(default_buffer_prototype(), [r for r, _ in present])
    assert [_to_bytes(g) for g in theirs] == [e for _, e in present]


async def test_missing_keys_read_as_none(tmp_path):
    from zarr.core.buffer import default_buffer_prototype

    (tmp_path / "a").mkdir()
    (tmp_path / "f").write_bytes(b"x")
    store = await GDSStore.open(root=tmp_path, read_only=True)
    proto = default_buffer_prototype()
    for key in ("nothing", "a", "a/nothing", "f/under-a-file"):
        assert await store.get(key, prototype=proto) is None, key
        assert store.get_sync(key, prototype=proto) is None, key
    assert await store.get_partial_values(proto, [("nothing", None), ("a", None)]) == [None, None]


async def test_a_value_shorter_than_its_size_raises(tmp_path, monkeypatch):
    """A file that shrinks between its size and its read (here: a size that lies) raises
    EndOfFileError naming the file on every path, never returns stale bytes."""
    import kvikio
    import kvikio.errors
    from zarr.core.buffer import default_buffer_prototype

    _payloads(tmp_path)
    monkeypatch.setattr(kvikio.CuFile, "nbytes", lambda self: os.path.getsize(self._handle.path) + 100)
    proto = default_buffer_prototype()
    for path, settings in _READ_PATHS.items():
        store = await GDSStore.open(root=tmp_path, read_only=True)
        for name, value in settings.items():
            setattr(store, name, value)
        with pytest.raises(kvikio.errors.EndOfFileError, match="c/4"):
            await store.get("c/4", prototype=proto)
    # In a batch, the first value that comes short is named.
    with pytest.raises(kvikio.errors.EndOfFileError, match="c/2"):
        await store.get_partial_values(proto, [("c/2", None), ("c/3", None), ("c/4", None)])


def test_a_truncated_chunk_fails_the_array_read(tmp_path):
    """A chunk file cut short (a corrupt store) is not read as the fill value: zarr's bytes
    codec refuses the short buffer."""
    z = zarr.create_array(store=GDSStore(tmp_path), shape=(1000,), chunks=(100,), dtype="float32", compressors=None)
    z[...] = np.arange(1000, dtype="float32")
    os.truncate(tmp_path / "c" / "3", 123)
    with pytest.raises(ValueError):
        zarr.open_array(store=GDSStore(tmp_path, read_only=True), mode="r")[...]
    np.testing.assert_array_equal(zarr.open_array(store=GDSStore(tmp_path, read_only=True), mode="r")[:300],
                                  np.arange(300, dtype="float32"))


@pytest.mark.parametrize("memory", ["host", pytest.param("gpu", marks=needs_gpu)])
async def test_get_ranges_reads_one_value_in_one_batch(tmp_path, monkeypatch, memory):
    """get_ranges (zarr >= 3.2 reads a shard's inner chunks with it) opens the value once and
    reads every range in one CuFile.pread_batch; results in input order, byte for byte."""
    import kvikio
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
    from zarr.core.buffer import default_buffer_prototype

    values = _payloads(tmp_path)
    payload = values["c/5"]
    batches, opens = [], []
    real_batch, real_init = kvikio.CuFile.pread_batch, kvikio.CuFile.__init__

    def counting_batch(self, requests):
        batches.append(list(requests))
        return real_batch(self, batches[-1])

    def counting_init(self, *args, **kwargs):
        opens.append(args[0])
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(kvikio.CuFile, "pread_batch", counting_batch)
    monkeypatch.setattr(kvikio.CuFile, "__init__", counting_init)
    store = await GDSStore.open(root=tmp_path, read_only=True)
    ranges = [RangeByteRequest(3 << 20, (3 << 20) + 65536), None, RangeByteRequest(10, 10),
              OffsetByteRequest((5 << 20) - 7), SuffixByteRequest(4097), RangeByteRequest(1, 2)]
    expected = [payload[3 << 20:(3 << 20) + 65536], payload, b"", payload[(5 << 20) - 7:],
                payload[-4097:], payload[1:2]]
    with _memory_context(memory):
        groups = [g async for g in store.get_ranges("c/5", ranges, prototype=default_buffer_prototype())]
    assert len(groups) == 1
    assert [i for i, _ in groups[0]] == list(range(len(ranges)))
    assert [_to_bytes(b) for _, b in groups[0]] == expected
    assert len(opens) == 1 and len(batches) == 1 and len(batches[0]) == 5  # the empty range needs no IO

    with pytest.raises(BaseExceptionGroup) as info:
        [g async for g in store.get_ranges("nothing", [None], prototype=default_buffer_prototype())]
    assert [type(e) for e in info.value.exceptions] == [FileNotFoundError]


@pytest.mark.parametrize("memory", ["host", pytest.param("gpu", marks=needs_gpu)])
def test_sharded_array_round_trip(tmp_path, memory):
    """Shards: zarr reads inner chunks by byte ranges (get with ranges, or get_ranges on
    zarr >= 3.2); whole and partial reads agree with the data, with and without gaps."""
    data = np.random.default_rng(5).standard_normal((64, 96)).astype("float32")
    with _memory_context(memory):
        store = GDSStore(tmp_path / "s.zarr")
        z = zarr.create_array(store=store, shape=data.shape, chunks=(8, 8), shards=(32, 48),
                              dtype="float32", compressors=None)
        z[...] = cupy.asarray(data) if memory == "gpu" else data
        again = zarr.open_array(store=GDSStore(tmp_path / "s.zarr", read_only=True), mode="r")
        as_host = cupy.asnumpy if memory == "gpu" else np.asarray
        np.testing.assert_array_equal(as_host(again[...]), data)
        np.testing.assert_array_equal(as_host(again[3:41:5, 7:90:11]), data[3:41:5, 7:90:11])


async def test_slow_opens_send_reads_to_worker_threads(tmp_path, monkeypatch):
    """Where opening a file is slow (cuFile registration failing on every open), get() reads
    on worker threads so the opens overlap; probes keep following the cost, and once opens
    are cheap again reads come back to the loop."""
    import time as _time

    import kvikio
    import kvikio.zarr as kz
    from zarr.core.buffer import default_buffer_prototype

    values = _payloads(tmp_path)
    hops = []
    real_to_thread, real_init = kz.asyncio.to_thread, kvikio.CuFile.__init__
    delay = [0.002]

    async def counting_to_thread(fn, *args, **kwargs):
        if not str(getattr(fn, "__module__", "")).startswith("zarr"):
            hops.append(fn)  # not zarr's own set-up hops (LocalStore 3.4 opens its root so)
        return await real_to_thread(fn, *args, **kwargs)

    def slow_init(self, *args, **kwargs):
        # Busy, as a failing cuFile registration is: the store counts CPU time, not waits.
        end = _time.thread_time() + delay[0]
        while _time.thread_time() < end:
            pass
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(kz.asyncio, "to_thread", counting_to_thread)
    monkeypatch.setattr(kvikio.CuFile, "__init__", slow_init)
    monkeypatch.setattr(kz, "_open_seconds", 0.0)
    store = await GDSStore.open(root=tmp_path, read_only=True)
    proto = default_buffer_prototype()
    for _ in range(200):
        assert (await store.get("c/3", prototype=proto)).to_bytes() == values["c/3"]
    assert kz._open_seconds > store.slow_open_seconds
    assert len(hops) > 150  # all but the first few and the probes went to threads
    delay[0] = 0.0
    for _ in range(100 * kz._PROBE_EVERY):
        if kz._open_seconds < store.slow_open_seconds:
            break
        assert (await store.get("c/3", prototype=proto)).to_bytes() == values["c/3"]
    hops.clear()
    for _ in range(10):
        assert (await store.get("c/2", prototype=proto)).to_bytes() == values["c/2"]
    assert hops == []
