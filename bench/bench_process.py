"""Whole-process figures users feel: start-up, and loading plus m-ETF at 10k and 100k ops.

    python bench/bench_process.py            # start-up, 10k and 100k ops (a few minutes)
    python bench/bench_process.py --quick    # start-up and 10k ops
    python bench/bench_process.py --rounds 3 --record   # README's figures (about 5 minutes)

1. Start-up: CPU seconds (user + system, from `resource`) of `planner --help` and
   `planner check specs/resnet.plan`, each a fresh process, median of 5.
2. Scale: `bench_parse.py`'s generated spec (devices enlarged to 2 TiB so that a plan
   fits) at 10,000 and 100,000 ops: `planner check` and `planner solve --algo metf` whole
   process (median of 3 fresh processes), then each phase (parse, lower, checks, metf,
   simulate, bounds; median of 5 fresh processes) with its growth exponent between the two sizes,
   log(t100k / t10k) / log(10). The spec is loaded as the commands load it (`_load` in
   planner.cli): the collector paused while parsing and lowering, the model then moved out
   of its sight (`gc.freeze`); without that, collections traverse the model's millions of
   objects during the later phases, and `checks` grew as n^1.21 in this benchmark although
   the commands never pay that. After a big model (100k ops, not 10k) the young
   generation is collected every 100,000 allocations, as `_load` sets it.

`--rounds N` measures the whole-process figures (1 and the two commands of 2) N times in
turns and reports the lowest and highest of the N medians: the machine's speed drifts
between minutes, and one round's median hides that. `--record` writes them (a range when
N > 1), the phases and the machine's speed to bench/results/bench_process.json for
README's table (`bench/recording.py`).

Targets (issue 16): check of resnet <= 0.3 s, --help <= 0.2 s; at 100k ops check <= 8 s
and metf <= 12 s whole process; every phase growing at most as n^1.05. The machine's speed
is printed before and after (`CALIBRATION`, a fixed workload): the same code has measured
30-40% apart at different hours on this shared machine, so compare runs by it.
"""

from __future__ import annotations

import argparse
import math
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_parse import generate  # this folder is the script's first sys.path entry
from recording import Recording, spread, value

ROOT = Path(__file__).resolve().parents[1]
#: a figure's key: a start-up command's name, or (command, ops)
Key = str | tuple[str, int]
TARGETS: dict[Key, float] = {"help": 0.2, "check resnet": 0.3, ("check", 100_000): 8.0,
           ("metf", 100_000): 12.0}
PHASES = """
import gc, sys, time
from planner.spec.load import load_modules, _lower
from planner.spec.checks import memory_diagnostics
from planner.algorithms import run
from planner.simulate import simulate
from planner.bounds import lower_bound
out = {}
def phase(name, f):
    t = time.process_time(); r = f(); out[name] = time.process_time() - t; return r
gc.disable()  # as `planner check` and `planner solve` load (planner.cli._load)
mods, src = phase("parse", lambda: load_modules(sys.argv[1]))
loaded = phase("lower", lambda: _lower(mods, src))
del mods
frozen = gc.get_freeze_count()
gc.freeze()
from planner.cli import BIG_MODEL_OBJECTS
if gc.get_freeze_count() - frozen > BIG_MODEL_OBJECTS:  # as `_load` then does
    gc.set_threshold(100_000, *gc.get_threshold()[1:])
gc.enable()
problem = next(iter(loaded.spec.plans.values()))
phase("checks", lambda: memory_diagnostics(problem, loaded.locations))
sol = phase("metf", lambda: run("metf", problem))
phase("simulate", lambda: simulate(problem, sol.plan))
phase("bounds", lambda: lower_bound(problem))
print(repr(out))
"""


def cpu_of(args: list[str], repeat: int) -> float:
    """Median CPU seconds (user + system) of `python -m planner ARGS`, fresh processes."""
    times = []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-m", "planner", *args], cwd=ROOT,
                       capture_output=True, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times)


def phases_of(paths: dict[int, Path], repeat: int = 5) -> dict[int, dict[str, float]]:
    """CPU seconds of each phase per size, median over `repeat` fresh processes (one
    process is at the mercy of whatever else the machine runs: a sub-second phase is easily
    off by 30%, and a growth exponent with it). The sizes take turns, so that a change in
    the machine's speed during the run moves both sides of a growth exponent alike."""
    runs: dict[int, list[dict[str, float]]] = {n: [] for n in paths}
    for _ in range(repeat):
        for n, path in paths.items():
            out = subprocess.run([sys.executable, "-c", PHASES, str(path)], cwd=ROOT,
                                 capture_output=True, text=True, check=True).stdout
            runs[n].append(dict(eval(out.strip().splitlines()[-1])))
    return {n: {name: statistics.median(r[name] for r in rs) for name in rs[0]}
            for n, rs in runs.items()}


#: a fixed pure-Python workload (tuples, a dict, floats, a sort), CPU seconds in a fresh
#: process: the machine's speed at the time of a run, to compare runs by. This machine is
#: shared, and the same code has measured 30-40% apart an hour apart
CALIBRATION = """
import time
t = time.process_time()
d = {}
for i in range(1_500_000):
    d[(i & 1023, i)] = i * 0.5
v = sorted(d.values(), reverse=True)
print(time.process_time() - t)
"""


def machine_speed(repeat: int = 3) -> float:
    """Median CPU seconds of `CALIBRATION` over `repeat` fresh processes."""
    return statistics.median(
        float(subprocess.run([sys.executable, "-c", CALIBRATION], capture_output=True,
                             text=True, check=True).stdout) for _ in range(repeat))


def verdict(value: float, target: float | None) -> str:
    return "" if target is None else ("met" if value <= target else "NOT met")


#: the whole-process figures: (key, label, planner's arguments; SPEC stands for the
#: generated spec of the size in the key)
STARTUP = (("help", "`planner --help`", ["--help"]),
           ("check resnet", "`planner check specs/resnet.plan`", ["check", "specs/resnet.plan"]))
AT_SIZE = (("check", ["check", "SPEC"]), ("metf", ["solve", "SPEC", "--algo", "metf"]))


def whole_process_round(paths: dict[int, Path], quick: bool) -> dict[Key, float]:
    """One round of the whole-process figures: median CPU seconds per key."""
    out: dict[Key, float] = {}
    for key, _, argv in STARTUP:
        out[key] = cpu_of(argv, 5)
    for n, path in paths.items():
        for what, argv in AT_SIZE:
            args = [str(path) if a == "SPEC" else a for a in argv]
            out[(what, n)] = cpu_of(args, 1 if n >= 100_000 and quick else 3)
            print(f"  `planner {what}` at {n:,} ops: {out[(what, n)]:.2f} s", flush=True)
    return out


def label_of(key: Key) -> str:
    if isinstance(key, tuple):
        what, n = key
        return f"`planner {what}` at {n:,} ops"
    return next(label for k, label, _ in STARTUP if k == key)


def figure_name(key: Key) -> str:
    """The recorded name: `help_cpu_s`, `check_resnet_cpu_s`, `metf_100k_cpu_s`, ..."""
    if isinstance(key, tuple):
        what, n = key
        return f"{what}_{n // 1000}k_cpu_s"
    return f"{key.replace(' ', '_')}_cpu_s"


def print_rounds(rounds: list[dict[Key, float]]) -> None:
    """The whole-process table: one column per round, then the lowest and highest."""
    many = len(rounds) > 1
    print("| figure | " + " | ".join(f"round {k + 1}" for k in range(len(rounds)))
          + (" | min–max" if many else "") + " | target | |")
    print("|---|" + "---|" * (len(rounds) + many) + "---|---|")
    for key in rounds[0]:
        times = [r[key] for r in rounds]
        target = TARGETS.get(key)
        cells = " | ".join(f"{t:.3f}" for t in times)
        if many:
            cells += f" | {min(times):.3f}–{max(times):.3f}"
        print(f"| {label_of(key)} | {cells} | {target or ''} | "
              f"{verdict(max(times), target)} |")


def print_phases(phases: dict[int, dict[str, float]], sizes: tuple[int, ...]) -> None:
    print("| phase | " + " | ".join(f"{n:,} ops (s)" for n in sizes) + " | growth |")
    print("|---|" + "---|" * len(sizes) + "---|")
    for name in phases[sizes[0]]:
        cells = " | ".join(f"{phases[n][name]:.3f}" for n in sizes)
        exp = growth(phases, sizes, name)
        shown = "" if exp is None else (
            f"n^{exp:.2f} ({'met' if exp <= 1.05 else 'NOT met'}: <= n^1.05)")
        print(f"| {name} | {cells} | {shown} |")


def growth(phases: dict[int, dict[str, float]], sizes: tuple[int, ...],
           name: str) -> float | None:
    """log(t100k / t10k) / log(10) of one phase, or None with one size."""
    if len(sizes) != 2 or phases[sizes[0]][name] <= 0:
        return None
    return math.log(phases[sizes[1]][name] / phases[sizes[0]][name]) / math.log(10)


def record(recording: Recording, rounds: list[dict[Key, float]],
           phases: dict[int, dict[str, float]], sizes: tuple[int, ...],
           speeds: tuple[float, float]) -> None:
    """The figures for README's table; a range when there are several rounds."""
    how = f"CPU seconds, median of fresh processes; {len(rounds)} round(s)"
    for key in rounds[0]:
        times = [r[key] for r in rounds]
        target = TARGETS.get(key)
        what = f"{label_of(key)}: {how}"
        recording.add(figure_name(key), spread(times, "s", what, at_most=target)
                      if len(times) > 1 else value(times[0], "s", what, at_most=target))
    for n in sizes:
        for name, seconds in phases[n].items():
            recording.add(f"phase_{name}_{n // 1000}k_cpu_s",
                          value(seconds, "s", f"{name} at {n:,} ops, CPU s, median of 5"))
    for name in phases[sizes[0]]:
        exp = growth(phases, sizes, name)
        if exp is not None:
            recording.add(f"phase_{name}_growth", value(
                exp, "exponent", f"{name}: log(t100k / t10k) / log(10)", at_most=1.05))
    recording.add("calibration_s", spread(
        {"before": speeds[0], "after": speeds[1]}, "s",
        "the fixed reference workload's CPU seconds before and after (lower is faster)"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="start-up and 10k ops only")
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure the whole-process figures this many times, in turns")
    ap.add_argument("--record", action="store_true",
                    help="write the figures to bench/results/bench_process.json")
    args = ap.parse_args()
    recording = Recording.start(__file__, args.quick) if args.record else None
    before = machine_speed()
    print(f"machine: the reference workload (`CALIBRATION`) took {before:.3f} s CPU")
    sizes = (10_000,) if args.quick else (10_000, 100_000)
    with tempfile.TemporaryDirectory() as tmp:
        paths: dict[int, Path] = {}
        for n in sizes:
            paths[n] = Path(tmp) / f"g{n}.plan"
            paths[n].write_text(generate(n).replace("memory 32 GiB", "memory 2 TiB"))
        rounds = []
        for k in range(max(1, args.rounds)):
            t0 = time.perf_counter()
            rounds.append(whole_process_round(paths, args.quick))
            print(f"round {k + 1}: {time.perf_counter() - t0:.0f} s wall", flush=True)
        phases = phases_of(paths)
    print()
    print_rounds(rounds)
    print()
    print_phases(phases, sizes)
    print()
    after = machine_speed()
    print(f"machine: the reference workload took {before:.3f} s CPU before the run and "
          f"{after:.3f} s after it (lower is faster)")
    if recording is not None:
        record(recording, rounds, phases, sizes, (before, after))
        recording.write()


if __name__ == "__main__":
    main()
