"""The safetensors file format: the header parser, the header writer and the read planner.

Pure functions of bytes and numbers (no IO, no framework): the file is an 8-byte
little-endian header length ``N``, ``N`` bytes of UTF-8 JSON (``{"__metadata__": {str: str},
name: {"dtype", "shape", "data_offsets": [begin, end]}, ...}``, padded with spaces), then the
data region, in which each tensor's ``[begin, end)`` is relative to the region's start and the
tensors tile it exactly: no gap, no overlap, nothing after the last one.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from kvikio.safetensors.errors import (
    HeaderError,
    MetadataError,
    TensorInfoError,
    UnknownDtypeError,
)

# The safetensors limit on the JSON header (100 MB): a larger length is a corrupt file, not a
# header to allocate.
MAX_HEADER_SIZE = 100_000_000
# Writers pad the header so that the data region starts 8-byte aligned.
HEADER_ALIGNMENT = 8


@dataclass(frozen=True)
class Dtype:
    """One safetensors dtype (``kvikio.safetensors.DTYPES`` maps each code to one).

    Args:
        code: Its code in the header ("F32", "BF16", ...).
        bits: Its width in bits (4 for F4, 6 for the F6 kinds).
        rank: Its place in the order the ``safetensors`` writer lays tensors out (larger
            first).
    """

    code: str
    bits: int
    rank: int

    @property
    def itemsize(self) -> int:
        """Bytes per element, at least 1 (F4 and F6 pack several elements into a byte)."""
        return max(1, self.bits // 8)


# In the ``safetensors`` writer's order (smallest rank first): tensors of a larger rank come
# first in the file, then by name, which keeps each tensor aligned to its element size.
_DTYPE_ORDER = (
    ("BOOL", 8), ("F4", 4), ("F6_E2M3", 6), ("F6_E3M2", 6), ("U8", 8), ("I8", 8),
    ("F8_E5M2", 8), ("F8_E4M3", 8), ("F8_E8M0", 8), ("F8_E4M3FNUZ", 8), ("F8_E5M2FNUZ", 8),
    ("I16", 16), ("U16", 16), ("F16", 16), ("BF16", 16), ("I32", 32), ("U32", 32),
    ("F32", 32), ("C64", 64), ("F64", 64), ("I64", 64), ("U64", 64),
)
DTYPES: Dict[str, Dtype] = {code: Dtype(code, bits, i) for i, (code, bits) in enumerate(_DTYPE_ORDER)}


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a header.

    Args:
        name: The tensor's name.
        dtype: Its dtype (a :class:`Dtype`).
        shape: Its shape, as the header gives it.
        begin: The offset of its first byte in the data region.
        end: The offset after its last byte in the data region.
    """

    name: str
    dtype: Dtype
    shape: Tuple[int, ...]
    begin: int
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.begin

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass
class Header:
    """A parsed, validated header.

    Args:
        filename: The file it was read from (named in errors).
        metadata: ``__metadata__``, or None when the header has none.
        tensors: The tensors by name, in the header's order.
        data_start: The file offset of the data region (8 + the header length).
        file_size: The file's size in bytes.
    """

    filename: str
    metadata: Optional[Dict[str, str]]
    tensors: Dict[str, TensorInfo]
    data_start: int
    file_size: int

    def by_offset(self) -> List[TensorInfo]:
        """The tensors in file order.

        Returns:
            The tensors sorted by their offsets.
        """
        return sorted(self.tensors.values(), key=lambda t: (t.begin, t.end))


def header_length(prefix: bytes, file_size: int, filename: str) -> int:
    """The JSON header's length from the first 8 bytes, checked against the file's size.

    Raises:
        HeaderError: The file is shorter than 8 bytes, or the length is over the limit or
            runs past the end of the file.
    """
    if file_size < 8 or len(prefix) < 8:
        raise HeaderError(
            f"{filename}: truncated safetensors file: {file_size} bytes, shorter than the "
            "8-byte header length", filename=filename)
    (n,) = struct.unpack("<Q", prefix[:8])
    if n > MAX_HEADER_SIZE:
        raise HeaderError(
            f"{filename}: header length {n} is over the limit of {MAX_HEADER_SIZE} bytes",
            filename=filename)
    if 8 + n > file_size:
        raise HeaderError(
            f"{filename}: header length {n} runs past the end of the file ({file_size} bytes)",
            filename=filename)
    return n


def _no_duplicates(filename: str):
    def hook(pairs: List[Tuple[str, object]]) -> Dict[str, object]:
        out: Dict[str, object] = {}
        for key, value in pairs:
            if key in out:
                raise TensorInfoError(
                    f"{filename}: duplicate name {key!r} in the header", filename=filename,
                    tensor=key)
            out[key] = value
        return out

    return hook


def _shape(value: object, filename: str, name: str) -> Tuple[int, ...]:
    if not isinstance(value, list) or not all(
        type(d) is int and d >= 0 for d in value  # noqa: E721 (bool is not a dimension)
    ):
        raise TensorInfoError(
            f"{filename}: tensor {name!r}: shape {value!r} is not a list of non-negative "
            "integers", filename=filename, tensor=name)
    return tuple(value)


def parse_header(raw: bytes, file_size: int, filename: str) -> Header:
    """Parse and validate the header of a safetensors file.

    Args:
        raw: The file's first ``8 + N`` bytes (at least), ``N`` the header length.
        file_size: The file's size in bytes.
        filename: Named in the errors.

    Returns:
        The header; its tensors tile the data region ``[8 + N, file_size)`` exactly.

    Raises:
        HeaderError: Truncated file, header length past the end, not UTF-8, not a JSON object.
        MetadataError: ``__metadata__`` is not a map of strings to strings.
        UnknownDtypeError: A dtype this format does not define.
        TensorInfoError: A malformed entry, a duplicate name, a shape whose size is not the
            byte length, offsets out of range, overlapping, or leaving a gap.
    """
    n = header_length(raw, file_size, filename)
    if len(raw) < 8 + n:
        raise HeaderError(f"{filename}: truncated header: {len(raw) - 8} of {n} bytes",
                          filename=filename)
    body = raw[8 : 8 + n]
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise HeaderError(f"{filename}: header is not valid UTF-8 ({e.reason} at byte "
                          f"{8 + e.start})", filename=filename) from None
    if not text.startswith("{"):
        raise HeaderError(f"{filename}: header does not start with '{{'", filename=filename)
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates(filename))
    except json.JSONDecodeError as e:
        raise HeaderError(f"{filename}: header is not valid JSON: {e.msg} at byte "
                          f"{8 + len(text[: e.pos].encode())}", filename=filename) from None
    except RecursionError:
        raise HeaderError(f"{filename}: header is not valid JSON: nested too deeply",
                          filename=filename) from None
    if not isinstance(doc, dict):
        raise HeaderError(f"{filename}: header is not a JSON object", filename=filename)

    metadata = doc.pop("__metadata__", None)
    if metadata is not None and not (
        isinstance(metadata, dict)
        and all(isinstance(v, str) for v in metadata.values())
    ):
        raise MetadataError(f"{filename}: __metadata__ is not a map of strings to strings",
                            filename=filename)

    data_start = 8 + n
    data_size = file_size - data_start
    tensors: Dict[str, TensorInfo] = {}
    for name, entry in doc.items():
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            raise TensorInfoError(
                f"{filename}: tensor {name!r}: entry is not {{dtype, shape, data_offsets}}: "
                f"{entry!r:.200}", filename=filename, tensor=name)
        code = entry["dtype"]
        if not isinstance(code, str) or code not in DTYPES:
            raise UnknownDtypeError(f"{filename}: tensor {name!r}: unknown dtype {code!r}",
                                    filename=filename, tensor=name)
        dtype = DTYPES[code]
        shape = _shape(entry["shape"], filename, name)
        offsets = entry["data_offsets"]
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(type(o) is int and o >= 0 for o in offsets)):  # noqa: E721
            raise TensorInfoError(
                f"{filename}: tensor {name!r}: data_offsets {offsets!r} is not two "
                "non-negative integers", filename=filename, tensor=name)
        begin, end = offsets
        if end < begin or end > data_size:
            raise TensorInfoError(
                f"{filename}: tensor {name!r}: data_offsets [{begin}, {end}] out of range of the "
                f"data region ({data_size} bytes)", filename=filename, tensor=name)
        bits = math.prod(shape) * dtype.bits
        if bits % 8 or bits // 8 != end - begin:
            raise TensorInfoError(
                f"{filename}: tensor {name!r}: shape {list(shape)} of {code} is "
                f"{bits / 8:g} bytes, but data_offsets [{begin}, {end}] hold {end - begin}",
                filename=filename, tensor=name)
        tensors[name] = TensorInfo(name, dtype, shape, begin, end)

    header = Header(filename, metadata, tensors, data_start, file_size)
    position, previous = 0, None
    for t in header.by_offset():
        if t.begin != position:
            what = "overlaps" if t.begin < position else "leaves a gap after"
            other = f"tensor {previous.name!r}" if previous else "the start of the data region"
            raise TensorInfoError(
                f"{filename}: tensor {t.name!r}: data_offsets [{t.begin}, {t.end}] {what} "
                f"{other} (expected to begin at {position})", filename=filename, tensor=t.name)
        position, previous = t.end, t
    if position != data_size:
        raise TensorInfoError(
            f"{filename}: the tensors end at {position} but the data region has {data_size} "
            f"bytes (truncated file or trailing bytes)", filename=filename,
            tensor=previous.name if previous else None)
    return header


# -- writing -------------------------------------------------------------------------------


@dataclass
class SaveEntry:
    """A tensor to save: its dtype code, its header shape, its byte length."""

    name: str
    code: str
    shape: Tuple[int, ...]
    nbytes: int


def layout(entries: Iterable[SaveEntry], metadata: Optional[Mapping[str, str]],
           filename: str = "<bytes>") -> Tuple[bytes, List[Tuple[SaveEntry, int]]]:
    """The header bytes and each tensor's file offset, as the ``safetensors`` writer lays a
    file out: tensors ordered by dtype (widest first) then name, the JSON compact, padded
    with spaces to 8 bytes.

    Returns:
        ``(prefix, [(entry, file_offset), ...])``: ``prefix`` is the length and the header.

    Raises:
        MetadataError: ``metadata`` is not a map of strings to strings.
        TensorInfoError: An entry's byte length does not match its shape and dtype, or a
            tensor is named ``__metadata__``.
    """
    if metadata is not None:
        if not isinstance(metadata, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
        ):
            raise MetadataError(f"{filename}: metadata must map strings to strings",
                                filename=filename)
    entries = list(entries)
    for e in entries:
        if e.name == "__metadata__":  # (safetensors writes it, and then cannot read the file)
            raise TensorInfoError(f"{filename}: a tensor cannot be named '__metadata__'",
                                  filename=filename, tensor=e.name)
    ordered = sorted(entries, key=lambda e: (-DTYPES[e.code].rank, e.name.encode("utf-8")))
    doc: Dict[str, object] = {}
    if metadata is not None:
        doc["__metadata__"] = dict(metadata)
    offset = 0
    for e in ordered:
        bits = math.prod(e.shape) * DTYPES[e.code].bits
        if bits != 8 * e.nbytes:
            raise TensorInfoError(
                f"{filename}: tensor {e.name!r}: shape {list(e.shape)} of {e.code} needs "
                f"{bits / 8:g} bytes, the buffer has {e.nbytes}", filename=filename, tensor=e.name)
        doc[e.name] = {"dtype": e.code, "shape": list(e.shape),
                       "data_offsets": [offset, offset + e.nbytes]}
        offset += e.nbytes
    # The serde_json spelling: compact, non-ASCII as UTF-8, control characters escaped.
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % HEADER_ALIGNMENT)
    prefix = struct.pack("<Q", len(text)) + text
    start = len(prefix)
    placed, offset = [], start
    for e in ordered:
        placed.append((e, offset))
        offset += e.nbytes
    return prefix, placed


# -- read planning --------------------------------------------------------------------------


@dataclass
class ReadRange:
    """One read of ``size`` bytes at ``file_offset`` into one allocation.

    Args:
        file_offset: Where the read starts in the file.
        size: Bytes to read.
        members: The tensors in it, each with its byte offset in the allocation.
    """

    file_offset: int
    size: int
    members: List[Tuple[TensorInfo, int]] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.file_offset + self.size


# Reads of at least PAGE_ALIGN_ABOVE bytes start on a 4 KiB file offset (reaching back into the
# header or the previous tensor by less than a page) so that Direct IO and the engine's aligned
# fast path take all of them but the tail.
PAGE = 4096
PAGE_ALIGN_ABOVE = 1 << 20


def plan_reads(tensors: Sequence[TensorInfo], data_start: int, *, max_gap: int = 0,
               max_range: Optional[int] = None, align: int = HEADER_ALIGNMENT,
               page_align_above: Optional[int] = PAGE_ALIGN_ABOVE) -> List[ReadRange]:
    """Coalesce the byte ranges of ``tensors`` into few reads.

    Tensors are taken in file order; one joins the current range when the bytes between them
    are at most ``max_gap`` (read and thrown away) and the range stays within ``max_range``
    bytes. Each range starts ``align``-aligned in the data region (up to ``align - 1`` bytes
    early), so that a tensor whose offset is a multiple of its element size is aligned in the
    allocation too. Zero-byte tensors get no bytes (offset 0 of the first range, or a range
    of size 0).

    Args:
        tensors: The tensors to read (any order).
        data_start: The file offset of the data region.
        max_gap: Bytes of a gap between two tensors that a read may span.
        max_range: The most bytes one read may take; None for no limit.
        align: The alignment of each read's start, relative to the data region.
        page_align_above: Reads of at least this many bytes start at a multiple of 4 KiB in
            the file (when the data region is ``align``-aligned, so that the tensors stay
            aligned); None never.

    Returns:
        The reads, in file order.

    Raises:
        ValueError: A negative ``max_gap`` or a ``max_range`` or ``align`` not positive.
    """
    if max_gap < 0 or (max_range is not None and max_range <= 0) or align <= 0:
        raise ValueError("plan_reads: max_gap must be >= 0, max_range and align > 0")
    ranges: List[ReadRange] = []
    current: Optional[ReadRange] = None
    empties: List[TensorInfo] = []
    for t in sorted(tensors, key=lambda t: (t.begin, t.end)):
        if t.nbytes == 0:
            empties.append(t)
            continue
        begin, end = data_start + t.begin, data_start + t.end
        if current is not None:
            gap = begin - current.end
            if gap <= max_gap and (max_range is None or end - current.file_offset <= max_range):
                current.size = max(current.size, end - current.file_offset)
                current.members.append((t, begin - current.file_offset))
                continue
        start = data_start + (t.begin - t.begin % align)
        current = ReadRange(start, end - start, [(t, begin - start)])
        ranges.append(current)
    if page_align_above is not None and data_start % align == 0:
        for r in ranges:
            back = r.file_offset % PAGE
            if r.size >= page_align_above and back:
                r.file_offset -= back
                r.size += back
                r.members = [(t, offset + back) for t, offset in r.members]
    if empties:
        if ranges:
            ranges[0].members.extend((t, 0) for t in empties)
        else:
            ranges.append(ReadRange(data_start, 0, [(t, 0) for t in empties]))
    return ranges
