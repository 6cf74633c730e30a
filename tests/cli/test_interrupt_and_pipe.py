"""Ctrl-C during `solve` (exit 130, the best plan so far or nothing) and a closed stdout
pipe (a quiet exit 141)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import planner.algorithms
from planner.algorithms.base import Interrupted
from planner.codes import CODES

from .helpers import PLACED, ROOT, invoke


def _raising(monkeypatch: pytest.MonkeyPatch, make: Any) -> None:
    """Make every algorithm raise `make(heft's solution)` (heft's plan is a valid one)."""
    real = planner.algorithms.run

    def run(name: str, problem: Any, options: Any = None) -> Any:
        raise make(real("heft", problem))

    monkeypatch.setattr(planner.algorithms, "run", run)


def test_interrupted_with_a_plan_prints_and_writes_it(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _raising(monkeypatch, Interrupted)
    (tmp_path / "s.plan").write_text(PLACED)
    code, out, err = invoke(["solve", "s.plan", "--algo", "cpsat", "--out", "p.json",
                             "--html", "r.html"], tmp_path)
    assert code == 130
    assert "interrupted" in out.split("status", 1)[1].splitlines()[0]  # the status row
    assert "error[E607]: interrupted: the best plan found so far is shown and written " \
           "to p.json and r.html" in err
    assert "interrupted" in (tmp_path / "r.html").read_text(encoding="utf-8")
    plan = json.loads((tmp_path / "p.json").read_text())
    assert set(plan["placement"]) == {"a", "b"}
    # the plan file is marked too (docs/limits.md), and reads back as a plan all the same
    assert plan["status"] == "interrupted"
    code, _, err = invoke(["simulate", "s.plan", "--placement", "p.json"], tmp_path)
    assert code == 0, err
    code, out, _ = invoke(["solve", "s.plan", "--algo", "cpsat", "--json"], tmp_path)
    doc = json.loads(out)
    assert (code, doc["exit_code"], doc["ok"]) == (130, 130, False)
    assert doc["result"]["status"] == "interrupted" and doc["result"]["feasible"] is True
    assert [(d["code"], d["severity"]) for d in doc["diagnostics"]] == [("E607", "error")]
    # the code's table (and docs/codes.md, made from it) says so: it said "a warning when
    # the best plan so far was kept"
    assert "warning" not in CODES["E607"].meaning and "error" in CODES["E607"].meaning


@pytest.mark.parametrize("make", [lambda _: KeyboardInterrupt(), lambda _: Interrupted(None)],
                         ids=["KeyboardInterrupt", "Interrupted(None)"])
def test_interrupted_before_any_plan_writes_nothing(tmp_path: Path, make: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _raising(monkeypatch, make)
    (tmp_path / "s.plan").write_text(PLACED)
    code, out, err = invoke(["solve", "s.plan", "--algo", "heft", "--out", "p.json"], tmp_path)
    assert code == 130 and out == ""
    assert "error[E607]: interrupted before any plan was found" in err
    assert "Traceback" not in err and not (tmp_path / "p.json").exists()
    code, out, _ = invoke(["solve", "s.plan", "--algo", "heft", "--json"], tmp_path)
    doc = json.loads(out)
    assert (code, doc["exit_code"], doc["result"]) == (130, 130, None)
    assert [d["code"] for d in doc["diagnostics"]] == ["E607"]


@pytest.mark.slow
def test_sigint_to_a_searching_cpsat_exits_130(tmp_path: Path) -> None:
    # resnet on four 8 GiB GPUs: cpsat is still searching (gap open) after 30 s; a signal
    # that lands earlier (heuristics, model build) ends the same way, exit 130
    proc = subprocess.Popen(
        [sys.executable, "-m", "planner", "solve", str(ROOT / "specs" / "resnet.plan"),
         "--algo", "cpsat", "--time-limit", "30", "--out", "p.json"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(6)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert "Traceback" not in err
    assert proc.returncode == 130, err
    if (tmp_path / "p.json").exists():  # a plan was found: shown, marked interrupted
        assert "interrupted" in out.split("status", 1)[1].splitlines()[0]
    else:
        assert "interrupted" in err


@pytest.mark.parametrize("args", [
    ["check", "--json", "s.plan"],
    ["simulate", "--json", "s.plan"],
    ["solve", "s.plan", "--algo", "heft"],  # rich tables
    ["check", "--json", "--no-such-option"],  # a parser error's envelope
    ["fmt", "--check", "m.plan"],  # buffered lines, flushed at exit
])
def test_closed_stdout_is_a_quiet_exit(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "s.plan").write_text(PLACED)
    (tmp_path / "m.plan").write_text("graph g {   op a { time 1 ms } }\n")  # unformatted
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes anything
    try:
        proc = subprocess.run([sys.executable, "-m", "planner", *args], cwd=tmp_path,
                              stdout=write, stderr=subprocess.PIPE, text=True, timeout=120,
                              check=False)
    finally:
        os.close(write)
    assert proc.returncode == 141
    assert proc.stderr == ""


@pytest.mark.parametrize("stderr", ["closed", "full"])
def test_a_closed_or_full_stderr_loses_its_lines_not_the_command(tmp_path: Path,
                                                                stderr: str) -> None:
    # before: `2>&-` made `solve` end in an AttributeError (`sys.stderr` is None): exit 1,
    # and no `--out`; `2>/dev/full` made `check` of a valid spec exit 1
    if stderr == "full" and not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    (tmp_path / "s.plan").write_text(PLACED)
    (tmp_path / "bad.plan").write_text("graph g { op a { tiem 1 ms } }\n")

    def run(*args: str) -> int:
        sink = open("/dev/full", "w") if stderr == "full" else None  # noqa: SIM115
        try:
            return subprocess.run(
                [sys.executable, "-m", "planner", *args], cwd=tmp_path,
                stdout=subprocess.DEVNULL, stderr=sink, timeout=120, check=False,
                preexec_fn=(lambda: os.close(2)) if sink is None else None).returncode
        finally:
            if sink is not None:
                sink.close()

    assert run("solve", "s.plan", "--algo", "heft", "--out", "p.json") == 0
    assert json.loads((tmp_path / "p.json").read_text())["placement"]
    assert run("check", "s.plan") == 0
    assert run("check", "bad.plan") == 1  # the verdict stays the command's


def test_an_interrupted_pipeilp_keeps_its_warm_starts_recomputation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # four layers on two 13000 B devices, GPipe, 8 micro-batches: the warm start is the
    # recomputing contiguous split on d0. Before: a Ctrl-C while the solver ran gave its
    # placement alone, judged without recomputation over d0's memory (E401, exit 3, no
    # `--out`) where its plan fits
    from planner.algorithms.pipeilp import solve as pipeilp_solve

    def stopped(*args: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeilp_solve, "_solve", stopped)
    layers = "".join(f"op f{k} {{time 1 ms; params 100 B; output 1000 B}}; op b{k} {{time "
                     f"2 ms; output 10 B; backward_of f{k}}}; " for k in range(4))
    (tmp_path / "s.plan").write_text(
        "cluster c { device d[0..1] { memory 13000 B }; link d[*] <-> d[*] { bandwidth 1 GB/s } }\n"
        f"graph g {{ {layers}f0 -> f1 -> f2 -> f3 -> b3 -> b2 -> b1 -> b0; f0 -> b0; "
        "f1 -> b1; f2 -> b2 }\n"
        "plan p { graph g; cluster c; objective pipeline; microbatches 8; schedule gpipe }\n")
    code, out, _ = invoke(["solve", "s.plan", "--algo", "pipeilp", "--time-limit", "5",
                           "--out", "p.json", "--json"], tmp_path)
    doc = json.loads(out)
    assert code == 130 and doc["exit_code"] == 130
    assert doc["result"]["status"] == "interrupted" and doc["result"]["feasible"]
    assert doc["result"]["recompute"] == ["d0"]
    written = json.loads((tmp_path / "p.json").read_text())
    assert written["status"] == "interrupted" and written["recompute"] == ["d0"]
