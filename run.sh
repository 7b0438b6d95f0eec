#!/usr/bin/env bash
# The two set-up commands of the README:
#   bash run.sh demo   - local Label Studio + sample project, agreement computed and pushed back
#   bash run.sh test   - the whole test suite (what .ci/run runs)
# Both create and reuse .venv/ at the repository root; nothing else needs to be installed.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=".venv/.installed-$(cat setup.cfg pyproject.toml | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip setuptools wheel
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"
  # a test reference only; its releases pin scipy==1.12 (numpy < 2), so its dependencies are not taken
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps "irrCAC>=0.4"
  rm -f .venv/.installed-*; touch "$stamp"
fi
cmd=${1:-help}; shift || true
case "$cmd" in
  demo)  exec .venv/bin/ls-agreement demo "$@" ;;
  test)  exec .venv/bin/python -m pytest "$@" ;;
  bench) exec .venv/bin/python -m benchmarks "$@" ;;
  *)     echo "usage: bash run.sh demo|test|bench [args]"; exit 2 ;;
esac
