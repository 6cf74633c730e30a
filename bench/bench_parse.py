"""Benchmark: parse + lower and format of generated specs (10,000 and 100,000 ops).

    python bench/bench_parse.py            # 10k (every parser) and 100k (fast path)
    python bench/bench_parse.py --quick    # 10k only
    python bench/bench_parse.py --full     # the Lark parsers at 100k too (minutes)
    python bench/bench_parse.py --record   # also write README's figures (bench/results/)

Each spec has one op per line with realistic attributes, two edges per op, an 8-GPU
cluster and one plan. Every figure is the median of 3 runs, each in a fresh Python process
(nothing cached between runs). Columns: "parse+lower" is `load_path` (read, parse, lower)
timed inside the process, imports excluded, and "(cpu)" its CPU time, a steadier figure
than wall time on a shared machine; "process" is the whole process, interpreter start-up
and imports included; "format" is `format_source` (its parse included); "memory" is the
process's peak RSS minus that of a bare interpreter (printed below the table). Parsers:
`fast` is the default path (regular-expression tokens and a recursive-descent reader; Lark
only sees text the fast path declines, i.e. errors); `lark` forces Lark with lark-cython
(PLANNER_PARSER=lark); `lark-py` forces pure-Python Lark (also PLANNER_NO_CYTHON=1).
Targets (issue 2), checked on the wall time: 10k ops <= 1 s, 100k ops <= 10 s, memory <=
1 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from recording import Recording, value

VARIANTS = {
    "fast": {},
    "lark": {"PLANNER_PARSER": "lark"},
    "lark-py": {"PLANNER_PARSER": "lark", "PLANNER_NO_CYTHON": "1"},
}
TARGETS = {10_000: 1.0, 100_000: 10.0}
MEMORY_TARGET_MB = 1024

CLUSTER = """\
# Eight GPUs in two NVLink islands, bridged more slowly.
cluster dgx8 {
  device gpu[0..7] {
    kind   v100
    memory 32 GiB
    flops  15.7 TFLOPS
  }

  link gpu[0..3] <-> gpu[0..3] { bandwidth 50 GB/s  latency 2 us }
  link gpu[4..7] <-> gpu[4..7] { bandwidth 50 GB/s  latency 2 us }
  link gpu[0..3] <-> gpu[4..7] { bandwidth 25 GB/s  latency 4 us }
}
"""

KINDS = ["MatMul", "Add", "Relu", "Softmax", "LayerNorm", "Conv", "Concat", "Gather"]


def generate(n_ops: int, seed: int = 0) -> str:
    """A canonical spec with `n_ops` ops (one per line) and `2 * n_ops` edges."""
    rng = random.Random(seed)
    names = [f'"layer{i // 50}/{KINDS[i % len(KINDS)]}_{i}:0"' for i in range(n_ops)]
    lines = [CLUSTER, "graph big {"]
    for i, name in enumerate(names):
        attrs = [f"time {rng.randint(1, 9999) / 100} us"]
        if i % 7 == 0:
            attrs.append(f"time[cpu] {rng.randint(1, 999) / 10} ms")
        attrs.append(f"flops {rng.randint(1, 9999) / 10} MFLOP")
        if i % 3 == 0:
            attrs.append(f"params {rng.randint(1, 4096)} KiB")
        attrs.append(f"output {rng.randint(1, 64)} MiB")
        if i % 5 == 0:
            attrs.append(f"temp {rng.randint(1, 16)} MiB")
        lines.append(f"  op {name} {{ {'  '.join(attrs)} }}")
    edges: set[tuple[int, int]] = set()
    while len(edges) < 2 * n_ops:
        b = rng.randint(1, n_ops - 1)
        edges.add((rng.randint(max(0, b - 64), b - 1), b))
    for k, (a, b) in enumerate(sorted(edges)):
        tail = f" {{ bytes {rng.randint(1, 512)} KiB }}" if k % 4 == 0 else ""
        lines.append(f"  {names[a]} -> {names[b]}{tail}")
    lines.append("}\n")
    lines.append(f"plan big_on_dgx8 {{\n  graph   big\n  cluster dgx8\n"
                 f"  pin {names[0]} to gpu0\n}}")
    return "\n".join(lines) + "\n"


def worker(path: str, what: str) -> None:
    """Run in a fresh process: time one load or one format, print JSON."""
    import gc

    from planner.spec.format import format_source
    from planner.spec.load import load_path

    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    if what == "load":
        loaded = load_path(path)
        assert loaded.spec.plans
    else:
        format_source(Path(path).read_text(encoding="utf-8"), path)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_kb": peak_kb}))


def run(path: Path, what: str, variant: str) -> tuple[float, float, float, float]:
    """(seconds inside, CPU seconds inside, seconds for the whole process, peak RSS in
    KiB) of one fresh run."""
    env = {**os.environ, **VARIANTS[variant]}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--worker", str(path), what], env=env,
                         check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    data = json.loads(out.strip().splitlines()[-1])
    return data["seconds"], data["cpu"], wall, data["peak_kb"]


def baseline_kb() -> int:
    """Peak RSS of a bare interpreter."""
    code = "import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    return int(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                              text=True).stdout)


def main() -> None:
    """Generate the specs, measure, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="10k ops only")
    ap.add_argument("--full", action="store_true", help="also the Lark parsers at 100k ops")
    ap.add_argument("--runs", type=int, default=3, help="fresh processes per figure")
    ap.add_argument("--record", action="store_true",
                    help="write the figures to bench/results/bench_parse.json")
    ap.add_argument("--worker", nargs=2, metavar=("PATH", "WHAT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    try:
        import lark_cython  # noqa: F401
        cython = "installed"
    except ImportError:
        cython = "not installed"
    sizes = [10_000] if args.quick else [10_000, 100_000]
    recording = Recording.start(__file__, args.quick) if args.record else None
    base = baseline_kb()
    header = (f"{'ops':>7} {'edges':>7} {'MB':>6} {'parser':<8} {'parse+lower':>11} "
              f"{'(cpu)':>7} {'process':>8} {'format':>8} {'memory':>9}  target")
    print(header)
    print("-" * len(header))
    misses = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = Path(tmp) / f"gen{n}.plan"
            path.write_text(generate(n), encoding="utf-8")
            size_mb = path.stat().st_size / 1e6
            variants = ["fast"] if n > 10_000 and not args.full else list(VARIANTS)
            for variant in variants:
                loads = [run(path, "load", variant) for _ in range(args.runs)]
                inside = statistics.median(x[0] for x in loads)
                cpu = statistics.median(x[1] for x in loads)
                whole = statistics.median(x[2] for x in loads)
                mem_mb = (statistics.median(x[3] for x in loads) - base) / 1024
                fmt = statistics.median(run(path, "format", variant)[0]
                                        for _ in range(args.runs))
                ok = inside <= TARGETS[n] and mem_mb <= MEMORY_TARGET_MB
                verdict = ("ok" if ok else "MISS") + f" (<= {TARGETS[n]:g} s)"
                if variant == "fast" and not ok:
                    misses.append(n)
                print(f"{n:>7} {2 * n:>7} {size_mb:>6.1f} {variant:<8} {inside:>10.2f}s "
                      f"{cpu:>6.2f}s {whole:>7.2f}s {fmt:>7.2f}s {mem_mb:>6.0f} MB  {verdict}",
                      flush=True)
                if recording is not None:
                    record(recording, n, variant, args.runs, inside, cpu, whole, fmt, mem_mb)
    print(f"\nmedian of {args.runs} fresh processes each; memory = peak RSS - {base / 1024:.0f} MB "
          f"(a bare interpreter); lark-cython {cython}; Python {sys.version.split()[0]}; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    if misses:
        print("targets missed (fast path): " + ", ".join(f"{n} ops" for n in misses))
    if recording is not None:
        recording.context["lark_cython"] = cython
        recording.write()


def record(recording: Recording, n: int, variant: str, runs: int, inside: float,
           cpu: float, whole: float, fmt: float, mem_mb: float) -> None:
    """One table line's figures, named `<figure>_<size>k` (with the parser unless `fast`)."""
    tag = f"{n // 1000}k" + ("" if variant == "fast" else f"_{variant.replace('-', '_')}")
    how = f"{n:,} ops, parser {variant}, median of {runs} fresh processes"
    recording.add(f"load_{tag}_s", value(inside, "s", f"parse + lower (load_path), {how}",
                                         at_most=TARGETS[n] if variant == "fast" else None))
    recording.add(f"load_{tag}_cpu_s", value(cpu, "s", f"parse + lower, CPU, {how}"))
    recording.add(f"process_{tag}_s", value(whole, "s", f"the whole process, {how}"))
    recording.add(f"format_{tag}_s", value(fmt, "s", f"format_source, {how}"))
    recording.add(f"memory_{tag}_mb", value(
        mem_mb, "MB", f"peak RSS above a bare interpreter, {how}",
        at_most=MEMORY_TARGET_MB if variant == "fast" else None))


if __name__ == "__main__":
    main()
