"""The HTML report is total on huge and non-finite figures.

Before: a plan whose makespan is near the largest float (`time 1.7976931348623157e+308 s`)
made the Gantt chart's axis loop for ever (`hi * 1.000000001` is infinite) until memory
ran out (found by the fuzz target: 6 GB); memory beyond a float's range
(`memory 1.7e308 B` on two ops) raised OverflowError after the plan was printed.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from planner.render.svg import nice_ticks as _nice_ticks
from planner.render.svg import share as _share

from .runtime_support import invoke


@pytest.mark.parametrize("hi", [sys.float_info.max, 1e308, math.inf, 5e-324, 1.0])
def test_axis_ticks_are_few_and_finite_for_any_span(hi: float) -> None:
    ticks = _nice_ticks(0.0, hi, 8)
    assert 1 <= len(ticks) <= 34
    assert all(math.isfinite(t) for t in ticks)


def test_shares_of_integers_beyond_a_float_are_exact_and_clamped() -> None:
    big = 10 ** 400
    assert _share(big, 2 * big) == 0.5
    assert _share(big, 3) == 1.0 and _share(3, big) == 0.0
    assert _share(1.0, 0) == 0.0 and _share(math.inf, 1.0) == 1.0


@pytest.mark.parametrize("quantities", [
    ("time 1.7976931348623157e+308 s", "memory 1 GB"),
    ("time 1 ms", "memory 1.7e308 B"),
], ids=["makespan near the float limit", "memory near the float limit"])
def test_html_of_extreme_plans_is_written_or_the_spec_is_refused(
        tmp_path: Path, quantities: tuple[str, str]) -> None:
    time_q, memory_q = quantities
    (tmp_path / "s.plan").write_text(
        f"graph g {{ op a {{ {time_q}  output 1 MB  params 1 MB }}  op b {{ time 1 ms }}  "
        f"a -> b }}\ncluster c {{ device gpu[0..1] {{ {memory_q} }}  "
        "link gpu[*] <-> gpu[*] { bandwidth 1 GB/s } }\nplan p { graph g cluster c }\n")
    code, _, err = invoke(["solve", "s.plan", "--algo", "heft", "--html", "r.html"], tmp_path)
    assert "Traceback" not in err and "E999" not in err and "E990" not in err
    if code == 1:  # the spec layer may come to refuse such quantities (a located E2xx)
        assert "error[E2" in err
        return
    assert code == 0, err
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert page.count('data-chart="gantt"') == 1 and len(page) < 200_000
