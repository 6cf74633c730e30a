"""External solvers are verified and contained: a claimed optimum counts only with a whole
solution the simulator accepts; a solver (a script, its children) is killed as a process
group on time-out, Ctrl-C and SIGTERM; no `.lp`/`.soln`/log file is left behind.

Each test puts a fake `cbc` (a /bin/sh script) first on PATH and runs `planner solve` in a
subprocess with its own TMPDIR. Before: a fake that claimed "Optimal" with an empty
solution was reported `optimal` (the plan was the warm start's, gap 38%); a hanging script
ran on past the watchdog (it matched the process name), and SIGINT/SIGTERM left it running.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .runtime_support import alive, planner_argv

pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="needs /bin/sh")

#: six ops on three devices, contention none: the heuristics' plan is 20% above the lower
#: bound, so only a solver's (claimed) proof could make it `optimal`
SPEC = """
graph g {
  op a { time 3 ms  output 40 MB }
  op b { time 5 ms  output 40 MB }
  op c { time 4 ms  output 40 MB }
  op d { time 6 ms  output 40 MB }
  op e { time 2 ms  output 40 MB }
  op f { time 3 ms }
  a -> b  a -> c  a -> d  b -> e  c -> e  d -> f  e -> f
}
cluster c {
  device gpu[0..2] { memory 1 GB }
  link gpu[*] <-> gpu[*] { bandwidth 20 GB/s  latency 1 ms }
}
plan p { graph g cluster c  contention none }
"""

_VERSION = """#!/bin/sh
case "$1 $2" in
  "-stop "*|"dummy -AMPL") echo "Version: 2.10.10"; exit 0;;
esac
"""

#: claims optimal, writes a solution file with no variable in it
LIAR = _VERSION + """sol=""; prev=""
for a in "$@"; do [ "$prev" = "-solu" ] && sol="$a"; prev="$a"; done
echo "Result - Optimal solution found"
printf 'Optimal - objective value 0.00000000\\n' > "$sol"
"""

#: never answers: records its own pid and a grandchild's, then waits
HANG = _VERSION + """echo $$ >> "$PIDS"
sleep 300 &
echo $! >> "$PIDS"
wait
"""


#: `planner` with the watchdog's grace past the limit 1 s, not 5 (`backends.WATCHDOG_GRACE_S`):
#: the fakes that hang are killed at the limit plus the grace, whatever its length; the
#: other 4 s were waiting (a tiny model's build, which the grace bounds too, takes ms)
SHORT_GRACE = ("import sys\n"
               "from planner.algorithms.exact import backends\n"
               "backends.WATCHDOG_GRACE_S = 1.0\n"
               "sys.argv = ['planner', *sys.argv[1:]]\n"
               "from planner.__main__ import run\n"
               "run()\n")


def _short_grace_argv(*args: str) -> list[str]:
    return [sys.executable, "-c", SHORT_GRACE, *args]


def _setup(tmp_path: Path, script: str) -> dict[str, str]:
    (tmp_path / "bin").mkdir()
    fake = tmp_path / "bin" / "cbc"
    fake.write_text(script)
    fake.chmod(0o755)
    (tmp_path / "tmp").mkdir()
    (tmp_path / "s.plan").write_text(SPEC)
    return {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
            "TMPDIR": str(tmp_path / "tmp"), "PIDS": str(tmp_path / "pids")}


def _pids(tmp_path: Path) -> list[int]:
    try:
        return [int(x) for x in (tmp_path / "pids").read_text().split()]
    except FileNotFoundError:
        return []


def _gone(pids: list[int], within: float = 5.0) -> list[int]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


def _solve_and_reap(tmp_path: Path, env: dict[str, str]
                    ) -> tuple[subprocess.CompletedProcess[str], float]:
    """`solve --algo ilp --solver cbc --time-limit 1` with the fake on PATH (`SHORT_GRACE`);
    asserts that the solver and the process it started (as `$PIDS` records them) are gone
    after it. Returns the run and its seconds."""
    t0 = time.monotonic()
    try:
        proc = subprocess.run(_short_grace_argv("solve", "s.plan", "--algo", "ilp", "--solver",
                                           "cbc", "--time-limit", "1", "--json"),
                              cwd=tmp_path, env=env, text=True, capture_output=True,
                              timeout=120, check=False)
        took = time.monotonic() - t0
        pids = _pids(tmp_path)
        assert len(pids) == 2, proc.stderr
        assert _gone(pids) == [], "the solver or the process it started survived"
    finally:
        _kill(_pids(tmp_path))
    return proc, took


def _kill(pids: list[int]) -> None:
    for p in pids:
        if alive(p):
            os.kill(p, signal.SIGKILL)


@pytest.mark.slow
def test_a_claimed_optimum_without_a_solution_is_a_fallback(tmp_path: Path) -> None:
    env = _setup(tmp_path, LIAR)
    proc = subprocess.run(planner_argv("solve", "s.plan", "--algo", "ilp", "--solver", "cbc",
                                       "--json"), cwd=tmp_path, env=env, text=True,
                          capture_output=True, timeout=120, check=False)
    doc = json.loads(proc.stdout)
    result = doc["result"]
    assert result["status"] == "fallback", result
    assert result["solver_status"] == "nosolution"
    assert "cbc said it was optimal" in result["reason"] and "not used" in result["reason"]
    assert result["gap"] > 0.15  # the warm start's gap (20%): nothing was proved
    assert doc["exit_code"] == 0  # a fallback is a plan, honestly labelled
    assert list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.slow
def test_a_hanging_script_solver_is_killed_with_its_children(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    proc, took = _solve_and_reap(tmp_path, _setup(tmp_path, HANG))
    result = json.loads(proc.stdout)["result"]
    assert result["status"] == "fallback" and "killed" in result["reason"]
    assert took < 60  # the watchdog: 1 s + SHORT_GRACE's 1 s, not the script's 300 s
    assert list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=["SIGINT", "SIGTERM", "SIGHUP"])
@pytest.mark.slow
def test_a_signal_during_an_external_solve_kills_it_and_cleans_up(tmp_path: Path,
                                                                  sig: int) -> None:
    env = _setup(tmp_path, HANG)
    proc = subprocess.Popen(planner_argv("solve", "s.plan", "--algo", "ilp", "--solver", "cbc",
                                         "--time-limit", "100", "--out", "p.json"),
                            cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while len(_pids(tmp_path)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        pids = _pids(tmp_path)
        assert len(pids) == 2, "the fake solver never started"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        assert _gone(pids) == [], "the solver script or its child survived"
    finally:
        _kill(_pids(tmp_path))
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "E607" in err
    # the warm start is the best plan so far: written, marked interrupted
    assert json.loads((tmp_path / "p.json").read_text())["placement"]
    assert "interrupted" in out
    assert list((tmp_path / "tmp").iterdir()) == []


#: hangs after starting a grandchild in a session of its own, out of the solver's group
ESCAPE = _VERSION + """echo $$ >> "$PIDS"
setsid sleep 301 &
echo $! >> "$PIDS"
sleep 300
"""

#: prints $FLOOD bytes of log, then hangs
FLOOD = _VERSION + """echo $$ >> "$PIDS"
head -c "$FLOOD" /dev/zero | tr '\\0' 'x' | fold -w 100
sleep 300
"""


@pytest.mark.skipif(shutil.which("setsid") is None, reason="needs setsid (util-linux)")
@pytest.mark.slow
def test_a_grandchild_that_leaves_the_process_group_is_killed_too(tmp_path: Path) -> None:
    """Before: the `setsid` grandchild survived planner, and held the output pipe open, so
    the solve waited 30 s more and said the solver "could not be killed" (40.6 s for
    `--time-limit 3`)."""
    proc, _ = _solve_and_reap(tmp_path, _setup(tmp_path, ESCAPE))
    result = json.loads(proc.stdout)["result"]
    assert result["status"] == "fallback", result
    assert "was killed" in result["reason"] and "could not" not in result["reason"], result


@pytest.mark.slow
def test_a_solver_that_prints_without_end_costs_bounded_memory(tmp_path: Path) -> None:
    """Before: the whole log was kept (three times over): 300 MB of it took 1.73 GB."""
    env = {**_setup(tmp_path, FLOOD), "FLOOD": str(200 * 2**20)}
    measure = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:]); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    try:
        proc = subprocess.run([sys.executable, "-c", measure,
                               *_short_grace_argv("solve", "s.plan", "--algo", "ilp",
                                                  "--solver", "cbc", "--time-limit", "2",
                                                  "--out", "p.json")],
                              cwd=tmp_path, env=env, text=True, capture_output=True,
                              timeout=300, check=False)
    finally:
        _kill(_pids(tmp_path))
    peak_mib = int(proc.stdout.split()[-1]) / 1024
    # before: 477 MiB (the log kept whole, three times over); now 77 MiB
    assert peak_mib < 250, f"planner peaked at {peak_mib:.0f} MiB for 200 MiB of solver log"
    assert json.loads((tmp_path / "p.json").read_text())["placement"]  # the fallback plan
    assert list((tmp_path / "tmp").iterdir()) == []


def test_the_kept_output_is_its_start_and_its_end() -> None:
    from planner.algorithms.exact import children

    script = ("import sys; w = sys.stdout.write; w('FIRST\\n'); "
              "[w('x' * 99 + '\\n') for _ in range(60_000)]; w('Result - Optimal\\n')")
    done = children.run([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    out = done.stdout
    assert out.startswith("FIRST\n") and out.endswith("Result - Optimal\n")
    assert "bytes of solver output left out]" in out
    assert len(out) <= children.HEAD_BYTES + children.TAIL_BYTES + 200
    assert children.live_groups() == set()
