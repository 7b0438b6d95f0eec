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
  # the annotator model's reference (tests, bench_flags); its requirements pull transformers,
  # which crowdkit.aggregation never imports
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps "crowd-kit>=1.4"
  rm -f .venv/.installed-*; touch "$stamp"
fi
cmd=${1:-help}; shift || true
case "$cmd" in
  demo)  exec .venv/bin/ls-agreement demo "$@" ;;
  test)
    # System programs some tests run, installed when missing and we can (root + apt-get), all
    # with one `apt-get update`; failing that, the tests needing them are skipped, with why:
    # - chromium: tests/plugin/test_page_chromium.py opens the quality page in a headless browser
    # - postgresql: Label Studio on PostgreSQL (tests/plugin/test_postgres_push.py: the bulk
    #   action takes another path there); the fixture runs the binaries in its own cluster
    # - redis-server: the RQ queue's tests start their own redis-server
    pkgs=()
    if [ -z "${LS_AGREEMENT_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1 \
        && ! command -v chromium-browser >/dev/null 2>&1 && ! command -v google-chrome >/dev/null 2>&1; then
      pkgs+=(chromium)
    fi
    if [ -z "${LS_AGREEMENT_PG_BIN:-}" ] && ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null \
        && ! command -v initdb >/dev/null 2>&1; then
      pkgs+=(postgresql)
    fi
    command -v redis-server >/dev/null 2>&1 || pkgs+=(redis-server)
    if [ "${#pkgs[@]}" -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "installing ${pkgs[*]} (apt-get) for the tests that need them" >&2
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}"; } >/dev/null \
        || echo "warning: ${pkgs[*]} could not be installed; the tests needing them will be skipped" >&2
    fi
    exec .venv/bin/python -m pytest "$@" ;;
  bench) exec .venv/bin/python -m benchmarks "$@" ;;
  # outside CI: the plugin's server tests and the demo's table on several Label Studio releases
  # (args: releases, --demo-only)
  compat) exec .venv/bin/python tests/compat_matrix.py "$@" ;;
  *)     echo "usage: bash run.sh demo|test|bench|compat [args]"; exit 2 ;;
esac
