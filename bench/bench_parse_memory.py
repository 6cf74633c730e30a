"""Benchmark: memory that loading a spec takes, per byte of its text (docs/limits.md).

    python bench/bench_parse_memory.py            # 10,000 and 100,000 ops
    python bench/bench_parse_memory.py --quick    # 10,000 ops only

Two kinds of spec: `generated`, bench_parse.py's (one op per line with realistic
attributes and long names, two edges per op), and `dense`, the most objects per byte a
plain spec holds (`op o17 { time 1 ms }`, two edges `oA -> oB` per op). Each spec is
loaded (`load_path`: read, parse, lower) in a fresh process; the figure is the growth of
its peak RSS (`VmHWM`) over its RSS before the load (`VmRSS`), planner's imports
excluded, divided by the file's bytes. Linux only.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_parse import generate


def dense(n_ops: int, seed: int = 0) -> str:
    """A spec of `n_ops` ops with short names and a time alone, two edges per op."""
    rng = random.Random(seed)
    lines = ["cluster c {", "  device g[0..3] { memory 16 GiB }",
             "  link g[0..3] <-> g[0..3] { bandwidth 10 GB/s }", "}", "graph d {"]
    lines += [f"  op o{i} {{ time 1 ms }}" for i in range(n_ops)]
    for i in range(1, n_ops):
        lines += [f"  o{rng.randrange(i)} -> o{i}" for _ in range(min(i, 2))]
    lines += ["}", "plan p {", "  graph d", "  cluster c", "}"]
    return "\n".join(lines) + "\n"


def _status_kib(field: str) -> int:
    """A field of /proc/self/status, in KiB (`VmRSS`: resident now; `VmHWM`: its peak)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise SystemExit(f"no {field} in /proc/self/status (Linux only)")


def worker(path: str) -> None:
    """In a fresh process: the growth (bytes) of its peak RSS over its RSS before one load,
    as JSON. Not `ru_maxrss`: after exec it starts at the parent's peak (Linux keeps it),
    which hid up to half the growth here."""
    from planner.spec.load import load_path

    before = _status_kib("VmRSS")
    assert load_path(path).spec.plans
    print(json.dumps({"growth": (_status_kib("VmHWM") - before) * 1024}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    sizes = (10_000,) if args.quick else (10_000, 100_000)
    with tempfile.TemporaryDirectory() as tmp:
        for kind, make in (("generated", generate), ("dense", dense)):
            for n in sizes:
                path = Path(tmp) / f"{kind}{n}.plan"
                path.write_text(make(n), encoding="utf-8")
                out = subprocess.run([sys.executable, __file__, "--worker", str(path)],
                                     check=True, capture_output=True, text=True).stdout
                growth = json.loads(out.strip().splitlines()[-1])["growth"]
                size = path.stat().st_size
                print(f"{kind:9} {n:>7,} ops  {size / 2**20:6.1f} MiB  peak RSS +"
                      f"{growth / 2**20:6.0f} MiB  {growth / size:5.1f} bytes per byte")


if __name__ == "__main__":
    main()
