"""Hand a chunk of linear rows to Pyomo's appsi HiGHS in bulk: the model `set_instance`
would hand over, without its per-row work.

appsi's `add_constraints` walks every row's expression tree to collect its variables, then
adds that row's new columns (one `addVars` and one `changeColsIntegrality` call per row,
most of them empty), then walks it again for its coefficients: 1.4 s of CPU for the
15,253 rows of ResNet-50's pipeline ILP, before HiGHS searches at all. The exact models
build every row as a `LinearExpression` of numbers and variables (`ilp_model`,
`pipeilp.model`), whose variables are its arguments (a row of one variable: its body).
`add_rows` reads them there, adds a chunk's new columns in one `add_variables` call
(appsi's own, in the order of first use, as the row-by-row hand-over adds them), computes
each row's coefficients as the function appsi calls does (`generate_standard_repn` on a
`LinearExpression`: a variable's terms merged, zero coefficients dropped, fixed variables
as constants) and hands the rows over in one `addRows`. HiGHS gets the same columns, rows,
bounds and integrality in the same order (tests/exact/test_highs_load.py compares them).

A chunk with any other row (a nonlinear body, a named expression, a coefficient that is
an expression) goes through appsi's `add_constraints` whole, as does every chunk when the
solver object lacks the appsi state this module fills (`fast`): another Pyomo release.
One thing appsi keeps is left out: the helpers that re-read a row's bounds when a mutable
parameter or a fixed variable in it changes (`update_params`), which `backends._load_in_time`
turns off for the solve that follows (nothing changes in between).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

#: the appsi persistent solver's state that `add_rows` keeps as `add_constraints` would
_STATE = ("_solver_model", "_referenced_variables", "_active_constraints",
          "_named_expressions", "_vars_referenced_by_con", "_pyomo_con_to_solver_con_map",
          "_solver_con_to_pyomo_con_map", "add_variables")


def fast(opt: Any) -> bool:
    """Whether `add_rows` can hand rows to `opt`: appsi's HiGHS with the state it fills,
    taking fixed variables as constants (appsi's default; else it unfixes them first)."""
    config = getattr(opt, "update_config", None)
    return (all(hasattr(opt, name) for name in _STATE)
            and hasattr(opt._solver_model, "addRows")
            and bool(getattr(config, "treat_fixed_vars_as_params", False)))


@dataclass(slots=True)
class _Row:
    """One row as appsi's hand-over reads it: its variables (fixed ones too, in the order
    of its terms), the coefficients of the others (merged, zeros dropped), its bounds less
    the constant terms (None: no bound)."""

    con: Any
    variables: list[Any]
    coefs: dict[int, float]
    lower: float | None
    upper: float | None


def add_rows(opt: Any, rows: Sequence[Any]) -> None:
    """Add the active constraints `rows` to the appsi HiGHS solver `opt`, as its
    `add_constraints(rows)` would (module docstring)."""
    read = _read(rows) if fast(opt) else None
    if read is None:
        opt.add_constraints(list(rows))
        return
    known = opt._referenced_variables
    fresh: dict[int, Any] = {}
    for row in read:
        for v in row.variables:
            if id(v) not in known:
                fresh.setdefault(id(v), v)
    opt.add_variables(list(fresh.values()))
    _hand_over(opt, read)


def _read(rows: Sequence[Any]) -> list[_Row] | None:
    """`rows` read as `_Row`s, or None when a row's body is neither a variable nor a
    `LinearExpression` of numbers, variables and terms number × variable."""
    # lazy: start-up (Pyomo, loaded by the model's build)
    from pyomo.core.expr.numeric_expr import LinearExpression, MonomialTermExpression
    from pyomo.core.expr.numvalue import native_numeric_types

    out: list[_Row] = []
    for con in rows:
        lb, body, ub = _bounded(con)
        if body.__class__ is LinearExpression:
            terms = body.args
        elif _is_variable(body):
            terms = (body,)
        else:
            return None
        seen: dict[int, Any] = {}
        coefs: dict[int, float] = {}
        const = 0  # generate_standard_repn's, with fixed variables at their values
        for arg in terms:
            if arg.__class__ is MonomialTermExpression:
                coef, v = arg.args
                if coef.__class__ not in native_numeric_types:
                    return None
            elif arg.__class__ in native_numeric_types:
                const += arg
                continue
            elif _is_variable(arg):
                coef, v = 1, arg
            else:
                return None
            key = id(v)
            seen.setdefault(key, v)
            if v.fixed:
                const += coef * v.value
            elif key in coefs:
                coefs[key] += coef
            else:
                coefs[key] = coef
        out.append(_Row(con, list(seen.values()),
                        {k: c for k, c in coefs.items() if c},
                        None if lb is None else lb - const,
                        None if ub is None else ub - const))
    return out


def _is_variable(node: Any) -> bool:
    """Whether the expression node `node` is a variable."""
    return bool(getattr(node, "is_variable_type", lambda: False)())


def _bounded(con: Any) -> tuple[float | None, Any, float | None]:
    """A constraint's (lower bound, body, upper bound), the bounds as numbers or None."""
    whole = getattr(con, "to_bounded_expression", None)  # Pyomo 6.8 on: one look, not three
    if whole is not None:
        return cast(tuple[float | None, Any, float | None], whole(evaluate_bounds=True))
    return con.lb, con.body, con.ub


def _hand_over(opt: Any, read: list[_Row]) -> None:
    """The rows' coefficients and bounds (appsi's `_add_constraints`), in one `addRows`,
    and appsi's bookkeeping of which row uses which variable."""
    # lazy: start-up (highspy and numpy, loaded by `set_instance`)
    import highspy
    import numpy as np

    column = opt._pyomo_var_to_solver_var_map
    referenced = opt._referenced_variables
    first = len(opt._pyomo_con_to_solver_con_map)
    inf = highspy.kHighsInf
    lbs: list[float] = []
    ubs: list[float] = []
    starts: list[int] = []
    index: list[int] = []
    values: list[float] = []
    for i, row in enumerate(read):
        con = row.con
        starts.append(len(values))
        index.extend(column[key] for key in row.coefs)
        values.extend(row.coefs.values())
        lbs.append(-inf if row.lower is None else row.lower)
        ubs.append(inf if row.upper is None else row.upper)
        opt._active_constraints[con] = con.expr
        opt._named_expressions[con] = []
        opt._vars_referenced_by_con[con] = row.variables
        for v in row.variables:
            referenced[id(v)][0][con] = None
        opt._pyomo_con_to_solver_con_map[con] = first + i
        opt._solver_con_to_pyomo_con_map[first + i] = con
    opt._solver_model.addRows(
        len(lbs), np.array(lbs, dtype=np.double), np.array(ubs, dtype=np.double),
        len(values), np.array(starts), np.array(index), np.array(values, dtype=np.double))


def held(opt: Any) -> dict[str, list[float]]:
    """The model the appsi HiGHS solver `opt` holds, as lists: column costs, bounds and
    integrality, row bounds, and the constraint matrix and its format (what tests and
    bench/bench_exact.py compare between two hand-overs)."""
    lp = opt._solver_model.getLp()
    out = {name: [float(v) for v in getattr(lp, name + "_")] for name in (
        "col_cost", "col_lower", "col_upper", "row_lower", "row_upper")}
    out["integrality"] = [float(int(v)) for v in lp.integrality_]
    out["format"] = [float(int(lp.a_matrix_.format_))]
    for name in ("start", "index", "value"):
        out[name] = [float(v) for v in getattr(lp.a_matrix_, name + "_")]
    return out
