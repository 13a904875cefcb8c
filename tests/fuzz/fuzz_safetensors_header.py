"""Atheris fuzz target for kvikio.safetensors' header parser (issue 29).

Each input is a whole file's bytes. The parser must either return a header whose tensors tile
the data region exactly, each one's byte length its shape times its dtype's width, or raise a
kvikio.safetensors.SafetensorError naming the file: any other exception, or a header that breaks
those invariants, is a finding.

    python tests/fuzz/fuzz_safetensors_header.py -max_total_time=60 [corpus dir]

scripts/fuzz.sh runs it when atheris is importable (pip install atheris).
"""

import sys

import atheris

with atheris.instrument_imports():
    from kvikio.safetensors import SafetensorError, parse_header

NAME = "fuzz.safetensors"


def check(data: bytes) -> None:
    try:
        header = parse_header(data, len(data), NAME)
    except SafetensorError as e:
        if not str(e).startswith(NAME):
            raise AssertionError(f"message does not name the file: {e}") from None
        return
    position = 0
    for t in header.by_offset():
        if t.begin != position or t.end < t.begin:
            raise AssertionError(f"tensor {t.name!r} does not tile the data region")
        if t.numel * t.dtype.bits != 8 * t.nbytes:
            raise AssertionError(f"tensor {t.name!r}: shape x dtype is not its byte length")
        position = t.end
    if header.data_start + position != len(data):
        raise AssertionError("the tensors do not end at the end of the file")


def main() -> None:
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
