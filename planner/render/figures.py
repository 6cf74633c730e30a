"""Figures shown to people, worded once for the terminal, HTML and compare views (no rich
import here, so the HTML writer stays light)."""

from __future__ import annotations

import math

from ..bounds import relative_gap
from ..model import Problem
from ..units import format_seconds

__all__ = ["bound_text", "feasible_label", "format_gap"]


def bound_text(makespan_s: float, bound_s: float, valid: bool = True) -> str:
    """`LB  (makespan is R× the bound; at most G% above optimal)`, G from `relative_gap`;
    the bound alone for a plan that is not `valid` (it breaks a rule: no gap is proved, as
    JSON's `gap` is null)."""
    gap = relative_gap(makespan_s, bound_s) if valid and math.isfinite(makespan_s) else None
    if gap is None or bound_s <= 0 or makespan_s < bound_s * (1 - 1e-9):
        return format_seconds(bound_s)  # no finite gap proved (or a bad bound): claim nothing
    return (f"{format_seconds(bound_s)}  (makespan is {makespan_s / bound_s:.3f}× the bound; "
            f"at most {format_gap(gap)} above optimal)")


def format_gap(gap: float | None) -> str:
    """A relative gap as a percentage with one decimal (`13.7%`), rounded up: it is printed
    as "at most" (a gap of 2.5e-6 read `at most 0.0% above optimal` on a plan not proved
    optimal, 11.935% read 11.9%); a billionth of a tenth of a percent is the float's, not
    the plan's. `—` when none is proved."""
    if gap is None:
        return "—"
    return f"{math.ceil(1000 * gap - 1e-9) / 10:.1f}%"


def feasible_label(problem: Problem) -> str:
    """The label of one pass's verdict: under `objective pipeline` it is not the plan's (the
    pipeline's memory and units judge it, shown beside it), so it says which it is."""
    return one_pass(problem, "feasible")


def one_pass(problem: Problem, label: str) -> str:
    """`label` of a one-pass figure (makespan, lower bound, gap, verdict): under `objective
    pipeline` the plan's figures are the pipeline's, shown beside it, so it says whose."""
    return label if problem.pipeline is None else f"{label} (one pass)"
