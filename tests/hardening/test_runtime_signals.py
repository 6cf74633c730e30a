"""SIGTERM on `compare` stops its workers, its forkserver and its temporary folder, and the
default `solve` gives the same bytes every run, next to a CPU hog too.

Before: SIGTERM killed the `compare` process alone: its forkserver, two workers (about
400 MB) and a `pymp-*` folder stayed behind, and the workers kept the output pipes open.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from .runtime_support import ROOT, alive, descendants, planner_argv, processes_with


@pytest.mark.slow
def test_sigterm_on_compare_leaves_no_process_and_no_temp_folder(tmp_path: Path) -> None:
    # a short TMPDIR: the forkserver's socket does not fit under pytest-xdist's tmp_path,
    # and compare then spawns its workers (tests/compare/test_sweep.py); this is the other way
    temp = Path(tempfile.mkdtemp(prefix="sigterm-", dir="/tmp"))
    try:
        err, survivors = _sigterm_compare(tmp_path, temp)
        left = list(temp.iterdir())
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    assert survivors == []
    assert "Traceback" not in err and "interrupted" in err
    assert left == []


def _sigterm_compare(cwd: Path, temp: Path) -> tuple[str, list[int]]:
    """Start `compare` with TMPDIR `temp`, SIGTERM it once its workers run: its stderr and
    the processes below it that outlived it (killed now)."""
    proc = subprocess.Popen(
        planner_argv("compare", str(ROOT / "specs" / "resnet.plan"), "--algos", "cpsat,auto",
                     "--time-limit", "120", "--jobs", "2"),
        cwd=cwd, env={**os.environ, "TMPDIR": str(temp)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90
        children: set[int] = set()
        while time.monotonic() < deadline and len(children) < 3:  # forkserver + 2 workers
            time.sleep(0.2)
            children |= descendants(proc.pid)
        assert len(children) >= 3, "compare never started its workers"
        assert children & processes_with("forkserver"), "no forkserver among them"
        time.sleep(2)  # the points are running
        children |= descendants(proc.pid)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(alive(p) for p in children):
            time.sleep(0.1)
        survivors = [p for p in children if alive(p)]
    finally:
        if proc.poll() is None:
            proc.kill()
    for p in survivors:
        os.kill(p, signal.SIGKILL)
    assert proc.returncode == 130, err
    return err, survivors


_HOG = "import time\nend = time.time() + 120\nwhile time.time() < end: pass\n"


def _solve(out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(planner_argv("solve", str(ROOT / "specs" / "resnet.plan"),
                                       "--out", str(out)),
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow
def test_the_default_solve_is_byte_identical_next_to_a_cpu_hog(tmp_path: Path) -> None:
    quiet = _solve(tmp_path / "a.json")
    assert quiet.returncode == 0, quiet.stderr
    hogs = [subprocess.Popen([sys.executable, "-c", _HOG]) for _ in range(os.cpu_count() or 1)]
    try:
        loaded = _solve(tmp_path / "b.json")
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert loaded.returncode == 0, loaded.stderr
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
