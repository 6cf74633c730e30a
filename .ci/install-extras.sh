#!/usr/bin/env bash
# Optional tools the tests use when present (idempotent; each step skips what is there):
#   - Debian's `chromium`, for the headless browser test of the HTML report
#     (tests/compare/test_browser.py skips without it);
#   - a Python >= 3.12 venv with the saga scheduling library, for the saga comparison
#     (tests/test_bench_saga.py and bench/saga/ skip without it).
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

install_chromium() {
  if [ -x /usr/bin/chromium ]; then
    echo "install-extras: chromium already installed ($(/usr/bin/chromium --version 2>/dev/null || echo '?'))"
    return 0
  fi
  if ! command -v apt-get >/dev/null 2>&1 || { [ "$(id -u)" -ne 0 ] && [ -z "$SUDO" ]; }; then
    echo "install-extras: cannot apt-get here; install Chromium yourself (the browser test will skip)" >&2
    return 0
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
  echo "install-extras: installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
}

install_saga() {
  local venv=${SAGA_VENV:-/tmp/saga-venv}
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import saga" 2>/dev/null; then
    echo "install-extras: saga venv already at $venv"
    return 0
  fi
  local py=""
  for cand in python3.13 python3.12 /root/.pyenv/versions/3.12*/bin/python3.12; do
    # a pyenv shim may exist without its version being usable: ask the interpreter itself
    if "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
      py=$cand; break
    fi
  done
  if [ -z "$py" ]; then
    echo "install-extras: no Python >= 3.12 here; the saga comparison will skip" >&2
    return 0
  fi
  "$py" -m venv "$venv" && "$venv/bin/pip" install --quiet anrg-saga || {
    echo "install-extras: could not install anrg-saga; the saga comparison will skip" >&2
    return 0
  }
  echo "install-extras: saga installed in $venv"
}

install_chromium
install_saga
