"""Sphinx configuration of the kvikio documentation site (built by scripts/docs.sh).

Doxygen runs first (from here, so a plain ``sphinx-build`` works too) and writes the XML that
Breathe reads. The settings table and the benchmarks page are generated at build time by the
extensions in ``_ext/``.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))

import kvikio  # noqa: E402  (autodoc documents the installed package)

project = "kvikio"
author = "the kvikio authors"
copyright = "the kvikio authors"
release = kvikio.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "myst_parser",
    "breathe",
    "kvikio_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "benchmarks/README.md", "test_examples.py"]
myst_heading_anchors = 3
html_theme = "alabaster"
html_title = f"kvikio {release}"
html_static_path: list[str] = []

# Every cross reference must resolve (scripts/docs.sh builds with -W -n).
nitpicky = True
# No intersphinx: CI reaches no documentation site. Names of Python, NumPy and the C++
# standard library stay unlinked text instead of failing the build.
nitpick_ignore_regex = [
    (r"py:.*", r"(os|io|http|numcodecs|typing|collections\.abc|asyncio|numpy|np|zarr|cupy|pathlib)\..*"),
    (r"py:class", r"kvikio\.mmap\._Closed"),
    (r"py:class", r"(Any|Optional|Union|Callable|Iterable|Mapping|Path|PathLike|Buffer|"
     r"BufferPrototype|ByteRequest|LocalStore|AsyncIterator|Iterator|TracebackType|"
     r"BaseHTTPRequestHandler)"),
    (r"py:class", r"(int|float|str|bytes|bool|list|dict|tuple|type|object|None|"
     r"bytearray|memoryview)"),
    (r"py:exc", r"(RuntimeError|ValueError|OverflowError|IndexError|KeyError|TypeError|"
     r"OSError|FileNotFoundError|PermissionError|ImportError|DeprecationWarning)"),
    (r"cpp:identifier", r"(std|CUstream|CUfileHandle_t|off_t|size_t|ssize_t|timespec)(::.*)?"),
    (r"cpp:identifier", r"(std::)?(u?int(8|16|32|64)_t|size_t|ptrdiff_t)"),
    # POSIX and CUDA driver names, and internal types named by private members.
    (r"cpp:identifier", r"(mode_t|dev_t|S_I[RWX](USR|GRP|OTH)|CUctx_st|CUstream_st|CUstream)"),
    (r"cpp:identifier", r"(detail|detail::.*|CurlHandle|Impl)"),
    # cuFile's own types and values (cufile.h, or their stand-ins in shim/cufile_h_wrapper.hpp),
    # and CompatModeManager, whose header has no page of its own yet.
    (r"cpp:identifier", r"(CUFILE_[A-Z_]+|CUfile\w+|CompatModeManager)"),
]
# Each doxygenfile page repeats `namespace kvikio`; only that is a duplicate declaration.
suppress_warnings = ["duplicate_declaration.cpp"]

autodoc_member_order = "bysource"
# A method without its own docstring fails the build instead of showing its base's (zarr's).
autodoc_inherit_docstrings = False
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = True  # docstrings inherited from zarr are NumPy style

# -- Doxygen -> Breathe ---------------------------------------------------------------------
DOXYGEN_OUT = pathlib.Path(os.environ.get("KVIKIO_DOCS_DOXYGEN_DIR", ROOT / "build" / "docs" / "doxygen"))
breathe_projects = {"kvikio": str(DOXYGEN_OUT / "xml")}
breathe_default_project = "kvikio"
breathe_default_members = ("members",)
breathe_show_include = False  # its links target file labels that doxygenfile does not define


def _run_doxygen() -> None:
    DOXYGEN_OUT.mkdir(parents=True, exist_ok=True)
    config = (DOCS / "Doxyfile").read_text() + f"\nOUTPUT_DIRECTORY = {DOXYGEN_OUT}\n" \
        f"INPUT = {ROOT / 'include' / 'kvikio'}\nSTRIP_FROM_INC_PATH = {ROOT / 'include'}\n" \
        f"STRIP_FROM_PATH = {ROOT / 'include'}\n"
    result = subprocess.run(["doxygen", "-"], input=config, text=True, capture_output=True)
    if result.returncode != 0:
        raise RuntimeError(f"doxygen failed:\n{result.stderr}")
    warnings = [line for line in result.stderr.splitlines() if "warning:" in line]
    if warnings:
        # A header's doc comment that Doxygen cannot read fails the build like a Sphinx warning.
        raise RuntimeError("doxygen warnings (fix the /// comments):\n" + "\n".join(warnings))


def _undocumented_cpp() -> list[str]:
    """Public C++ declarations without a /// comment (Doxygen with EXTRACT_ALL off), as
    "include/kvikio/HEADER:LINE: Member DECLARATION ... is not documented."."""
    scratch = DOXYGEN_OUT / "undocumented"
    scratch.mkdir(parents=True, exist_ok=True)
    config = (DOCS / "Doxyfile").read_text() + f"\nOUTPUT_DIRECTORY = {scratch}\n" \
        f"INPUT = {ROOT / 'include' / 'kvikio'}\nSTRIP_FROM_PATH = {ROOT / 'include'}\n" \
        "EXTRACT_ALL = NO\nWARN_IF_UNDOCUMENTED = YES\nGENERATE_XML = NO\n"
    result = subprocess.run(["doxygen", "-"], input=config, text=True, capture_output=True)
    return [line.replace(str(ROOT) + "/", "") for line in result.stderr.splitlines()
            if "is not documented" in line]


_run_doxygen()
# Every public C++ declaration needs a /// comment: a new undocumented one fails the build,
# named with its header and line (KVIKIO_DOCS_STRICT_CPP=0 only lists them, for a local build
# in the middle of a change).
_undocumented = sorted(set(_undocumented_cpp()))
if _undocumented:
    message = (f"{len(_undocumented)} public C++ declarations have no /// comment "
               "(write one above each; a setter may say 'Sets x().'):\n  " + "\n  ".join(_undocumented))
    if os.environ.get("KVIKIO_DOCS_STRICT_CPP", "1") != "0":
        raise RuntimeError(message)
    print("note: " + message)
