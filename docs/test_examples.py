"""Runs every Python example of the documentation (scripts/docs.sh runs this with pytest).

Each page is one test: its ```python blocks (Markdown) and ``.. code-block:: python`` blocks
(reStructuredText) run in order in one namespace, like a notebook, in a fresh interpreter in
a temporary directory (so settings changed by one page cannot leak into another). A block
preceded by a marker comment is skipped, visibly, where what it needs is missing:

    <!-- doc-test: gpu -->       (Markdown)   .. doc-test: gpu   (reST comment)

- ``gpu``: needs CuPy and a CUDA device; runs when both are there.
- ``network``: needs a real remote server (S3, a public URL); always skipped here.
- ``skip``: never run (say why in the text).

A page whose blocks are all skipped is reported as skipped, with the reasons; a page with some
skipped blocks still runs the others and says which were skipped.

Every ```cpp block of the pages and of README.md is compiled against include/ (syntax only,
C++20, ``$CXX`` or c++): a whole program as it is; a block preceded by
``<!-- doc-test: fragment -->`` as the body of a function, after an #include of every
public header, <string> and <vector>. A block that is neither fails (it must say which it is).
"""

from __future__ import annotations

import json
import os
import shutil
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

DOCS = pathlib.Path(__file__).resolve().parent
MARKER = re.compile(r"(?:<!--\s*doc-test:\s*([\w-]+)\s*-->|^\.\.\s+doc-test:\s*([\w-]+)\s*$)")


def extract(path: pathlib.Path) -> list[dict]:
    """The Python blocks of a page: code, first line number, and the marker before it."""
    lines = path.read_text().splitlines()
    blocks, marker, i = [], None, 0
    while i < len(lines):
        line = lines[i]
        m = MARKER.search(line.strip())
        if m:
            marker = m.group(1) or m.group(2)
            i += 1
            continue
        fence = re.match(r"^(\s*)(```+|~~~+)\s*\{?(python|py)\}?\s*$", line)
        rst = re.match(r"^(\s*)\.\.\s+code-block::\s+(python|py)\s*$", line)
        if fence:
            indent, ticks = fence.group(1), fence.group(2)
            body, j = [], i + 1
            while j < len(lines) and not lines[j].strip().startswith(ticks):
                body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
                j += 1
            blocks.append({"line": i + 2, "code": "\n".join(body), "marker": marker})
            marker, i = None, j + 1
            continue
        if rst:
            indent = len(rst.group(1))
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or lines[j].lstrip().startswith(":")):
                j += 1
            start, body = j, []
            while j < len(lines) and (not lines[j].strip() or
                                      len(lines[j]) - len(lines[j].lstrip()) > indent):
                body.append(lines[j])
                j += 1
            blocks.append({"line": start + 1, "code": textwrap.dedent("\n".join(body)),
                           "marker": marker})
            marker, i = None, j
            continue
        if line.strip():
            marker = None  # a marker applies to the block right after it only
        i += 1
    return blocks


def pages() -> list[pathlib.Path]:
    found = []
    for path in sorted(DOCS.rglob("*")):
        if path.suffix in (".md", ".rst") and "_build" not in path.parts and \
                "_generated" not in path.parts and extract(path):
            found.append(path)
    return found


def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def skip_reason(marker: str | None, have_gpu: bool) -> str | None:
    if marker is None:
        return None
    if marker == "gpu":
        return None if have_gpu else "needs CuPy and a CUDA device"
    if marker == "network":
        return "needs a remote server"
    if marker == "skip":
        return "marked skip"
    raise ValueError(f"unknown doc-test marker {marker!r}")


RUNNER = """
import json, sys
blocks = json.loads(sys.stdin.read())
ns = {"__name__": "__docs__"}
for b in blocks:
    exec(compile(b["code"], b["where"], "exec"), ns)
"""


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_examples(page: pathlib.Path, tmp_path: pathlib.Path) -> None:
    have_gpu = gpu_available()
    run, skipped = [], []
    for b in extract(page):
        where = f"{page.relative_to(DOCS.parent)}:{b['line']}"
        reason = skip_reason(b["marker"], have_gpu)
        if reason:
            skipped.append(f"{where} ({reason})")
        else:
            run.append({"code": b["code"], "where": where})
    if not run:
        pytest.skip("every example skipped: " + "; ".join(skipped))
    env = {k: v for k, v in os.environ.items() if not k.startswith("KVIKIO_")}
    result = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(run), cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"an example of {page.name} failed:\n{result.stderr}"
    if skipped:
        # Shown by pytest -rw: the blocks that did not run on this machine.
        import warnings

        warnings.warn(f"{page.name}: skipped {len(skipped)} example(s): " + "; ".join(skipped))


# ---------------------------------------------------------------------------------------------
# C++ examples: compiled (syntax only) against the public headers
# ---------------------------------------------------------------------------------------------

ROOT = DOCS.parent
CPP_FENCE = re.compile(r"^(\s*)(```+)\s*\{?(cpp|c\+\+)\}?\s*$")
# A fragment sees every public header (remote_handle.hpp and hdfs.hpp are not in kvikio.hpp).
FRAGMENT_PRELUDE = "".join(f"#include <kvikio/{h.name}>\n" for h in sorted((ROOT / "include" / "kvikio").glob("*.hpp"))) + \
    "#include <string>\n#include <vector>\nvoid kvikio_docs_fragment()\n{\n"


def cpp_blocks() -> list[tuple[str, dict]]:
    """(``page:line``, block) for every C++ block of the pages and the README."""
    out = []
    files = [p for p in sorted(DOCS.rglob("*.md")) if "_build" not in p.parts] + [ROOT / "README.md"]
    for path in files:
        if not path.exists():
            continue
        lines = path.read_text().splitlines()
        marker = None
        i = 0
        while i < len(lines):
            m = MARKER.search(lines[i].strip())
            if m:
                marker = m.group(1) or m.group(2)
                i += 1
                continue
            fence = CPP_FENCE.match(lines[i])
            if fence:
                indent, ticks = fence.group(1), fence.group(2)
                body, j = [], i + 1
                while j < len(lines) and not lines[j].strip().startswith(ticks):
                    body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
                    j += 1
                where = f"{path.relative_to(ROOT)}:{i + 2}"
                out.append((where, {"code": "\n".join(body), "marker": marker}))
                marker, i = None, j + 1
                continue
            if lines[i].strip():
                marker = None
            i += 1
    return out


def _compiler() -> str | None:
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    return cxx


@pytest.mark.parametrize("where,block", cpp_blocks(), ids=[w for w, _ in cpp_blocks()])
def test_cpp_examples(where: str, block: dict, tmp_path: pathlib.Path) -> None:
    cxx = _compiler()
    if cxx is None:
        pytest.skip("no C++ compiler")
    code = block["code"]
    if block["marker"] == "fragment":
        source = FRAGMENT_PRELUDE + code + "\n}\n"
        first = FRAGMENT_PRELUDE.count("\n")
    elif block["marker"] is None and re.search(r"^\s*#include\s*<kvikio/", code, re.M):
        source, first = code + "\n", 0
    else:
        pytest.fail(f"{where}: a C++ block is a whole program with its #include <kvikio/...> lines, "
                    f"or is marked <!-- doc-test: fragment --> (marker here: {block['marker']!r})")
    src = tmp_path / "example.cpp"
    # #line: the compiler's messages point at the page.
    page, line = where.rsplit(":", 1)
    src.write_text(f'#line {int(line) - first} "{page}"\n' + source if first == 0 else
                   source[: len(FRAGMENT_PRELUDE)] + f'#line {line} "{page}"\n' + code + "\n}\n")
    # version.hpp is made by CMake from version.hpp.in: made here the same way.
    generated = tmp_path / "include" / "kvikio"
    generated.mkdir(parents=True)
    template = (ROOT / "include" / "kvikio" / "version.hpp.in").read_text()
    (generated / "version.hpp").write_text(re.sub(r"@(\w+)@", lambda m: "0.0.0" if m.group(1) ==
                                                  "PROJECT_VERSION" else "0", template))
    cmd = [cxx, "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
           f"-I{ROOT / 'include'}", f"-I{tmp_path / 'include'}", f"-I{os.environ.get('CUDA_HOME', '/usr/local/cuda')}/include",
           str(src)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"the C++ example at {where} does not compile:\n{result.stderr}"
