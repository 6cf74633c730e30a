"""Back-end profiles, availability without native imports, and quiet solves."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from planner.algorithms import Options, run
from planner.algorithms.exact import backends, quiet

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
    with caplog.at_level(logging.DEBUG, logger="planner.solver"), quiet.quiet_stdout():
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


def _built_ilp() -> Any:
    """A built ILP of a small layered DAG (a few hundred rows)."""
    from planner.algorithms.exact.common import lower_bound_s
    from planner.algorithms.exact.ilp_model import IlpModel
    from planner.algorithms.exact.instance import Instance

    from .instances import layered_problem

    inst = Instance(layered_problem(4, 12, 3))
    ilp = IlpModel(inst, inst.horizon, lower_bound_s(inst))
    ilp.build()
    return ilp


def _ticking_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """`backends`' clock: one second later at each look."""
    readings = iter(range(10**6))
    monkeypatch.setattr(backends, "time", SimpleNamespace(
        perf_counter=lambda: float(next(readings))))


def test_highs_gets_the_same_model_a_chunk_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # `load_by` hands the rows over in chunks (to look at the clock between them): HiGHS must
    # still get what Pyomo's `set_instance` gives it, column for column and row for row
    ilp = _built_ilp()
    pyo = backends.import_pyomo()
    whole = pyo.SolverFactory("appsi_highs")
    whole.set_instance(ilp.model)
    monkeypatch.setattr(backends, "LOAD_CHUNK", 7)
    chunked = pyo.SolverFactory("appsi_highs")
    backends._load_in_time(chunked, ilp.model, load_by=float("inf"))
    a, b = whole._solver_model.getLp(), chunked._solver_model.getLp()
    assert a.num_row_ == b.num_row_ == ilp.n_rows > 3 * 7
    assert a.num_col_ == b.num_col_
    for field in ("col_cost_", "col_lower_", "col_upper_", "row_lower_", "row_upper_",
                  "integrality_"):
        assert list(getattr(a, field)) == list(getattr(b, field)), field
    for field in ("start_", "index_", "value_"):
        assert list(getattr(a.a_matrix_, field)) == list(getattr(b.a_matrix_, field)), field
    # and `solve` then takes the model as handed over: the same optimum, nothing re-read
    results = chunked.solve(ilp.model, load_solutions=False)
    assert str(results.solver.termination_condition) == "optimal"
    assert whole.solve(ilp.model, load_solutions=False).problem.upper_bound == \
        pytest.approx(results.problem.upper_bound, rel=1e-9)


def test_a_load_past_its_deadline_stops_before_the_next_chunk(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ilp = _built_ilp()
    _ticking_clock(monkeypatch)
    monkeypatch.setattr(backends, "LOAD_CHUNK", 5)
    opt = backends.import_pyomo().SolverFactory("appsi_highs")
    with pytest.raises(backends.LoadOverrun) as late:
        backends._load_in_time(opt, ilp.model, load_by=2.5)  # looks at 0, 1 and 2 s go on
    assert (late.value.rows, late.value.total) == (15, ilp.n_rows)
    assert opt._solver_model.getLp().num_row_ == 15


def test_the_hand_over_counts_inside_the_solvers_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    ilp = _built_ilp()
    chunks = -(-ilp.n_rows // 5)
    _ticking_clock(monkeypatch)
    monkeypatch.setattr(backends, "LOAD_CHUNK", 5)
    given: list[dict[str, object]] = []

    def solver_not_run(opt: Any, model: Any, kwargs: dict[str, Any], *_: Any) -> Any:
        given.append(dict(kwargs["options"]))
        return backends.Outcome("error", "not run")

    monkeypatch.setattr(backends, "_run_watched", solver_not_run)
    outcome = backends.solve_pyomo(ilp.model, "highs", time_limit_s=100.0, gap=0.0, threads=1,
                                   warm_start=False, load_by=1e9)
    assert outcome.status == "error"
    # read at the start, before each chunk, and at the end: chunks + 1 seconds went by
    assert given == [{**given[0], "time_limit": 100.0 - (chunks + 1)}]
    assert chunks > 3
