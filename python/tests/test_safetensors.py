"""kvikio.safetensors (issue 29): bit-exact against the ``safetensors`` package, files we save
byte-identical to its own, sharded checkpoints, slices, filters, progress, remote files, and
every bad input with its error type and message."""

from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest

import kvikio
import kvikio.safetensors as kst
import kvikio.safetensors.numpy as kst_np
from kvikio.safetensors import (
    DTYPES,
    HeaderError,
    IndexFileError,
    MetadataError,
    MissingShardError,
    SafetensorError,
    TensorInfoError,
    TensorNotFoundError,
    UnknownDtypeError,
    UnsupportedDtypeError,
    parse_header,
    plan_reads,
    safe_open,
)
from kvikio.safetensors._format import TensorInfo
from kvikio.safetensors._frameworks import NumpyFramework
from kvikio.safetensors._slice import plan_slice

st = pytest.importorskip("safetensors", reason="needs the safetensors package")
import safetensors.numpy as st_np  # noqa: E402

NUMPY_DTYPES = [np.bool_, np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32,
                np.uint64, np.int64, np.float16, np.float32, np.float64, np.complex64]


def random_array(rng, dtype, shape):
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = rng.integers(0, 256, size=nbytes, dtype=np.uint8)
    if dtype is np.bool_:
        raw &= 1
    return raw.view(dtype).reshape(shape)


@pytest.fixture
def tensors(rng):
    shapes = [(3, 5), (7,), (), (0, 4), (2, 3, 5), (17,), (1, 1), (4, 9)]
    out = {}
    for i, dtype in enumerate(NUMPY_DTYPES):
        out[f"t{i:02d}.{np.dtype(dtype).name}"] = random_array(rng, dtype, shapes[i % len(shapes)])
    out["layers.0.weight"] = random_array(rng, np.float32, (64, 33))
    out["layers.0.bias"] = random_array(rng, np.float32, (33,))
    return out


def assert_same(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for k in a:
        assert a[k].dtype == b[k].dtype, k
        assert a[k].shape == b[k].shape, k
        assert a[k].tobytes() == b[k].tobytes(), k


def raw_file(path, header: dict, data: bytes, pad: bool = True) -> str:
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return str(path)


# -- bit-exact against safetensors ---------------------------------------------------------


def test_load_file_is_bit_exact_against_safetensors(tmp_path, tensors):
    path = str(tmp_path / "m.safetensors")
    st_np.save_file(tensors, path, metadata={"format": "np"})
    ours = kst_np.load_file(path)
    assert_same(ours, st_np.load_file(path))
    assert list(ours) == [k for k in safe_open(path, "numpy").offset_keys()]


def test_safe_open_matches_safetensors_api(tmp_path, tensors):
    path = str(tmp_path / "m.safetensors")
    st_np.save_file(tensors, path, metadata={"a": "1"})
    with safe_open(path, framework="np") as ours, st.safe_open(path, framework="np") as theirs:
        assert ours.keys() == theirs.keys()
        assert ours.offset_keys() == theirs.offset_keys()
        assert ours.metadata() == theirs.metadata()
        for k in theirs.keys():
            t = ours.get_tensor(k)
            assert t.tobytes() == theirs.get_tensor(k).tobytes()
            s, s2 = ours.get_slice(k), theirs.get_slice(k)
            assert s.get_shape() == s2.get_shape() and s.get_dtype() == s2.get_dtype()
    with safe_open(path, "numpy") as f:
        pass
    with pytest.raises(ValueError, match="closed"):
        f.get_tensor("layers.0.bias")


def test_every_format_dtype_parses_like_safetensors(tmp_path, rng):
    """Every dtype safetensors writes: the header agrees; NumPy loads what safetensors.numpy
    loads and raises a typed error naming the file and tensor for the others."""
    names = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
             "float16", "float32", "float64", "bfloat16", "float8_e4m3fn", "float8_e4m3fnuz",
             "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "complex64"]
    keep, specs = [], {}
    for n in names:
        code = kst._frameworks.NAME_TO_CODE[n]
        # F4: TensorSpec takes the storage shape (one byte holds two) and doubles the last dim.
        nbytes = 6 * max(DTYPES[code].bits, 8) // 8
        buf = rng.integers(0, 256, size=nbytes, dtype=np.uint8)
        keep.append(buf)
        specs[n] = st.TensorSpec(dtype=n, shape=[2, 3], data_ptr=buf.ctypes.data, data_len=nbytes)
    path = str(tmp_path / "all.safetensors")
    st.serialize_file(specs, path)
    with safe_open(path, "numpy") as ours, st.safe_open(path, "numpy") as theirs:
        assert ours.offset_keys() == theirs.offset_keys()
        for n in names:
            assert ours.get_slice(n).get_dtype() == theirs.get_slice(n).get_dtype()
            assert ours.get_slice(n).get_shape() == theirs.get_slice(n).get_shape()
            try:
                expected = theirs.get_tensor(n)
            except Exception:  # noqa: BLE001 - safetensors.numpy has no such dtype
                with pytest.raises(UnsupportedDtypeError, match=f"{path}.*{n!r}") as e:
                    ours.get_tensor(n)
                assert isinstance(e.value, TypeError) and e.value.tensor == n
                continue
            got = ours.get_tensor(n)
            assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()


def test_packed_dtypes_f4_f6_parse_like_safetensors(tmp_path):
    """F4 and F6 pack elements into bytes: a shape whose bits fill whole bytes parses (as in
    safetensors), one that does not is refused; NumPy cannot hold them."""
    header = {"a": {"dtype": "F6_E2M3", "shape": [2, 4], "data_offsets": [0, 6]},
              "b": {"dtype": "F6_E3M2", "shape": [4], "data_offsets": [6, 9]},
              "c": {"dtype": "F4", "shape": [3, 2], "data_offsets": [9, 12]}}
    path = raw_file(tmp_path / "packed.safetensors", header, bytes(range(12)))
    with safe_open(path, "numpy") as ours, st.safe_open(path, "numpy") as theirs:
        for k in "abc":
            assert ours.get_slice(k).get_dtype() == theirs.get_slice(k).get_dtype()
            assert ours.get_slice(k).get_shape() == theirs.get_slice(k).get_shape()
            with pytest.raises(UnsupportedDtypeError, match=f"'{k}'"):
                ours.get_tensor(k)
    bad = {"a": {"dtype": "F6_E2M3", "shape": [3], "data_offsets": [0, 2]}}
    path = raw_file(tmp_path / "bad.safetensors", bad, bytes(2))
    with pytest.raises(TensorInfoError, match="'a'.*2.25 bytes"):
        safe_open(path, "numpy")


def test_dtype_table_is_the_formats_in_its_order():
    """The order is the safetensors writer's (its Dtype enum), which byte-identical saves need."""
    assert list(DTYPES) == ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3",
                            "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16",
                            "I32", "U32", "F32", "C64", "F64", "I64", "U64"]


def test_torch_is_bit_exact_against_safetensors_every_dtype(tmp_path, rng):
    torch = pytest.importorskip("torch")
    import safetensors.torch as st_pt

    import kvikio.safetensors.torch as kst_pt

    types = kst._frameworks.torch_types(torch)
    tensors = {}
    for code, dtype in types.items():
        shape = (4, 6)  # F4: torch's shape counts bytes (two values each); the header's [4, 12]
        nbytes = 24 * dtype.itemsize
        raw = torch.from_numpy(rng.integers(0, 256, size=nbytes, dtype=np.uint8))
        if code == "BOOL":
            raw &= 1
        tensors[code] = raw.view(dtype).reshape(shape)
    path = str(tmp_path / "pt.safetensors")
    st_pt.save_file(tensors, path)
    ours_path = str(tmp_path / "ours.safetensors")
    kst_pt.save_file(tensors, ours_path)
    assert open(path, "rb").read() == open(ours_path, "rb").read()
    assert kst_pt.save(tensors) == st_pt.save(tensors)
    theirs = st_pt.load_file(path)
    for loaded in (kst_pt.load_file(path), kst_pt.load(open(path, "rb").read())):
        for k, t in theirs.items():
            assert loaded[k].dtype == t.dtype and loaded[k].shape == t.shape, k
            assert torch.equal(loaded[k].view(torch.uint8), t.view(torch.uint8)), k


def test_torch_save_refuses_shared_tensors(tmp_path):
    torch = pytest.importorskip("torch")
    import kvikio.safetensors.torch as kst_pt

    w = torch.zeros(10)
    with pytest.raises(RuntimeError, match="share memory.*'a'.*'b'"):
        kst_pt.save_file({"a": w, "b": w[2:5]}, str(tmp_path / "s.safetensors"))


def test_torch_cuda_load_and_save(tmp_path, rng, torch_cuda):
    torch = torch_cuda
    import safetensors.torch as st_pt

    import kvikio.safetensors.torch as kst_pt

    tensors = {"w": torch.randn(1000, 257, dtype=torch.bfloat16),
               "b": torch.randn(257, dtype=torch.float32), "s": torch.tensor(3, dtype=torch.int64)}
    path = str(tmp_path / "m.safetensors")
    st_pt.save_file(tensors, path)
    for sep in (False, True):
        got = kst_pt.load_file(path, device="cuda", separate=sep)
        for k, t in tensors.items():
            assert got[k].device.type == "cuda" and torch.equal(got[k].cpu(), t)
    ours = str(tmp_path / "ours.safetensors")
    kst_pt.save_file({k: v.cuda() for k, v in tensors.items()}, ours)
    assert open(path, "rb").read() == open(ours, "rb").read()
    with safe_open(path, "pt", device="cuda:0") as f:
        assert torch.equal(f.get_slice("w")[10:20].cpu(), tensors["w"][10:20])
        assert torch.equal(f.get_slice("w")[:, 5:9].cpu(), tensors["w"][:, 5:9])


def test_cupy_load_and_save(tmp_path, tensors, cupy):
    import kvikio.safetensors.cupy as kst_cp

    path = str(tmp_path / "m.safetensors")
    st_np.save_file(tensors, path)
    got = kst_cp.load_file(path)
    for k, t in tensors.items():
        assert isinstance(got[k], cupy.ndarray) and cupy.asnumpy(got[k]).tobytes() == t.tobytes()
    ours = str(tmp_path / "ours.safetensors")
    kst_cp.save_file({k: cupy.asarray(v) for k, v in tensors.items()}, ours)
    assert open(path, "rb").read() == open(ours, "rb").read()


# -- saving: byte-identical -----------------------------------------------------------------


@pytest.mark.parametrize("metadata", [None, {}, {"format": "np"}, {"k\x01\n\u00e9\"\\/": "v\t"}])
def test_save_file_is_byte_identical_to_safetensors(tmp_path, tensors, metadata):
    theirs, ours = tmp_path / "theirs.safetensors", tmp_path / "ours.safetensors"
    st_np.save_file(tensors, str(theirs), metadata=metadata)
    kst_np.save_file(tensors, str(ours), metadata=metadata)
    assert ours.read_bytes() == theirs.read_bytes()
    assert kst_np.save(tensors, metadata=metadata) == st_np.save(tensors, metadata=metadata)
    assert_same(kst_np.load(ours.read_bytes()), st_np.load(theirs.read_bytes()))


def test_save_with_many_metadata_keys_keeps_their_order(tmp_path, tensors):
    """safetensors writes metadata keys in a random (hash map) order; ours keeps the caller's.
    The tensors' bytes and the parsed header are the same."""
    meta = {"z": "1", "a": "2", "format": "pt", "m": "x"}
    ours = kst_np.save(tensors, metadata=meta)
    theirs = st_np.save(tensors, metadata=meta)
    n = struct.unpack("<Q", ours[:8])[0]
    assert len(ours) == len(theirs) and ours[8 + n :] == theirs[8 + n :]
    assert json.loads(ours[8 : 8 + n]) == json.loads(theirs[8 : 8 + n])
    assert list(json.loads(ours[8 : 8 + n])["__metadata__"]) == list(meta)


def test_save_converts_big_endian_and_rejects_what_safetensors_cannot_store(tmp_path, rng):
    a = random_array(rng, np.float32, (5, 3))
    kst_np.save_file({"a": a.astype(">f4")}, str(tmp_path / "be.safetensors"))
    assert kst_np.load_file(str(tmp_path / "be.safetensors"))["a"].tobytes() == a.tobytes()
    with pytest.raises(UnsupportedDtypeError, match="'c'.*complex128"):
        kst_np.save({"c": np.zeros(2, np.complex128)})
    with pytest.raises(ValueError, match="'x'.*numpy.ndarray"):
        kst_np.save({"x": [1, 2]})
    with pytest.raises(MetadataError, match="strings"):
        kst_np.save({"a": a}, metadata={"n": 1})
    with pytest.raises(TensorInfoError, match="x.safetensors: a tensor cannot be named '__metadata__'"):
        kst_np.save_file({"__metadata__": a}, str(tmp_path / "x.safetensors"))
    # A non-contiguous array is saved as its logical content.
    kst_np.save_file({"t": a.T}, str(tmp_path / "t.safetensors"))
    assert kst_np.load_file(str(tmp_path / "t.safetensors"))["t"].tobytes() == a.T.tobytes()


# -- the plan ----------------------------------------------------------------------------


def _info(name, begin, end, code="U8"):
    return TensorInfo(name, DTYPES[code], ((end - begin) // DTYPES[code].itemsize,), begin, end)


def test_plan_reads_coalesces_adjacent_tensors_into_one_read():
    ts = [_info("a", 0, 100), _info("b", 100, 164), _info("c", 164, 1000)]
    (r,) = plan_reads(ts, data_start=64)
    assert (r.file_offset, r.size) == (64, 1000)
    assert [(t.name, o) for t, o in r.members] == [("a", 0), ("b", 100), ("c", 164)]


def test_plan_reads_splits_at_gaps_larger_than_max_gap_and_aligns_starts():
    ts = [_info("a", 0, 16), _info("c", 1021, 1029), _info("b", 24, 40)]
    ranges = plan_reads(ts, data_start=8)
    assert [(r.file_offset, r.size) for r in ranges] == [(8, 16), (8 + 24, 16), (8 + 1016, 13)]
    assert ranges[2].members[0][1] == 5  # c starts 5 bytes into its (aligned) read
    merged = plan_reads(ts, data_start=8, max_gap=8)
    assert [(r.file_offset, r.size) for r in merged] == [(8, 40), (8 + 1016, 13)]
    capped = plan_reads([_info("a", 0, 16), _info("b", 16, 32)], 8, max_range=16)
    assert len(capped) == 2
    assert plan_reads([], 8) == []
    (empty,) = plan_reads([_info("e", 5, 5)], 8)
    assert empty.size == 0 and empty.members[0][1] == 0


def test_plan_reads_page_aligns_large_reads():
    big = [_info("a", 0, 3 << 20, "F32"), _info("b", 3 << 20, (3 << 20) + 40, "F32")]
    (r,) = plan_reads(big, data_start=4096 + 88)
    assert (r.file_offset, r.size) == (4096, 88 + (3 << 20) + 40)
    assert [(t.name, o) for t, o in r.members] == [("a", 88), ("b", 88 + (3 << 20))]
    (small,) = plan_reads(big[1:], data_start=4096 + 88)  # under 1 MiB: as it is
    assert small.file_offset == 4096 + 88 + (3 << 20)
    (odd,) = plan_reads(big, data_start=4096 + 87)  # a data region off 8: tensors first
    assert odd.file_offset == 4096 + 87
    (never,) = plan_reads(big, data_start=4096 + 88, page_align_above=None)
    assert never.file_offset == 4096 + 88


# -- sharded checkpoints, filters, slices, progress ---------------------------------------


@pytest.fixture
def sharded(tmp_path, rng):
    shards = [{f"model.layers.{i}.weight": random_array(rng, np.float16, (32, 48)),
               f"model.layers.{i}.norm": random_array(rng, np.float32, (48,))} for i in range(3)]
    weight_map = {}
    for i, tensors in enumerate(shards):
        name = f"model-{i + 1:05d}-of-00003.safetensors"
        st_np.save_file(tensors, str(tmp_path / name))
        weight_map.update({k: name for k in tensors})
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 1}, "weight_map": weight_map}))
    everything = {k: v for s in shards for k, v in s.items()}
    return str(index), everything


def test_index_loads_all_shards(sharded):
    index, everything = sharded
    assert_same(kst_np.load_file(index), everything)
    with safe_open(index, "numpy") as f:
        assert f.keys() == sorted(everything)
        assert f.metadata() == {"total_size": "1"}
        assert f.get_tensor("model.layers.1.norm").tobytes() == everything["model.layers.1.norm"].tobytes()


def test_filter_and_names_load_only_those_tensors(sharded):
    index, everything = sharded
    seen = []
    got = kst_np.load_file(index, tensors=lambda n: n.endswith(".norm"),
                           progress=lambda done, total: seen.append((done, total)))
    assert sorted(got) == sorted(k for k in everything if k.endswith(".norm"))
    assert_same(got, {k: everything[k] for k in got})
    # Only the norms' bytes were read, in 3 reads (one per shard).
    assert seen[-1] == (3 * 48 * 4, 3 * 48 * 4) and len(seen) == 3
    names = ["model.layers.2.weight", "model.layers.0.norm"]
    got = kst_np.load_file(index, tensors=names)
    assert list(got) == names
    assert_same(got, {k: everything[k] for k in names})
    with pytest.raises(TensorNotFoundError, match="'nope'"):
        kst_np.load_file(index, tensors=["nope"])


def test_missing_shard_and_bad_index(tmp_path, sharded):
    index, _ = sharded
    os.remove(os.path.join(os.path.dirname(index), "model-00002-of-00003.safetensors"))
    with pytest.raises(MissingShardError, match="model-00002-of-00003.safetensors.*model.layers.1") as e:
        kst_np.load_file(index)
    assert isinstance(e.value, FileNotFoundError)
    with safe_open(index, "numpy") as f:  # the other shards still load
        assert f.get_tensor("model.layers.0.norm").shape == (48,)
    got = kst_np.load_file(index, tensors=lambda n: ".1." not in n)  # the missing one unopened
    assert sorted(got) == ["model.layers.0.norm", "model.layers.0.weight",
                           "model.layers.2.norm", "model.layers.2.weight"]
    bad = tmp_path / "bad.safetensors.index.json"
    bad.write_text('{"metadata": {}}')
    with pytest.raises(IndexFileError, match="bad.safetensors.index.json.*weight_map"):
        safe_open(str(bad), "numpy")
    bad.write_text("{not json")
    with pytest.raises(IndexFileError, match="bad.safetensors.index.json"):
        safe_open(str(bad), "numpy")
    bad.write_text(json.dumps({"weight_map": {"x": "../escape.safetensors"}}))
    with pytest.raises(IndexFileError, match="'x'.*outside"):
        safe_open(str(bad), "numpy")
    bad.write_text(json.dumps({"weight_map": {"ghost": "model-00001-of-00003.safetensors"}}))
    with pytest.raises(TensorNotFoundError, match="'ghost'.*model-00001-of-00003"):
        kst_np.load_file(str(bad))


@pytest.mark.parametrize("key", [
    np.s_[3:9], np.s_[:, 5:17], np.s_[2], np.s_[-1], np.s_[:, 7], np.s_[1:30:4],
    np.s_[::3, 2:40:5], np.s_[...], np.s_[..., 3], np.s_[4:4], np.s_[-5:, -3:],
])
def test_get_slice_equals_numpy_slicing(tmp_path, rng, key):
    t = {"w": random_array(rng, np.float32, (31, 47)), "c": random_array(rng, np.int16, (5, 6, 7))}
    path = str(tmp_path / "m.safetensors")
    st_np.save_file(t, path)
    with safe_open(path, "numpy") as f:
        got = f.get_slice("w")[key]
        assert got.shape == t["w"][key].shape and got.tobytes() == np.ascontiguousarray(t["w"][key]).tobytes()
        got3 = f.get_slice("c")[1:4, :, 2:5]
        assert np.array_equal(got3, t["c"][1:4, :, 2:5])


def test_slices_read_only_their_bytes(tmp_path, rng):
    w = random_array(rng, np.float32, (200, 300))
    path = str(tmp_path / "m.safetensors")
    st_np.save_file({"w": w, "x": random_array(rng, np.uint8, (1000,))}, path)
    calls = []
    with safe_open(path, "numpy", progress=lambda d, t: calls.append((d, t))) as f:
        rows = f.get_slice("w")[10:50]
        assert calls == [(40 * 300 * 4, 40 * 300 * 4)]  # a row range: one read
        calls.clear()
        cols = f.get_slice("w")[:, 100:250]
        assert calls == [(200 * 150 * 4,) * 2]  # only the columns' bytes, in one batch ...
        plan = plan_slice(f._info("w"), np.s_[:, 100:250])
        assert len(plan.offsets) == 200 and plan.run == 150 * 4  # ... of one read per row
        assert plan.offsets.tolist() == [r * 300 * 4 + 100 * 4 for r in range(200)]
    assert rows.tobytes() == w[10:50].tobytes() and cols.tobytes() == w[:, 100:250].tobytes()


def test_bad_slices_raise(tmp_path, rng):
    path = str(tmp_path / "m.safetensors")
    st_np.save_file({"w": random_array(rng, np.float32, (4, 5))}, path)
    with safe_open(path, "numpy") as f:
        s = f.get_slice("w")
        with pytest.raises(IndexError, match="'w'.*index 4"):
            s[4]
        with pytest.raises(IndexError, match="3 indices"):
            s[1, 2, 3]
        with pytest.raises(ValueError, match="step"):
            s[::-1]
        with pytest.raises(TypeError, match="'w'"):
            s["a"]
        with pytest.raises(TensorNotFoundError, match="'v'"):
            f.get_slice("v")


def test_views_share_one_allocation_unless_separate(tmp_path, tensors):
    path = str(tmp_path / "m.safetensors")
    st_np.save_file(tensors, path)
    shared = kst_np.load_file(path)
    roots = {id(_root(v)) for v in shared.values() if v.nbytes}
    assert len(roots) == 1
    apart = kst_np.load_file(path, separate=True)
    roots = [id(_root(v)) for v in apart.values() if v.nbytes]
    assert len(set(roots)) == len(roots)
    assert_same(apart, shared)


class _FakeDevice(NumpyFramework):
    """NumPy standing in for a device framework: counts allocations and host copies."""

    is_device = True

    def __init__(self, device=None):
        super().__init__(None)
        self.allocations, self.copies = [], 0

    def empty(self, nbytes):
        self.allocations.append(nbytes)
        return super().empty(nbytes)

    def from_host(self, host):
        self.copies += 1
        return host.copy()


def test_small_device_reads_are_staged_into_one_allocation(tmp_path, rng, monkeypatch):
    """Filtered loads to a device: the small ranges are read in one batch into one host
    buffer and copied once; a large range is read straight into its own allocation."""
    from kvikio.safetensors import _open

    t = {}
    for i in range(6):
        t[f"l{i}.w"] = random_array(rng, np.float32, (64, 64))
        t[f"l{i}.norm"] = random_array(rng, np.float16, (64,))
    t["big"] = random_array(rng, np.uint8, (2 << 20,))
    path = str(tmp_path / "m.safetensors")
    st_np.save_file(t, path)
    fake = _FakeDevice()
    monkeypatch.setattr(_open, "framework_for", lambda name, device: fake)
    with safe_open(path, "numpy") as f:
        # Every other weight (the writer puts the F32 weights side by side): three ranges.
        got = f.get_tensors(lambda n: n in ("l0.w", "l2.w", "l4.w", "big"))
    assert sorted(got) == ["big", "l0.w", "l2.w", "l4.w"]
    for k, v in got.items():
        assert v.tobytes() == t[k].tobytes() and v.dtype == t[k].dtype, k
    assert fake.copies == 1 and len(fake.allocations) == 1
    assert 2 << 20 <= fake.allocations[0] < (2 << 20) + 4096  # "big", page-aligned


def _root(a):
    while a.base is not None and isinstance(a.base, np.ndarray):
        a = a.base
    return a


def test_progress_callback_and_tqdm_like_hook(tmp_path, rng, monkeypatch):
    from kvikio.safetensors import _open

    monkeypatch.setattr(_open, "PROGRESS_PIECE", 1 << 20)  # 64 MiB pieces otherwise
    path = str(tmp_path / "m.safetensors")
    big = {f"w{i}": random_array(rng, np.uint8, (3 << 20,)) for i in range(3)}
    st_np.save_file(big, path)

    class Bar:
        n = 0

        def update(self, k):
            self.n += k

    bar = Bar()
    with kvikio.defaults.set({"num_threads": 2}):
        assert_same(kst_np.load_file(path, progress=bar), big)
    # The bytes read: the tensors' and, before a large read, under a page to align it.
    assert 9 << 20 <= bar.n < (9 << 20) + 4096
    seen = []
    kst_np.load_file(path, progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (bar.n, bar.n) and len(seen) == 10  # 9 MiB and a bit, 1 MiB a piece
    assert all(a < b for (a, _), (b, _) in zip(seen, seen[1:]))


# -- remote ----------------------------------------------------------------------------


def test_load_from_http(http_server, tensors, sharded):
    st_np.save_file(tensors, str(http_server.root / "m.safetensors"))
    assert_same(kst_np.load_file(http_server.url("m.safetensors")), tensors)
    with safe_open(http_server.url("m.safetensors"), "numpy") as f:
        got = f.get_slice("layers.0.weight")[:, 3:9]
        assert got.tobytes() == tensors["layers.0.weight"][:, 3:9].tobytes()
    index, everything = sharded
    d = http_server.root / "sharded"
    d.mkdir(exist_ok=True)
    for name in os.listdir(os.path.dirname(index)):
        if "model" in name:
            (d / name).write_bytes(open(os.path.join(os.path.dirname(index), name), "rb").read())
    assert_same(kst_np.load_file(http_server.url("sharded/model.safetensors.index.json")), everything)


def test_missing_remote_shard(http_server, sharded):
    index, _ = sharded
    d = http_server.root / "sharded-missing"
    d.mkdir(exist_ok=True)
    for name in os.listdir(os.path.dirname(index)):
        if "model" in name and not name.startswith("model-00003"):
            (d / name).write_bytes(open(os.path.join(os.path.dirname(index), name), "rb").read())
    with pytest.raises(MissingShardError, match="model-00003-of-00003.safetensors.*'model.layers.2"):
        kst_np.load_file(http_server.url("sharded-missing/model.safetensors.index.json"))


def test_webhdfs_save_and_load(webhdfs_server, tensors, tmp_path):
    url = webhdfs_server.url("st/model.safetensors")
    kst_np.save_file(tensors, url, metadata={"format": "np"})
    st_np.save_file(tensors, str(tmp_path / "ref.safetensors"), metadata={"format": "np"})
    assert (webhdfs_server.root / "st" / "model.safetensors").read_bytes() == \
        (tmp_path / "ref.safetensors").read_bytes()
    assert_same(kst_np.load_file(url), tensors)


def test_save_file_to_a_plain_http_url_is_refused(http_server, tensors):
    with pytest.raises(ValueError, match="m.safetensors: save_file writes .* not a HTTP URL"):
        kst_np.save_file(tensors, http_server.url("m.safetensors"))


def test_save_file_to_s3_and_load_back(s3_env, tensors, tmp_path):
    s3_env.process.command(cmd="bucket", bucket="st-bucket")
    url = "s3://st-bucket/model.safetensors"
    kst_np.save_file(tensors, url, metadata={"format": "np"})
    st_np.save_file(tensors, str(tmp_path / "ref.safetensors"), metadata={"format": "np"})
    with kvikio.RemoteFile.open(url) as f:
        data = bytearray(f.nbytes())
        f.read(data)
    assert bytes(data) == (tmp_path / "ref.safetensors").read_bytes()
    assert_same(kst_np.load_file(url), tensors)


# -- bad input -------------------------------------------------------------------------


GOOD = {"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
        "b": {"dtype": "U8", "shape": [4], "data_offsets": [16, 20]}}


def _with(**changes):
    h = json.loads(json.dumps(GOOD))
    for name, entry in changes.items():
        h[name] = entry
    return h


BAD_HEADERS = [
    ("offsets out of range", _with(b={"dtype": "U8", "shape": [40], "data_offsets": [16, 56]}),
     TensorInfoError, "'b'.*out of range"),
    ("overlap", _with(b={"dtype": "U8", "shape": [4], "data_offsets": [12, 16]}),
     TensorInfoError, "'b'.*overlaps tensor 'a'"),
    ("gap", _with(b={"dtype": "U8", "shape": [2], "data_offsets": [18, 20]}),
     TensorInfoError, "'b'.*leaves a gap after tensor 'a'"),
    ("gap at start", _with(a={"dtype": "F32", "shape": [3], "data_offsets": [4, 16]}),
     TensorInfoError, "'a'.*gap after the start"),
    ("unknown dtype", _with(b={"dtype": "Q4", "shape": [4], "data_offsets": [16, 20]}),
     UnknownDtypeError, "'b'.*unknown dtype 'Q4'"),
    ("shape x dtype", _with(a={"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 16]}),
     TensorInfoError, "'a'.*shape \\[2, 3\\] of F32 is 24 bytes.*hold 16"),
    ("bad shape", _with(a={"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}),
     TensorInfoError, "'a'.*shape"),
    ("bad offsets", _with(a={"dtype": "F32", "shape": [4], "data_offsets": [0]}),
     TensorInfoError, "'a'.*data_offsets"),
    ("missing field", _with(a={"dtype": "F32", "shape": [4]}), TensorInfoError, "'a'.*entry"),
    ("metadata", _with(__metadata__={"x": 1}), MetadataError, "__metadata__"),
]


@pytest.mark.parametrize("what,header,exc,message", BAD_HEADERS, ids=[b[0] for b in BAD_HEADERS])
def test_bad_header_entries_raise_typed_errors(tmp_path, what, header, exc, message):
    path = raw_file(tmp_path / "bad.safetensors", header, bytes(20))
    with pytest.raises(exc, match=f"{path}: .*{message}") as e:
        safe_open(path, "numpy")
    assert isinstance(e.value, SafetensorError) and e.value.filename == path
    with pytest.raises(Exception):  # noqa: B017 - safetensors refuses it too
        st.safe_open(path, "numpy").get_tensor("a")


def test_duplicate_name_is_refused(tmp_path):
    text = (b'{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},'
            b'"a":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}}')
    path = tmp_path / "dup.safetensors"
    path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(8))
    with pytest.raises(TensorInfoError, match=f"{path}: duplicate name 'a'") as e:
        safe_open(str(path), "numpy")
    assert e.value.tensor == "a"


@pytest.mark.parametrize("data,exc,message", [
    (b"", HeaderError, "truncated safetensors file: 0 bytes"),
    (b"\x08\x00\x00", HeaderError, "truncated safetensors file: 3 bytes"),
    (struct.pack("<Q", 100) + b"{}", HeaderError,
     "header length 100 runs past the end of the file \\(10 bytes\\)"),
    (struct.pack("<Q", 1 << 40) + b"{}", HeaderError, "over the limit"),
    (struct.pack("<Q", 4) + b"{\xff\xfe}", HeaderError, "not valid UTF-8"),
    (struct.pack("<Q", 8) + b'{"a":1,]', HeaderError, "not valid JSON"),
    (struct.pack("<Q", 8) + b"[1, 2]  ", HeaderError, "does not start with"),
    (struct.pack("<Q", 8) + b"{}      " + b"xx", TensorInfoError, "data region has 2 bytes"),
])
def test_bad_files_raise_header_errors(tmp_path, data, exc, message):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(exc, match=message) as e:
        kst_np.load_file(str(path))
    assert str(path) in str(e.value)


def test_truncated_data_region_names_the_last_tensor(tmp_path, tensors):
    path = tmp_path / "m.safetensors"
    st_np.save_file(tensors, str(path))
    data = path.read_bytes()
    path.write_bytes(data[:-3])
    with pytest.raises(TensorInfoError, match=f"{path}: tensor '.*': data_offsets .* out of range"):
        kst_np.load_file(str(path))


def test_missing_file_and_tensor(tmp_path, tensors):
    with pytest.raises(FileNotFoundError, match="nothing.safetensors"):
        kst_np.load_file(str(tmp_path / "nothing.safetensors"))
    path = str(tmp_path / "m.safetensors")
    st_np.save_file(tensors, path)
    with safe_open(path, "numpy") as f:
        with pytest.raises(KeyError, match="'missing'"):
            f.get_tensor("missing")
    assert sorted(kst_np.load_file(path, backend="pread")) == sorted(tensors)
    with safe_open(path, "numpy", backend="mmap") as f:
        assert f.keys() == sorted(tensors)
    with pytest.raises(ValueError, match="backend 'fast'"):
        safe_open(path, "numpy", backend="fast")
    with pytest.raises(ValueError, match="framework 'jax'"):
        safe_open(path, "jax")
    with pytest.raises(ValueError, match="host memory only"):
        safe_open(path, "numpy", device="cuda")


# -- the header parser under random mutation (a bounded fuzz run) ----------------------


def _check_invariants(header, raw, size):
    pos = 0
    for t in header.by_offset():
        assert t.begin == pos and t.end >= t.begin
        assert t.numel * t.dtype.bits == 8 * t.nbytes
        pos = t.end
    assert header.data_start + pos == size


def test_header_parser_survives_random_mutations(tensors):
    """Mutated headers are either parsed into a consistent header or refused with a
    SafetensorError: never another exception, never a header that does not tile the data."""
    rng = np.random.default_rng(29)
    seed = kst_np.save(tensors, metadata={"format": "np"})
    n = struct.unpack("<Q", seed[:8])[0]
    accepted = 0
    for _ in range(3000):
        raw = bytearray(seed[: 8 + n])
        for _ in range(int(rng.integers(1, 4))):
            op = rng.integers(0, 5)
            at = int(rng.integers(0, len(raw))) if raw else 0
            if op == 0 and raw:
                raw[at] = int(rng.integers(0, 256))
            elif op == 1 and raw:
                raw[at] ^= 1 << int(rng.integers(0, 8))
            elif op == 2:
                del raw[at : at + int(rng.integers(1, 8))]
            elif op == 3:
                raw[at:at] = bytes(rng.choice(list(b'{}[]",:0123456789-e.\\ '), 3).tolist())
            else:
                raw = raw[:at]
        data = bytes(raw) + seed[8 + n :]
        try:
            header = parse_header(data, len(data), "fuzz")
        except SafetensorError as e:
            assert str(e).startswith("fuzz")
            continue
        accepted += 1
        _check_invariants(header, data, len(data))
    assert accepted < 3000


def test_device_arguments():
    from kvikio.safetensors._frameworks import CURRENT, parse_cuda_device

    assert parse_cuda_device("cpu") is None and parse_cuda_device(None) is None
    assert parse_cuda_device("cuda") == CURRENT and parse_cuda_device("CUDA:3") == 3
    assert parse_cuda_device(2) == 2
    for bad in ("gpu", "cuda:x", -1, True, 1.5):
        with pytest.raises(ValueError, match="device"):
            parse_cuda_device(bad)
