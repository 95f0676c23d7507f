#!/usr/bin/env bash
# Set up a fresh machine: a virtual environment with every dependency,
# snarkjs (the reference Groth16 peer) from npm, and Debian's Chromium for
# the browser test. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# torch first and pinned: the CPU build is served locally; an unpinned
# resolver would fetch several GB of CUDA wheels instead.
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -e ".[all]"

if command -v npm >/dev/null; then
  npm ci --silent --no-audit --no-fund >/dev/null 2>&1 || npm install --silent --no-audit --no-fund
  # The verification page inlines snarkjs's browser build and canonicalize (RFC 8785): packaged beside its
  # modules, never fetched.
  mkdir -p verifier_client/page/vendor
  cp node_modules/snarkjs/build/snarkjs.min.js verifier_client/page/vendor/snarkjs.min.js
  cp node_modules/canonicalize/lib/canonicalize.js verifier_client/page/vendor/canonicalize.js
else
  echo "warning: npm not found; snarkjs interoperability tests will be skipped" >&2
fi
# Debian packages some tests drive: Chromium renders the audit report (headless), tmux gives the
# progress-bar test a terminal.
apt_install() {  # COMMAND PACKAGE WHAT
  command -v "$1" >/dev/null && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get install -y -qq "$2" >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq "$2" >/dev/null 2>&1; } \
      || echo "warning: could not install $2; $3 will be skipped" >&2
  else
    echo "warning: $1 not found (apt-get install $2); $3 will be skipped" >&2
  fi
}
apt_install chromium chromium "the report's and the verification page's browser tests"
apt_install chromedriver chromium-driver "the verification page's browser test"
apt_install tmux tmux "the progress-bar test"
echo "setup complete: $(.venv/bin/python --version)"
