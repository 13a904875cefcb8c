"""Runs every Python example of the documentation (scripts/docs.sh runs this with pytest).

Each page is one test: its ```python blocks (Markdown) and ``.. code-block:: python`` blocks
(reStructuredText) run in order in one namespace, like a notebook, in a fresh interpreter in
a temporary directory (so settings changed by one page cannot leak into another). A block
preceded by a marker comment is skipped, visibly, where what it needs is missing:

    <!-- doc-test: gpu -->       (Markdown)   .. doc-test: gpu   (reST comment)

- ``gpu``: needs CuPy and a CUDA device; runs when both are there.
- ``network``: reads or writes remote files; runs against loopback servers (below).
- ``skip``: never run; the page must say why, and the block must be listed in ``NOT_RUN``
  with the reason (an unlisted ``skip`` fails).

Remote examples: a page with a ``network`` block gets, once per session, the loopback servers
of python/tests/remote_servers.py (tests/servers/: the HTTP range server, moto's S3 server
with SigV4 checked, the WebHDFS name node + data node), holding the objects and files the
pages read. Their addresses reach the page's interpreter as environment variables, which the
examples read with ``os.environ.get(NAME, <a real-world default>)``:

- ``KVIKIO_DOCS_HTTP_URL``: the URL of a file on the HTTP server;
- ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
  ``AWS_DEFAULT_REGION``: the S3 server and valid credentials (S3 calls read these anyway);
- ``KVIKIO_DOCS_WEBHDFS_URL``: the WebHDFS name node, ``http://127.0.0.1:<port>``.

What a page writes is checked on the server's side after it ran (``AFTER``).

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
ROOT = DOCS.parent
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


# The blocks that cannot run here, ``page:line`` -> why. A ``skip`` marker not listed here fails,
# so no example stops running unnoticed. Empty: every remote example runs on loopback.
NOT_RUN: dict[str, str] = {}


def skip_reason(marker: str | None, have_gpu: bool, where: str) -> str | None:
    if marker is None or marker == "network":
        return None
    if marker == "gpu":
        return None if have_gpu else "needs CuPy and a CUDA device"
    if marker == "skip":
        if where not in NOT_RUN:
            pytest.fail(f"{where} is marked doc-test: skip but is not listed in NOT_RUN with why")
        return NOT_RUN[where]
    raise ValueError(f"unknown doc-test marker {marker!r}")


# ---------------------------------------------------------------------------------------------
# Loopback servers for the remote examples
# ---------------------------------------------------------------------------------------------

# The objects and files the remote examples read, by server: (what, size in bytes).
HTTP_FILES = {"data.bin": 1_000_003}
S3_OBJECTS = {("my-bucket", "data.bin"): 1_000_003, ("my-bucket", "path/to/object.bin"): 65_537}
WEBHDFS_FILES = {"user/me/log.txt": b"first line\n"}


class RemoteServers:
    """The three servers of one session and the environment that points at them."""

    def __init__(self, root: pathlib.Path) -> None:
        sys.path.insert(0, str(ROOT / "python" / "tests"))
        try:
            import remote_servers as rs
        finally:
            sys.path.pop(0)
        import numpy as np

        self.root = root
        rng = np.random.default_rng(20261129)
        (root / "http").mkdir()
        for name, size in HTTP_FILES.items():
            (root / "http" / name).write_bytes(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
        for path, data in WEBHDFS_FILES.items():
            (root / "hdfs" / path).parent.mkdir(parents=True, exist_ok=True)
            (root / "hdfs" / path).write_bytes(data)
        self.servers = []
        try:
            self.http = self._start(rs.ServerProcess("range_server.py", "--root", str(root / "http")))
            self.webhdfs = self._start(rs.ServerProcess("webhdfs_server.py", "--root", str(root / "hdfs")))
            self.s3 = self._start(rs.ServerProcess("s3_server.py"))
            creds = self.s3.command(cmd="setup", bucket="my-bucket")
            (root / "s3").mkdir()
            for i, ((bucket, key), size) in enumerate(S3_OBJECTS.items()):
                if bucket != "my-bucket":
                    self.s3.command(cmd="bucket", bucket=bucket)
                src = root / "s3" / str(i)
                src.write_bytes(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
                self.s3.command(cmd="put", bucket=bucket, key=key, path=str(src))
            self.s3.command(cmd="auth", on=True)  # from here on every request must be signed
        except BaseException:
            self.stop()
            raise
        self.env = {
            "KVIKIO_DOCS_HTTP_URL": f"http://127.0.0.1:{self.http.port}/data.bin",
            "KVIKIO_DOCS_WEBHDFS_URL": f"http://127.0.0.1:{self.webhdfs.port}",
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.s3.port}",
            "AWS_DEFAULT_REGION": rs.S3_REGION,
            "AWS_ACCESS_KEY_ID": creds["key"],
            "AWS_SECRET_ACCESS_KEY": creds["secret"],
            # A proxy of the user's must not see loopback requests.
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }

    def _start(self, server):
        self.servers.append(server)
        return server

    def stop(self) -> None:
        for server in reversed(self.servers):
            server.stop()


@pytest.fixture(scope="session")
def remote_servers(tmp_path_factory):
    servers = RemoteServers(tmp_path_factory.mktemp("docs-remote"))
    yield servers
    servers.stop()


def _check_remote_files_writes(servers: RemoteServers) -> None:
    """guides/remote-files.md's writes, seen from the servers' side."""
    assert servers.s3.command(cmd="exists", bucket="my-bucket", key="out/a.bin")["exists"]
    assert servers.s3.command(cmd="uploads", bucket="my-bucket")["count"] == 0
    log = (servers.root / "hdfs" / "user" / "me" / "log.txt").read_bytes()
    assert log == WEBHDFS_FILES["user/me/log.txt"] + b"one more line\n"


# After a page ran: checks of what it wrote, by page.
AFTER = {"guides/remote-files.md": _check_remote_files_writes}


RUNNER = """
import json, sys
blocks = json.loads(sys.stdin.read())
ns = {"__name__": "__docs__"}
for b in blocks:
    exec(compile(b["code"], b["where"], "exec"), ns)
"""


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_examples(page: pathlib.Path, tmp_path: pathlib.Path, request) -> None:
    have_gpu = gpu_available()
    run, skipped, network = [], [], False
    for b in extract(page):
        where = f"{page.relative_to(DOCS.parent)}:{b['line']}"
        reason = skip_reason(b["marker"], have_gpu, where)
        if reason:
            skipped.append(f"{where} ({reason})")
        else:
            run.append({"code": b["code"], "where": where})
            network = network or b["marker"] == "network"
    if not run:
        pytest.skip("every example skipped: " + "; ".join(skipped))
    # The user's own settings and AWS configuration must not change what a page does.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KVIKIO_", "AWS_"))}
    servers = None
    if network:
        servers = request.getfixturevalue("remote_servers")
        env.update(servers.env)
    result = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(run), cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"an example of {page.name} failed:\n{result.stderr}"
    check = AFTER.get(str(page.relative_to(DOCS)))
    if check is not None:
        assert servers is not None, f"{page.name} has writes to check but no network block"
        check(servers)
    if skipped:
        # Shown by pytest -rw: the blocks that did not run on this machine.
        import warnings

        warnings.warn(f"{page.name}: skipped {len(skipped)} example(s): " + "; ".join(skipped))


# ---------------------------------------------------------------------------------------------
# C++ examples: compiled (syntax only) against the public headers
# ---------------------------------------------------------------------------------------------

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
