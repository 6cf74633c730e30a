"""Back-end profiles, availability without native imports, and quiet solves."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from planner.algorithms import Options, run
from planner.algorithms.exact import backends

from .instances import random_problem

ROOT = Path(__file__).resolve().parents[2]


def test_profiles_name_each_solvers_options() -> None:
    prof = backends.profiles()
    assert {"highs", "cbc", "glpk", "scip", "gurobi", "cplex", "cpsat"} <= set(prof)
    assert (prof["highs"].pyomo, prof["highs"].time_limit, prof["highs"].warm_start) == (
        "appsi_highs", "time_limit", True)
    assert (prof["cbc"].time_limit, prof["cbc"].gap, prof["cbc"].warm_start) == (
        "sec", "ratio", True)
    assert prof["glpk"].time_limit == "tmlim" and prof["glpk"].time_limit_integer
    assert not prof["glpk"].warm_start
    assert prof["scip"].pyomo == "scip_direct" and prof["scip"].options["display/freq"] == -1
    assert backends.threads_for("cpsat") == 8
    assert backends.threads_for("cbc") == 1  # deterministic when CBC ends by itself
    assert backends.threads_for("glpk") == backends.default_threads()
    assert prof["highs"].seed == "random_seed"
    # the checkout's file is what a source install reads
    assert backends.profiles_text() == (ROOT / "solvers" / "profiles.toml").read_text()


def test_availability_needs_no_native_import() -> None:
    code = (
        "import sys\n"
        "from planner.algorithms.exact import backends\n"
        "print(backends.available('highs'), backends.available('cbc'))\n"
        "print(backends.available_solvers())\n"
        "print(sorted(m for m in ('highspy', 'pyomo', 'ortools') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.splitlines()
    assert out[0].split()[0] == "True"  # highspy is a core dependency
    assert "highs" in out[1]
    assert out[2] == "[]"


def test_a_missing_binary_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    assert not backends.available("cbc")
    assert not backends.available("glpk")
    assert backends.available("highs")


def test_quiet_stdout_keeps_c_level_output_off_stdout(
        capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="planner.solver"), backends.quiet_stdout():
        os.write(1, b"native banner\n")
        print("python banner")
    assert capfd.readouterr().out == ""
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "native banner" in text and "python banner" in text


@pytest.mark.parametrize("solver", ["highs", "cbc", "glpk"])
def test_solves_print_nothing_on_stdout(solver: str, capfd: pytest.CaptureFixture[str]) -> None:
    if not backends.available(solver):
        pytest.skip(f"solver `{solver}` is not installed (run solvers/install.sh)")
    logging.getLogger("planner.solver").setLevel(logging.DEBUG)
    try:
        sol = run("ilp", random_problem(4, 6, 2), Options(solver=solver, time_limit_s=20.0))
    finally:
        logging.getLogger("planner.solver").setLevel(logging.NOTSET)
    assert sol.status == "optimal"
    assert capfd.readouterr().out == ""


def test_install_script_is_idempotent() -> None:
    if not (backends.available("cbc") and backends.available("glpk")):
        pytest.skip("cbc/glpk not installed: running the script would install them")
    res = subprocess.run(["bash", str(ROOT / "solvers" / "install.sh")], capture_output=True,
                         text=True, check=True)
    assert "already installed" in res.stderr
    assert res.stdout == ""
