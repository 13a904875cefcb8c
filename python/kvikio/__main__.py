"""``python -m kvikio info`` and ``python -m kvikio bench``, from the installed wheel (which
does not carry the C++ ``kvikio`` tool).

- ``info``: the version, which native libraries were found, whether GPUDirect Storage is
  usable, what ``compat_mode`` resolves to, and every setting with its value and
  environment variable (``--json`` for one JSON object).
- ``bench [ARGS]``: :mod:`kvikio.benchmarks.single_node_io` (``kvikio bench`` from Python);
  ``bench --help`` lists its options.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

USAGE = "usage: python -m kvikio {info [--json] | bench [ARGS]}"


def _settings() -> list[dict[str, Any]]:
    import kvikio.defaults

    out = []
    for key in kvikio.defaults.keys():
        value = kvikio.defaults.get(key)
        if key == "compat_mode":
            value = value.name
        elif isinstance(value, tuple):
            value = list(value)
        env = "KVIKIO_" + ("NTHREADS" if key == "num_threads" else key.upper())
        out.append({"key": key, "value": value, "env": env, "from_env": env in os.environ})
    return out


def info() -> dict[str, Any]:
    """What ``python -m kvikio info`` prints, as a dict."""
    import kvikio
    import kvikio.cufile_driver
    import kvikio.defaults

    try:
        gds = bool(kvikio.cufile_driver.get("is_gds_available"))
    except Exception as e:  # noqa: BLE001 - reported, not raised
        gds = f"unknown ({e})"
    try:
        cufile_version = kvikio._lib.libcufile_version()
    except Exception:  # noqa: BLE001
        cufile_version = None
    posix = kvikio.defaults.is_compat_mode_preferred()
    return {
        "version": kvikio.__version__,
        "git_commit": kvikio.__git_commit__,
        "package": os.path.dirname(kvikio.__file__),
        "libcufile_version": cufile_version,
        "gds_available": gds,
        "compat_mode": kvikio.defaults.get("compat_mode").name,
        "resolves_to": "POSIX" if posix else "cuFile",
        "settings": _settings(),
    }


def _print_info(d: dict[str, Any]) -> None:
    print(f"kvikio {d['version']} ({d['package']})")
    if d["git_commit"]:
        print(f"commit {d['git_commit']}")
    print(f"libcufile: {d['libcufile_version'] or 'not loaded'}")
    print(f"GPUDirect Storage (nvidia-fs): {'available' if d['gds_available'] is True else d['gds_available'] or 'not available'}")
    print(f"compat mode {d['compat_mode']} resolves to: {d['resolves_to']}")
    print("\nsettings:")
    for s in d["settings"]:
        src = "environment" if s["from_env"] else "default or set"
        print(f"  {s['key']:<36} {str(s['value']):<28} {s['env']} ({src})")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "info":
        unknown = [a for a in rest if a != "--json"]
        if unknown:
            print(f"kvikio info: unknown option {unknown[0]}", file=sys.stderr)
            return 2
        d = info()
        if "--json" in rest:
            print(json.dumps(d, indent=2, default=str))
        else:
            _print_info(d)
        return 0
    if cmd == "bench":
        from kvikio.benchmarks import single_node_io

        return int(single_node_io.main(rest) or 0)
    print(f"kvikio: unknown command {cmd!r}\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
