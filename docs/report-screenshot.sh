#!/usr/bin/env bash
# Regenerate docs/report.png: a compare sweep over two of the repo's specs, its HTML
# report, and a headless-Chromium screenshot of the report's first 1500 pixels.
# Needs `planner` on PATH and /usr/bin/chromium (.ci/install-extras.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
planner compare specs/resnet.plan specs/transformer.plan --algos msct,metf,heft,single \
  --bandwidth 1GB/s,10GB/s,100GB/s --memory 50%,75%,100% \
  --out "$out/results.csv" --html "$out/report.html"
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --hide-scrollbars --user-data-dir="$out/profile" --window-size=1200,1500 \
  --screenshot=docs/report.png "file://$out/report.html"
ls -l docs/report.png
