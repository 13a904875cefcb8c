"""Sphinx extension of the kvikio site: pages generated from the sources at build time.

- ``.. kvikio-settings-table::``: the settings table, read from the one table of the C++
  library (``specs()`` in src/core/settings.cpp: name, environment variable, kind, default,
  range), with each setting's meaning taken from the ``///`` comment of its getter in
  include/kvikio/defaults.hpp. The parsed names and defaults are checked against the
  installed package (``kvikio.defaults`` in a clean environment), so a parser that misreads
  the table, or a table and binding that disagree, fail the build instead of the page lying.
- ``.. kvikio-benchmarks::``: tables (and thread-count plots) of every ``kvikio bench --json``
  file in docs/benchmarks/.
- A check that every public name (``__all__``) of the documented modules is documented.
- Cross references to ``kvikio._lib.X`` (what annotations of the native types resolve to)
  land on the documented public name.
"""

from __future__ import annotations

import ast
import json
import os
import pathlib
import re
import subprocess
import sys
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

ROOT = pathlib.Path(__file__).resolve().parents[2]
SETTINGS_CPP = ROOT / "src" / "core" / "settings.cpp"
DEFAULTS_HPP = ROOT / "include" / "kvikio" / "defaults.hpp"
BENCH_DIR = ROOT / "docs" / "benchmarks"

# ---------------------------------------------------------------------------------------------
# The settings table
# ---------------------------------------------------------------------------------------------


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` at ``sep`` outside of (), {} and string literals."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, c in enumerate(text):
        if c == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif c in "({":
            depth += 1
        elif c in ")}":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts


def _groups(text: str) -> list[str]:
    """The contents of the top-level ``{...}`` groups of ``text``."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "{":
            if depth == 0:
                start = i + 1
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                out.append(text[start:i])
    return out


def _cpp_int(expr: str) -> int | None:
    """``std::int64_t{4 << 20}`` -> 4194304; ``kMaxInt`` or a numeric_limits max -> None."""
    expr = expr.strip()
    m = re.fullmatch(r"std::int64_t\{(.*)\}", expr)
    if m:
        expr = m.group(1)
    if re.fullmatch(r"[0-9<>\s*+()-]+", expr):
        return int(eval(expr, {"__builtins__": {}}))  # only digits and shifts reach here
    return None


def parse_settings_table(path: pathlib.Path = SETTINGS_CPP) -> list[dict[str, Any]]:
    """The rows of ``specs()`` in settings.cpp as dicts (name, env_var, kind, default, ...)."""
    source = path.read_text()
    m = re.search(r"specs\(\)\s*\{.*?std::array<[^;]*?>\{\{(.*?)\}\};", source, re.S)
    if not m:
        raise ExtensionError(f"cannot find the settings table (specs()) in {path}")
    body = re.sub(r"//[^\n]*", "", m.group(1))
    rows = []
    for group in _groups(body):
        fields = _split_top(group)
        if len(fields) < 4:
            raise ExtensionError(f"{path}: cannot read settings row {{{group.strip()}}}")
        name, env, kind, default = (f.strip() for f in fields[:4])
        kind = kind.removeprefix("Kind::")
        row: dict[str, Any] = {"name": name.strip('"'), "env_var": env.strip('"'), "kind": kind}
        if kind == "MODE":
            row["default"] = default.split("::")[-1]
        elif kind == "FLAG":
            row["default"] = {"true": True, "false": False}[default]
        elif kind == "CHOICE":
            text = re.fullmatch(r'(?:std::string\()?"([^"]*)"\)?', default)
            row["default"] = text.group(1) if text else None
            if len(fields) > 7:
                row["choices"] = re.findall(r'"([^"]*)"', fields[7])
        elif kind == "CODES":
            inner = re.fullmatch(r"\w*\{(.*)\}", default, re.S)
            row["default"] = [int(x) for x in inner.group(1).split(",")] if inner else None
        else:
            row["default"] = _cpp_int(default)
        row["min"] = _cpp_int(fields[4]) if len(fields) > 4 else 0
        row["max"] = _cpp_int(fields[5]) if len(fields) > 5 else None
        unit = fields[6].strip() if len(fields) > 6 else ""
        row["unit"] = "" if unit in ("", "{}") else unit.strip('"')
        if row["default"] is None:
            raise ExtensionError(f"{path}: cannot read the default of {row['name']}: {default}")
        rows.append(row)
    if not rows:
        raise ExtensionError(f"{path}: the settings table is empty")
    return rows


def parse_getter_comments(path: pathlib.Path = DEFAULTS_HPP) -> dict[str, str]:
    """setting name -> the ``///`` comment above its getter in ``class defaults``.

    A comment documents the run of declarations below it (the getter and setter pair, or the
    two Direct IO flags that share one comment)."""
    text = path.read_text()
    m = re.search(r"class\s+(?:\w+\s+)?defaults\s*\{(.*?)\n\};", text, re.S)
    if not m:
        raise ExtensionError(f"cannot find class defaults in {path}")
    out: dict[str, str] = {}
    comment: list[str] = []
    current = ""
    for line in m.group(1).splitlines():
        s = line.strip()
        if s.startswith("///"):
            if not comment:
                current = ""
            comment.append(s[3:].strip())
            continue
        if comment:
            current = " ".join(comment)
            comment = []
        if not s:
            current = ""
            continue
        g = re.match(r"static\s+[\w:<>\s]+?\s+(\w+)\(\s*\)\s*;", s)
        if g and current:
            out[g.group(1)] = current
    return out


def _meaning(comment: str) -> str:
    """Drop the "KVIKIO_X, default Y" preamble the table already shows."""
    if comment.startswith("KVIKIO_"):
        colon, stop = comment.find(":"), comment.find(". ")
        if colon != -1 and (stop == -1 or colon < stop):
            comment = comment[colon + 1 :]
        elif stop != -1:
            comment = comment[stop + 2 :]
    comment = comment.strip()
    return comment[:1].upper() + comment[1:]


def _bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit} ({n})"
    return str(n)


def format_default(row: dict[str, Any]) -> str:
    d = row["default"]
    if row["kind"] == "FLAG":
        return "on" if d else "off"
    if row["kind"] == "CODES":
        return ",".join(str(c) for c in d)
    if row["kind"] == "INTEGER":
        text = _bytes(d) if row["name"].endswith(("_size", "_threshold")) else str(d)
        return f"{text} {row['unit']}".strip()
    return str(d)


def accepted(row: dict[str, Any]) -> str:
    """The values a setting takes, from its kind and range (as the library's messages say)."""
    kind = row["kind"]
    if kind == "MODE":
        return "ON, OFF or AUTO (any case)"
    if kind == "FLAG":
        return (
            "environment: true/false, on/off, yes/no or an integer (0 is false); "
            "Python: True/False or an integer"
        )
    if kind == "CODES":
        return f"comma-separated HTTP status codes, {row['min']}-{row['max']}"
    if kind == "CHOICE":
        return ", ".join(row.get("choices", [])) + " (any case)"
    low = row["min"]
    text = f"integer >= {low}"
    if row["max"] is not None:
        text = f"integer {low}-{row['max']}"
    return f"{text} ({row['unit']})" if row["unit"] else text


def check_against_package(rows: list[dict[str, Any]]) -> None:
    """The installed package must agree with the parsed table: same names, same defaults."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KVIKIO_")}
    probe = (
        "import json, kvikio.defaults as d\n"
        "out = {}\n"
        "for k in d.keys():\n"
        "    v = d.get(k)\n"
        "    out[k] = getattr(v, 'name', v) if not isinstance(v, (bool, int, list)) else v\n"
        "print(json.dumps(out))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise ExtensionError(f"cannot read kvikio.defaults: {result.stderr}")
    live = json.loads(result.stdout)
    parsed = {r["name"]: r["default"] for r in rows}
    if list(live) != list(parsed):
        raise ExtensionError(
            f"settings table of {SETTINGS_CPP.name} ({list(parsed)}) and kvikio.defaults.keys() "
            f"({list(live)}) differ"
        )
    for name, value in live.items():
        want = parsed[name]
        if isinstance(value, str) and isinstance(want, str):
            # compat_mode reads back as an enum name (AUTO); the words of a CHOICE as written.
            value, want = value.upper(), want.upper()
        if value != want:
            raise ExtensionError(
                f"default of {name}: {want!r} in {SETTINGS_CPP.name}, {value!r} from kvikio.defaults"
            )


def _paragraph(text: str) -> nodes.paragraph:
    p = nodes.paragraph()
    for i, part in enumerate(text.split("``")):
        p += nodes.literal(part, part) if i % 2 else nodes.Text(part)
    return p


def _table(header: list[str], rows: list[list[str]], widths: list[int]) -> nodes.table:
    table = nodes.table(classes=["kvikio-generated"])
    group = nodes.tgroup(cols=len(header))
    table += group
    for w in widths:
        group += nodes.colspec(colwidth=w)
    thead = nodes.thead()
    group += thead
    tr = nodes.row()
    for h in header:
        tr += nodes.entry("", _paragraph(h))
    thead += tr
    tbody = nodes.tbody()
    group += tbody
    for r in rows:
        tr = nodes.row()
        for cell in r:
            tr += nodes.entry("", _paragraph(cell))
        tbody += tr
    return table


class SettingsTable(Directive):
    has_content = False

    def run(self) -> list[nodes.Node]:
        env = self.state.document.settings.env
        env.note_dependency(str(SETTINGS_CPP))
        env.note_dependency(str(DEFAULTS_HPP))
        rows = parse_settings_table()
        check_against_package(rows)
        comments = parse_getter_comments()
        missing = [r["name"] for r in rows if r["name"] not in comments]
        if missing:
            raise self.error(
                f"settings without a /// comment on their getter in {DEFAULTS_HPP.name}: {missing}"
            )
        body = [
            [
                f"``{r['name']}``",
                f"``{r['env_var']}``",
                f"``{format_default(r)}``",
                accepted(r),
                _meaning(comments[r["name"]]),
            ]
            for r in rows
        ]
        header = ["``kvikio.defaults`` key", "environment variable", "default", "values", "meaning"]
        return [_table(header, body, [16, 22, 14, 20, 40])]


# ---------------------------------------------------------------------------------------------
# The benchmarks page
# ---------------------------------------------------------------------------------------------


def _gbps(x: Any) -> str:
    return f"{x:.2f}" if isinstance(x, (int, float)) else "-"


def _size(n: Any) -> str:
    return _bytes(n).split(" (")[0] if isinstance(n, int) else str(n)


def _machine_text(m: Any) -> str:
    if isinstance(m, dict):
        keys = ("host", "cpu", "cores", "memory", "gpu", "os", "filesystem")
        parts = [f"{k} {m[k]}" for k in keys if m.get(k) not in (None, "")]
        parts += [f"{k} {v}" for k, v in m.items() if k not in keys and v not in (None, "")]
        return ", ".join(parts) or "not recorded"
    return str(m) if m else "not recorded"


def _machine_key(m: Any) -> str:
    return json.dumps(m, sort_keys=True)


def load_benchmarks() -> list[tuple[pathlib.Path, dict[str, Any]]]:
    runs = []
    for path in sorted(BENCH_DIR.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise ExtensionError(f"{path}: not JSON ({e})") from e
        if not isinstance(data.get("results"), list):
            raise ExtensionError(f"{path}: no 'results' list (not `kvikio bench --json` output)")
        runs.append((path, data))
    return runs


def _plot(outdir: pathlib.Path, name: str, title: str, series: dict[str, dict[int, float]]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for label, points in sorted(series.items()):
        xs = sorted(points)
        style = "--" if label.startswith("limit") else "-o"
        ax.plot(xs, [points[x] for x in xs], style, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted({x for p in series.values() for x in p}))
    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.set_xlabel("threads")
    ax.set_ylabel("GB/s")
    ax.set_title(title, fontsize=9)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    outdir.mkdir(parents=True, exist_ok=True)
    fig.savefig(outdir / name, dpi=110, metadata={"Software": None})  # no timestamps: stable output
    plt.close(fig)
    return name


class Benchmarks(Directive):
    has_content = False

    def run(self) -> list[nodes.Node]:
        env = self.state.document.settings.env
        runs = load_benchmarks()
        for path, _ in runs:
            env.note_dependency(str(path))
        if not runs:
            return [_paragraph("No benchmark results are checked in yet (docs/benchmarks/*.json).")]
        out: list[nodes.Node] = []
        # One section per file: its machine, date and options, then its table.
        for path, data in runs:
            section = nodes.section(ids=[nodes.make_id(f"bench-{path.stem}")])
            section += nodes.title(text=path.name)
            facts = [
                f"machine: {_machine_text(data.get('machine'))}",
                f"date: {data.get('date', 'not recorded')}",
                f"memory: {data.get('memory', '?')}, size {_size(data.get('size'))}, "
                f"{data.get('threads', '?')} threads, task size {_size(data.get('task_size'))}, "
                f"{'Direct IO' if data.get('direct_io') else 'page cache'}, "
                f"median of {data.get('repetitions', '?')} runs",
            ]
            if "version" in data:
                facts.append(f"kvikio {data['version']}")
            if data.get("pinned_bound_bytes"):
                facts.append(
                    f"peak pinned memory {_size(data.get('peak_pinned_bytes'))} "
                    f"(bound {_size(data['pinned_bound_bytes'])})"
                )
            blist = nodes.bullet_list()
            for f in facts:
                blist += nodes.list_item("", _paragraph(f))
            section += blist
            rows = []
            for r in data["results"]:
                rows.append([
                    r.get("op", "?"),
                    _gbps(r.get("kvikio_gbps")),
                    _gbps(r.get("limit_gbps")),
                    f"{r['ratio']:.2f}x" if isinstance(r.get("ratio"), (int, float)) else "-",
                    _gbps(r.get("pcie_copy_gbps")) if "pcie_copy_gbps" in r else "-",
                ])
            section += _table(
                ["op", "kvikio GB/s", "limit GB/s", "ratio", "host-to-device copy GB/s"],
                rows,
                [10, 14, 14, 10, 18],
            )
            out.append(section)
        out.extend(self._plots(env, runs))
        return out

    def _plots(self, env: Any, runs: list[tuple[pathlib.Path, dict[str, Any]]]) -> list[nodes.Node]:
        """Throughput against thread count, kvikio beside the limit, for each machine, memory
        kind, size and operation that was run at two or more thread counts (from several files,
        or from a file's own ``sweep``)."""
        groups: dict[tuple, dict[str, dict[int, float]]] = {}
        titles: dict[tuple, str] = {}
        for _, data in runs:
            key_base = (_machine_key(data.get("machine")), data.get("memory"), data.get("size"),
                        bool(data.get("direct_io")))
            m = data.get("machine") if isinstance(data.get("machine"), dict) else {}
            where = f"{m.get('host', '?')} ({m.get('cpu', '?')})" if m else "machine not recorded"
            title_base = f"{where}, {data.get('memory')} memory, {_size(data.get('size'))}"
            threads = data.get("threads")
            for r in data["results"]:
                key = key_base + (r.get("op"),)
                titles[key] = f"{r.get('op')}: {title_base}"
                series = groups.setdefault(key, {})
                if isinstance(threads, int):
                    series.setdefault("kvikio", {})[threads] = r["kvikio_gbps"]
                    series.setdefault("limit (plain loop)", {})[threads] = r["limit_gbps"]
            for label, points in (data.get("sweep") or {}).items():
                key = key_base + ("sweep",)
                titles[key] = f"thread sweep: {title_base}"
                groups.setdefault(key, {})[label] = {int(t): v for t, v in points.items()}
        # Written into the source tree (git-ignored) so Sphinx collects and copies them.
        outdir = pathlib.Path(env.srcdir) / "_generated"
        nodes_out: list[nodes.Node] = []
        for i, (key, series) in enumerate(sorted(groups.items(), key=lambda kv: str(kv[0]))):
            if max(len(p) for p in series.values()) < 2:
                continue
            name = _plot(outdir, f"bench-threads-{i}.png", titles[key], series)
            if not nodes_out:
                section = nodes.section(ids=["bench-plots"])
                section += nodes.title(text="Throughput by thread count")
                section += _paragraph(
                    "kvikio (solid) against the limit the same run measured (dashed), "
                    "by thread count."
                )
                nodes_out.append(section)
            img = nodes.image(uri=f"/_generated/{name}", alt=titles[key])
            nodes_out[0] += img
        return nodes_out


# ---------------------------------------------------------------------------------------------
# Public names documented; references to the native module's types
# ---------------------------------------------------------------------------------------------

DOCUMENTED_MODULES = [
    "kvikio",
    "kvikio.cufile",
    "kvikio.buffer",
    "kvikio.stream",
    "kvikio.defaults",
    "kvikio.cufile_driver",
    "kvikio.mmap",
    "kvikio.numpy",
    "kvikio.remote_file",
    "kvikio.zarr",
    "kvikio.safetensors",
    "kvikio.safetensors.errors",
]

# What the native types' annotations resolve to -> the documented public name.
ALIASES = {
    "kvikio._lib.IOFuture": "kvikio.IOFuture",
    "kvikio._lib.StreamIOFuture": "kvikio.IOFutureStream",
    "kvikio._lib.CompatMode": "kvikio.CompatMode",
    "kvikio._lib.RemoteEndpointType": "kvikio.RemoteEndpointType",
    "kvikio.cufile.IOFuture": "kvikio.IOFuture",
    "kvikio.cufile.IOFutureStream": "kvikio.IOFutureStream",
    "kvikio.cufile.CuFile": "kvikio.CuFile",
    "kvikio.remote_file.RemoteFile": "kvikio.RemoteFile",
    "kvikio.remote_file.RemoteError": "kvikio.RemoteError",
    "kvikio.remote_file.RemoteEndpointType": "kvikio.RemoteEndpointType",
    "kvikio._settings.SettingsContext": "kvikio.defaults.SettingsContext",
    "IOFuture": "kvikio.IOFuture",
    "IOFutureStream": "kvikio.IOFutureStream",
    "RemoteFile": "kvikio.RemoteFile",
    "RemoteEndpointType": "kvikio.RemoteEndpointType",
    "SettingsContext": "kvikio.defaults.SettingsContext",
    "CuFile": "kvikio.CuFile",
    "Mmap": "kvikio.mmap.Mmap",
}
# kvikio.safetensors: the errors are documented in kvikio.safetensors.errors, the format's
# types where the package re-exports them.
ALIASES.update({f"kvikio.safetensors.{e}": f"kvikio.safetensors.errors.{e}" for e in (
    "SafetensorError", "HeaderError", "MetadataError", "TensorInfoError", "UnknownDtypeError",
    "UnsupportedDtypeError", "TensorNotFoundError", "MissingShardError", "IndexFileError")})
ALIASES.update({f"kvikio.safetensors._format.{t}": f"kvikio.safetensors.{t}" for t in (
    "Dtype", "TensorInfo", "Header", "ReadRange")})
ALIASES.update({"kvikio.safetensors._open.Slice": "kvikio.safetensors.Slice",
                "kvikio.safetensors._open.safe_open": "kvikio.safetensors.safe_open"})


def resolve_alias(app: Sphinx, env: Any, node: Any, contnode: Any) -> Any:
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    new = ALIASES.get(target)
    if new is None:
        return None
    domain = env.get_domain("py")
    builder = app.builder
    node = node.copy()
    node["reftarget"] = new
    return domain.resolve_xref(env, node.get("refdoc", ""), builder, node["reftype"], new, node, contnode)


def check_public_names(app: Sphinx, env: Any) -> None:
    """Every name in ``__all__`` of the documented modules has an entry in the reference."""
    import importlib

    objects = env.get_domain("py").objects
    missing = []
    for modname in DOCUMENTED_MODULES:
        mod = importlib.import_module(modname)
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if isinstance(obj, type(sys)):
                continue  # a submodule: documented on its own
            candidates = {f"{modname}.{name}", f"kvikio.{name}"}
            home = getattr(obj, "__module__", None)
            if home:
                candidates.add(f"{home}.{name}")
            if not candidates & set(objects):
                missing.append(f"{modname}.{name}")
    if missing:
        logger.warning("public names missing from the API reference: %s", ", ".join(missing))


# Methods whose contract is another library's interface (zarr's Store): documented there.
SECTIONS_EXEMPT = ("kvikio.zarr.GDSStore.",)


def _signature_params(obj: Any) -> tuple[list[str], Any] | None:
    """The documentable parameters of a callable (no self/cls, no ``*``/``**`` catch-alls
    named args/kwargs/exc) and its return annotation; None when it has no readable
    signature."""
    import inspect

    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    names = []
    for i, p in enumerate(sig.parameters.values()):
        if i == 0 and p.name in ("self", "cls"):
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name in ("args", "kwargs", "exc"):
            continue
        names.append(p.name)
    return names, sig.return_annotation


def _returns_value(obj: Any, annotation: Any) -> bool:
    """Whether a callable returns something: from its annotation, else from its source."""
    import inspect

    if annotation is not inspect.Signature.empty:
        return annotation not in (None, "None", type(None), "NoReturn")
    tree = _function_ast(obj)
    if tree is None:
        return False
    return any(isinstance(n, ast.Return) and n.value is not None and
               not (isinstance(n.value, ast.Constant) and n.value.value is None)
               for n in _own_nodes(tree))


def _function_ast(obj: Any) -> Any:
    import inspect
    import textwrap

    func = inspect.unwrap(getattr(obj, "__func__", obj))
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _own_nodes(func: Any) -> list[Any]:
    """The nodes of a function's body, not those of functions or classes nested in it."""
    out, stack = [], list(func.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        out.append(n)
        stack.extend(ast.iter_child_nodes(n))
    return out


def _raises_directly(obj: Any) -> bool:
    """Whether a Python function has a ``raise X`` of its own (a bare re-raise excluded)."""
    tree = _function_ast(obj)
    return tree is not None and any(isinstance(n, ast.Raise) and n.exc is not None
                                    for n in _own_nodes(tree))


def missing_sections(what: str, name: str, obj: Any, lines: list[str]) -> list[str]:
    """What the docstring of a public function, method or class (its constructor's
    parameters) lacks, read from the lines after napoleon turned its sections into fields:
    a ``:param x:`` for each parameter, ``:returns:`` when it returns a value, ``:raises:``
    when its own code raises."""
    if what not in ("function", "method", "class", "exception") or name.startswith(SECTIONS_EXEMPT):
        return []
    short = name.rsplit(".", 1)[-1]
    if short.startswith("_") or getattr(obj, "__name__", short) != short:
        return []  # private, or an alias documented where it is defined
    text = "\n".join(lines)
    documented = set(re.findall(r"^\s*:param\s+(?:[^:]*\s)?\*{0,2}(\w+)\s*:", text, re.M))
    documented |= set(re.findall(r"^\s*:(?:keyword|kwarg)\s+(\w+)\s*:", text, re.M))
    target = obj
    if what in ("class", "exception"):
        init = obj.__dict__.get("__init__") if isinstance(obj, type) else None
        if init is None or not hasattr(init, "__code__") or \
                not init.__qualname__.startswith(obj.__qualname__ + "."):
            return []  # a native or inherited constructor: its parameters are its base's
        target = init
    info = _signature_params(target)
    if info is None:
        return []
    params, annotation = info
    problems = []
    undocumented = [p for p in params if p not in documented]
    if undocumented:
        problems.append("no Parameters entry for " + ", ".join(undocumented))
    if what in ("function", "method"):
        if _returns_value(target, annotation) and not re.search(r"^\s*:returns?:", text, re.M):
            problems.append("no Returns section")
    if _raises_directly(target) and not re.search(r"^\s*:raises\b", text, re.M):
        problems.append("no Raises section (its code raises)")
    return problems


def require_docstring(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """A public class, function, method or property without a docstring fails the build, and
    so does a function, method or class whose docstring lacks the sections it needs."""
    if what in ("class", "exception", "function", "method", "property", "module") and \
            not any(line.strip() for line in lines):
        logger.warning("%s %s has no docstring", what, name)
        return
    problems = missing_sections(what, name, obj, lines)
    if problems:
        where = ""
        try:
            import inspect

            where = f" ({inspect.getsourcefile(obj)}:{inspect.getsourcelines(obj)[1]})"
        except (OSError, TypeError):
            pass
        logger.warning("%s %s docstring: %s%s", what, name, "; ".join(problems), where)


def setup(app: Sphinx) -> dict[str, Any]:
    # After napoleon (priority 500) has turned Parameters/Returns/Raises into fields.
    app.connect("autodoc-process-docstring", require_docstring, priority=900)
    app.add_directive("kvikio-settings-table", SettingsTable)
    app.add_directive("kvikio-benchmarks", Benchmarks)
    app.connect("missing-reference", resolve_alias)
    app.connect("env-check-consistency", check_public_names)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
