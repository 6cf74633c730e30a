"""`check` and `fmt` diagnostics: paths that hold no spec, one proof per plan, small sizes
printed once, the names the user gave."""

from __future__ import annotations

from pathlib import Path

from .helpers import invoke

#: op `a` (4 B of params) on one device of 3 B (`3.5 B` reads as 3 B), under two memory models
TWO_PLANS = """
cluster c { device d { memory 3.5 B  flops 1 TFLOPS } }
graph g { op a { time 1 ms  params 4 B } }
plan s { graph g  cluster c  memory static }
plan l { graph g  cluster c  memory liveness }
"""


def test_small_sizes_are_printed_once(tmp_path: Path) -> None:
    (tmp_path / "t.plan").write_text(TWO_PLANS)
    code, _, err = invoke(["check", "t.plan"], tmp_path)
    assert code == 1
    assert "needs at least 4 B but the largest device, `d`, holds 3 B" in err
    assert "(4 B)" not in err and "(3 B)" not in err
