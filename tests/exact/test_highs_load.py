"""HiGHS gets the exact models in bulk (`highs_load`): the model appsi's own hand-over
gives it, column for column and row for row, without appsi's per-row work.

Before, `backends._load_in_time` handed each chunk to appsi's `add_constraints`, which walks
every row twice and adds its new columns one row at a time: ResNet-50's pipeline ILP
(15,253 rows, PipeDream's profile under `interleaved`) took 1.2-1.8 s of CPU to hand over,
0.45-0.86 s now, the same model (bench/bench_exact.py --only handover)."""

from __future__ import annotations

from typing import Any

import pytest

from planner.algorithms.exact import backends, highs_load
from planner.algorithms.exact.common import lower_bound_s
from planner.algorithms.exact.ilp_model import IlpModel
from planner.algorithms.exact.instance import Instance

from .instances import layered_problem, random_problem

pytestmark = pytest.mark.skipif(not backends.available("highs"),
                                reason="HiGHS (highspy) is not installed")


def handed_in_bulk(model: Any, monkeypatch: pytest.MonkeyPatch,
                   chunk: int = 7) -> tuple[Any, Any]:
    """`model` handed to HiGHS by `set_instance` (appsi's own) and by `_load_in_time`
    (in bulk, `chunk` rows at a time), with appsi's per-row `add_constraints` counted."""
    pyo = backends.import_pyomo()
    whole = pyo.SolverFactory("appsi_highs")
    whole.set_instance(model)
    monkeypatch.setattr(backends, "LOAD_CHUNK", chunk)
    bulk = pyo.SolverFactory("appsi_highs")
    calls: list[int] = []
    real = bulk.add_constraints

    def counted(cons: list[Any]) -> None:
        if cons:  # `set_instance` adds none: the rows are handed over after it
            calls.append(len(cons))
        real(cons)

    bulk.add_constraints = counted
    backends._load_in_time(bulk, model, load_by=float("inf"))
    bulk.calls = calls
    return whole, bulk


def same_solve(whole: Any, bulk: Any, model: Any) -> None:
    """Both solve to the same optimum, and load the same values."""
    pyo = backends.import_pyomo()
    a = whole.solve(model, load_solutions=False)
    b = bulk.solve(model, load_solutions=False)
    assert str(a.solver.termination_condition) == str(b.solver.termination_condition) \
        == "optimal"
    assert a.problem.upper_bound == b.problem.upper_bound
    variables = list(model.component_data_objects(pyo.Var, descend_into=True))
    model.solutions.load_from(a)
    first = [v.value for v in variables]
    for v in variables:
        if not v.fixed:
            v.set_value(None, skip_validation=True)
    model.solutions.load_from(b)
    assert [v.value for v in variables] == first


@pytest.mark.parametrize("problem", [layered_problem(4, 12, 3), random_problem(3, 10, 3),
                                     layered_problem(1, 16, 4, contention="link")],
                         ids=["layered", "random", "layered-link"])
def test_the_ilp_reaches_highs_in_bulk_as_appsi_hands_it(
        problem: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    inst = Instance(problem)
    ilp = IlpModel(inst, inst.horizon, lower_bound_s(inst))
    ilp.build()
    whole, bulk = handed_in_bulk(ilp.model, monkeypatch)
    assert bulk.calls == []  # before: every chunk went through appsi's add_constraints
    a, b = highs_load.held(whole), highs_load.held(bulk)
    assert len(a["row_lower"]) == ilp.n_rows > 3 * 7
    assert a == b
    same_solve(whole, bulk, ilp.model)


def test_the_ilps_fixed_variables_are_columns_and_constants_as_appsi_makes_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # identical devices: the symmetry rows fix x of the first unit on the later devices
    inst = Instance(layered_problem(2, 10, 3))
    ilp = IlpModel(inst, inst.horizon, lower_bound_s(inst))
    ilp.build()
    pyo = backends.import_pyomo()
    assert any(v.fixed for v in ilp.model.component_data_objects(pyo.Var))
    whole, bulk = handed_in_bulk(ilp.model, monkeypatch)
    assert highs_load.held(whole) == highs_load.held(bulk)


def _odd_model() -> Any:
    """Rows of every kind: a lone variable, a variable twice, a zero and a fixed term, a
    constant, a named expression (not a LinearExpression), and a product."""
    pyo = backends.import_pyomo()
    # lazy: as backends (Pyomo)
    from pyomo.core.expr.numeric_expr import LinearExpression

    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(4), domain=pyo.Binary)
    m.y = pyo.Var(bounds=(0, 10))
    m.f = pyo.Var(initialize=2.0)
    m.f.fix()
    m.rows = pyo.ConstraintList()
    m.rows.add(m.y <= 7)
    m.rows.add((1.0, LinearExpression(constant=0.5, linear_coefs=[1.0, 2.0, 0.0, 3.0, 1.0],
                                      linear_vars=[m.x[0], m.x[1], m.x[2], m.f, m.x[0]]),
                None))
    m.rows.add((None, LinearExpression(linear_coefs=[1.0, -1.0], linear_vars=[m.y, m.x[3]]),
                6.0))
    m.e = pyo.Expression(expr=m.y + 2 * m.x[2])
    m.rows.add(m.e <= 9)
    m.rows.add(m.y >= 2 * m.x[1] * m.x[2] - 1)  # a product
    m.obj = pyo.Objective(expr=m.y + m.x[3], sense=pyo.minimize)
    return m


@pytest.mark.parametrize("named", [False, True], ids=["linear", "named"])
def test_rows_it_cannot_read_go_through_appsi_and_the_rest_match(
        named: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    m = _odd_model()
    m.rows[5].deactivate()  # HiGHS takes no product
    if not named:
        m.rows[4].deactivate()
    whole, bulk = handed_in_bulk(m, monkeypatch, chunk=2)
    # chunks of 2 rows: the first in bulk, the second (with the named expression) through
    # appsi, which finds the columns the first added
    assert bulk.calls == ([2] if named else [])
    assert highs_load.held(whole) == highs_load.held(bulk)
    same_solve(whole, bulk, m)


def test_a_product_fails_as_it_did() -> None:
    # the hand-over's error is appsi's, as before (`solve_pyomo` makes it an outcome)
    pyo = backends.import_pyomo()
    whole = pyo.SolverFactory("appsi_highs")
    with pytest.raises(Exception) as appsi:
        whole.set_instance(_odd_model())
    with pytest.raises(type(appsi.value)):
        backends._load_in_time(pyo.SolverFactory("appsi_highs"), _odd_model(), float("inf"))
