"""Ctrl-C during `planner solve`: does the interrupted command keep its best plan?

    python bench/bench_ctrlc.py                       # auto and search, SIGINT at 2..12 s
    python bench/bench_ctrlc.py --algo search --at 6 8 --root /tmp/copy
    python bench/bench_ctrlc.py --root /tmp/copy --cold   # numba's cache emptied each run

For each algorithm and each delay, one fresh `python -m planner solve specs/gnmt.plan
--plan gnmt8_small4 --out p.json` (run in `--root`: a copy with a cold numba cache shows
the compile phase; `--cold` deletes its numba cache files before every run, so only use
it on a copy) gets SIGINT that many seconds after it started. One line per run: the
exit status (130 wanted), whether p.json was written and is JSON, how long the process
took to end after the signal, the planning time it printed, and the first error line of
stderr when it is not the interrupted diagnostic (E607), or `Traceback` when one was
printed. Issue 25: exit 4 with `E999 ... SystemError: CPUDispatcher(...) returned a result
with an exception set` in every interrupt of the search phase.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one(root: Path, algo: str | None, at: float, timeout: float, cold: bool) -> str:
    """Run one interrupted solve; its line of the table."""
    if cold:
        for cached in [*root.glob("planner/**/*.nbi"), *root.glob("planner/**/*.nbc")]:
            cached.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "p.json"
        cmd = [sys.executable, "-m", "planner", "solve", str(root / "specs/gnmt.plan"),
               "--plan", "gnmt8_small4", "--out", str(out)]
        if algo:
            cmd += ["--algo", algo]
        env = {**os.environ, "PYTHONPATH": str(root)}
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            proc.communicate(timeout=at)
            sent = None  # it ended before the signal
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            sent = time.perf_counter()
        stdout, stderr = proc.communicate(timeout=timeout)
        ended = time.perf_counter()
        try:
            json.loads(out.read_text())
            written = "yes"
        except (OSError, ValueError):
            written = "no"
    if "Traceback" in stderr:  # kept for a look
        Path(tempfile.gettempdir(), f"bench_ctrlc_{algo or 'auto'}_{at:g}.err").write_text(stderr)
    planning = re.search(r"planning time\s+(.+)", stdout + stderr)
    bad = next((ln.strip() for ln in stderr.splitlines()
                if "Traceback" in ln or ("error[" in ln and "E607" not in ln)), "")
    after = f"{ended - sent:5.2f} s" if sent is not None else "(done)"
    return (f"{algo or 'auto':7} {at:5.1f} s  exit {proc.returncode:3}  p.json {written:3}  "
            f"ended {after:>8} after SIGINT  planning "
            f"{planning.group(1).strip() if planning else '-':>10}  {bad[:90]}"
            f"  (total {ended - t0:.1f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="the repository copy to run")
    ap.add_argument("--algo", nargs="*", default=["auto", "search"])
    ap.add_argument("--at", nargs="*", type=float, default=[2, 4, 6, 8, 12])
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds to wait for the end after the signal")
    ap.add_argument("--cold", action="store_true",
                    help="delete --root's numba cache files before each run (a copy only)")
    args = ap.parse_args()
    if args.cold and args.root.resolve() == ROOT:
        ap.error("--cold deletes cache files: give --root a copy of the repository")
    for algo in args.algo:
        for at in args.at:
            print(one(args.root, None if algo == "auto" else algo, at, args.timeout,
                      args.cold), flush=True)


if __name__ == "__main__":
    main()
