#!/usr/bin/env bash
# Runs upstream KvikIO's own Python test suite, unchanged, against installed kvikio packages
# and prints pass/fail counts (issue 24: "code written for KvikIO runs on ours").
#
#   scripts/upstream_suite.sh TESTDIR [PYTHON ...] [-- PYTEST_ARG ...]
#
# TESTDIR holds upstream's test files as they are in rapidsai/kvikio python/kvikio/tests
# (test_*.py with their conftest.py and utils.py); they are not part of this project and are
# not committed here: the kvikio-cu13 wheels ship no tests, so carry the directory from a
# checkout of upstream. Each PYTHON is an interpreter whose environment has a kvikio package
# installed (default: .venv/bin/python, i.e. ours after scripts/test.sh or pip install .), and
# pytest, numpy and whatever upstream's tests import (cupy on a GPU machine, moto[server] and
# boto3, zarr>=3). Give a second interpreter with upstream's wheels (pip install kvikio-cu13)
# to compare: the script then lists the cases that pass there and fail on the first one.
#
# The tests run from a scratch copy of TESTDIR (so no source tree shadows the installed
# package), one pytest run per interpreter; results go to UPSTREAM_SUITE_OUT (default
# build/upstream-suite): <n>.log (pytest's output), <n>.xml (JUnit), summary.txt.
# Arguments after "--" go to pytest (e.g. -- -k "http or s3" -x); UPSTREAM_SUITE_TIMEOUT
# bounds each run in seconds (default 3600).
# Exit status: 0 when every case that passed on the last interpreter given also passed on the
# first (with one interpreter: when nothing failed), 1 otherwise, 2 for a usage error.
set -euo pipefail
# Paths given are taken from the caller's directory; the project's from the script's.
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [ $# -lt 1 ] || [ ! -d "$1" ]; then
  sed -n "2,22p" "$ROOT/scripts/upstream_suite.sh" | sed 's/^# \{0,1\}//'
  exit 2
fi
TESTDIR=$(cd "$1" && pwd)
shift
if ! ls "$TESTDIR"/test_*.py >/dev/null 2>&1; then
  echo "upstream_suite: no test_*.py in $TESTDIR" >&2
  exit 2
fi
PYTHONS=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  # Absolute, without resolving symlinks (a virtual environment's python is one): the runs
  # happen in a scratch directory.
  if [[ $1 == */* ]]; then
    PYTHONS+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")")
  else
    PYTHONS+=("$(command -v "$1" || echo "$1")")
  fi
  shift
done
[ "${1:-}" = "--" ] && shift
EXTRA=("$@")
if [ ${#PYTHONS[@]} -eq 0 ]; then PYTHONS=("$ROOT/.venv/bin/python"); fi
OUT=${UPSTREAM_SUITE_OUT:-$ROOT/build/upstream-suite}
TIMEOUT=${UPSTREAM_SUITE_TIMEOUT:-3600}
mkdir -p "$OUT"
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/upstream-suite.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT

XMLS=()
i=0
for py in "${PYTHONS[@]}"; do
  i=$((i + 1))
  if ! "$py" -c "import kvikio, pytest" 2>/dev/null; then
    echo "upstream_suite: $py cannot import kvikio and pytest" >&2
    exit 2
  fi
  where=$("$py" -c "import kvikio, os; print(os.path.dirname(kvikio.__file__), getattr(kvikio, '__version__', '?'))")
  echo "=== run $i: $py (kvikio at ${where% *}, version ${where##* }) ==="
  # A fresh copy per run: pytest's caches and the tests' own files stay out of TESTDIR.
  rm -rf "$SCRATCH/tests" "$OUT/$i.xml" "$OUT/$i.log" && cp -r "$TESTDIR" "$SCRATCH/tests"
  (
    cd "$SCRATCH/tests"
    timeout "$TIMEOUT" "$py" -m pytest -q -rfE -p no:cacheprovider --junitxml="$OUT/$i.xml" \
      ${EXTRA[@]+"${EXTRA[@]}"} . >"$OUT/$i.log" 2>&1
  ) || true
  tail -n 3 "$OUT/$i.log"
  XMLS+=("$OUT/$i.xml")
done

# Counts per run, and (with two runs or more) the cases that fail on the first run but pass
# on the last one: what "passes on ours every case that passes on upstream's wheels" rules out.
"${PYTHONS[0]}" - "$OUT/summary.txt" "${PYTHONS[@]}" -- "${XMLS[@]}" <<'EOF'
import os
import sys
import xml.etree.ElementTree as ET

args = sys.argv[2:]
sep = args.index("--")
pythons, xmls = args[:sep], args[sep + 1 :]


def outcomes(path):
    """test id -> passed/failed/error/skipped, from pytest's JUnit XML."""
    result = {}
    if not os.path.exists(path):
        return result
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        kinds = {child.tag for child in case}
        if "failure" in kinds:
            result[name] = "failed"
        elif "error" in kinds:
            result[name] = "error"
        elif "skipped" in kinds:
            result[name] = "skipped"
        else:
            result[name] = "passed"
    return result


runs = [outcomes(x) for x in xmls]
lines = []
for n, (py, run) in enumerate(zip(pythons, runs), 1):
    counts = {k: sum(1 for v in run.values() if v == k) for k in ("passed", "failed", "error", "skipped")}
    lines.append(
        f"run {n} ({py}): {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['error']} errors, {counts['skipped']} skipped, {len(run)} cases"
    )
bad = sorted(k for k, v in runs[0].items() if v in ("failed", "error"))
if len(runs) > 1:
    regressions = sorted(k for k in bad if runs[-1].get(k) == "passed")
    lines.append(f"failing on run 1 but passing on run {len(runs)}: {len(regressions)}")
    lines += [f"  {k}" for k in regressions]
    status = 1 if regressions else 0
else:
    lines.append(f"failing on run 1: {len(bad)}")
    lines += [f"  {k}" for k in bad]
    status = 1 if bad else 0
if not runs[0]:
    lines.append("run 1 produced no results (see its log)")
    status = 1
text = "\n".join(lines)
print(text)
with open(sys.argv[1], "w") as f:
    f.write(text + "\n")
sys.exit(status)
EOF
