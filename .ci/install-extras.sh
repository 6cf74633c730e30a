#!/usr/bin/env bash
# Optional system tools the tests use when present (idempotent):
#   - Debian's `chromium`, for the headless browser test of the HTML report
#     (tests/compare/test_html_browser.py skips without it).
# Safe to run repeatedly; does nothing when everything is already installed.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  echo "install-extras: chromium already installed ($(/usr/bin/chromium --version 2>/dev/null || echo '?'))"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-extras: no apt-get here; install Chromium yourself (the browser test will skip)" >&2
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "install-extras: not root and no sudo; skipping chromium (the browser test will skip)" >&2
    exit 0
  fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "install-extras: installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
