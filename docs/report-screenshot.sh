#!/usr/bin/env bash
# Regenerate every image in docs/ (the one script for them), from the commands README.md and docs/compare.md show:
#   docs/report.png         a compare sweep over two of the repo's specs, its HTML report
#   docs/report-resnet.png  `solve --html` of specs/resnet.plan (177 ops: a bar per op)
#   docs/report-10k.png     `solve --html` of a 10,000-op spec from bench/bench_parse.py's
#                           generate (aggregated columns, transfers per device pair)
# each a headless-Chromium screenshot of the report's top. Needs the project installed in
# the current Python (`pip install -e .`; PYTHON=... to choose another) and /usr/bin/chromium
# (.ci/install-extras.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

shoot() {  # shoot PAGE PNG HEIGHT
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --hide-scrollbars --user-data-dir="$out/profile" --window-size="1200,$3" \
    --screenshot="$2" "file://$1" 2>/dev/null
  ls -l "$2"
}

"$PY" -m planner compare specs/resnet.plan specs/transformer.plan --algos msct,metf,heft,single \
  --bandwidth 1GB/s,10GB/s,100GB/s --memory 50%,75%,100% \
  --out "$out/results.csv" --html "$out/report.html"
shoot "$out/report.html" docs/report.png 1500

"$PY" -m planner solve specs/resnet.plan --algo msct --html "$out/resnet.html" >/dev/null
shoot "$out/resnet.html" docs/report-resnet.png 900

"$PY" - "$out/big.plan" <<'EOF'
import sys
sys.path.insert(0, "bench")
from bench_parse import generate
# the static memory model does not fit 10,000 ops on eight GPUs: liveness does
text = generate(10_000).replace("  cluster dgx8\n", "  cluster dgx8\n  memory liveness\n")
open(sys.argv[1], "w", encoding="utf-8").write(text)
EOF
"$PY" -m planner solve "$out/big.plan" --algo heft --html "$out/big.html" >/dev/null 2>&1
shoot "$out/big.html" docs/report-10k.png 1350
