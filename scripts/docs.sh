#!/usr/bin/env bash
# Builds the documentation site into build/docs/html (entry page: build/docs/html/index.html)
# with warnings as errors, then runs every Python example of its pages as a test (the remote
# examples against loopback HTTP, S3 (moto) and WebHDFS servers: no network needed).
# Installs nothing: scripts/bootstrap.sh installs Doxygen and docs/requirements.txt, and the
# kvikio package must be installed in the interpreter used, by default .venv/bin/python
# (scripts/test.sh makes it), else KVIKIO_DOCS_PYTHON, else python3.
#   scripts/docs.sh            build and test
#   scripts/docs.sh --no-test  build only
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${KVIKIO_DOCS_PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
missing=()
for m in sphinx breathe myst_parser matplotlib pytest moto boto3 kvikio; do
  "$PY" -c "import $m" 2>/dev/null || missing+=("$m")
done
command -v doxygen >/dev/null || missing+=(doxygen)
if [ ${#missing[@]} -gt 0 ]; then
  echo "docs.sh: $PY lacks: ${missing[*]}" >&2
  echo "  install with: ./scripts/bootstrap.sh (doxygen), $PY -m pip install -r docs/requirements.txt ." >&2
  exit 1
fi
OUT=${KVIKIO_DOCS_OUT:-build/docs}
start=$(date +%s)
# -W: a warning fails; -n: every cross reference must resolve; -E: no stale environment.
"$PY" -m sphinx -b html -W --keep-going -n -E -q -d "$OUT/doctrees" docs "$OUT/html"
echo "docs: built $OUT/html/index.html in $(( $(date +%s) - start )) s"
if [ "${1:-}" != "--no-test" ]; then
  "$PY" -m pytest docs/test_examples.py -q -rsw -p no:cacheprovider
fi
