"""The one gap definition, `(makespan - bound) / bound`, wherever a gap is shown.

Both fixtures are independent ops on identical devices with a link between every pair,
all placed on `gpu0`, so the figures follow by hand:

- `NINETEEN`: 18 ops of 1 ms and one of 0.603 ms on 19 devices. Makespan 18.603 ms. The
  bound is the longest op, 1 ms (the work per device, 18.603/19 ms, is less). Gap
  17.603 = 1760.3% (the old (M - LB)/M printed 94.6%).
- `TWO`: ops of 1 ms and 0.137 ms on 2 devices. Makespan 1.137 ms, bound 1 ms, gap 13.7%
  (the old formula printed 12.0%).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.render.figures import bound_text

_OPS = "\n".join(f"  op a{i} {{ time 1 ms }}" for i in range(18))
_PLACED = ", ".join(f"a{i}" for i in range(18))
NINETEEN = f"""
cluster c {{ device gpu[0..18] {{ memory 1 GB }} link gpu[*] <-> gpu[*] {{ bandwidth 1 GB/s }} }}
graph g {{
{_OPS}
  op z {{ time 0.603 ms }}
}}
plan p {{ graph g cluster c contention none place {_PLACED}, z on gpu0 }}
"""
TWO = """
cluster c { device gpu[0..1] { memory 1 GB } link gpu0 <-> gpu1 { bandwidth 1 GB/s } }
graph g { op a { time 1 ms } op b { time 0.137 ms } }
plan p { graph g cluster c contention none place a, b on gpu0 }
"""
runner = CliRunner()


def _run(tmp_path: Path, spec: str, *args: str) -> tuple[int, str, str]:
    (tmp_path / "s.plan").write_text(spec)
    res = runner.invoke(app, [args[0], str(tmp_path / "s.plan"), *args[1:]],
                        env={"COLUMNS": "200"})
    return res.exit_code, res.stdout, res.stderr


@pytest.mark.parametrize(("spec", "text", "gap"), [
    (NINETEEN, "(makespan is 18.603× the bound; at most 1760.3% above optimal)", 17.603),
    (TWO, "(makespan is 1.137× the bound; at most 13.7% above optimal)", 0.137),
])
def test_simulate_prints_and_reports_the_gap_over_the_bound(
        tmp_path: Path, spec: str, text: str, gap: float) -> None:
    code, out, err = _run(tmp_path, spec, "simulate")
    assert code == 0, err
    assert text in out
    code, out, _ = _run(tmp_path, spec, "simulate", "--json")
    rep = json.loads(out)["result"]
    assert rep["lower_bound_s"] == pytest.approx(1e-3)
    assert rep["gap"] == pytest.approx(gap)


def test_solve_gap_row_json_and_html_agree(tmp_path: Path) -> None:
    # `single` keeps everything on one device: the same 1.137 ms against 1 ms
    html = tmp_path / "r.html"
    code, out, err = _run(tmp_path, TWO, "solve", "--algo", "single", "--html", str(html))
    assert code == 0, err
    assert "at most 13.7% above optimal" in out
    assert "at most 13.7% above optimal" in html.read_text(encoding="utf-8")
    code, out, _ = _run(tmp_path, TWO, "solve", "--algo", "single", "--json")
    assert json.loads(out)["result"]["gap"] == pytest.approx(0.137)


def test_compare_rows_carry_the_same_gap(tmp_path: Path) -> None:
    html = tmp_path / "c.html"
    code, out, err = _run(tmp_path, TWO, "compare", "--algos", "single,heft", "--json",
                          "--jobs", "1", "--html", str(html))
    assert code == 0, err
    gaps = {r["algorithm"]: r["gap"] for r in json.loads(out)["result"]}
    # heft puts the ops on two devices: 1 ms, the bound itself
    assert gaps == {"single": pytest.approx(0.137), "heft": 0.0}
    page = html.read_text(encoding="utf-8")
    assert ">13.7%</td>" in page and ">0.0%</td>" in page


def test_bound_text_claims_nothing_without_a_finite_gap() -> None:
    assert bound_text(18.603e-3, 1e-3).endswith("at most 1760.3% above optimal)")
    assert "above optimal" not in bound_text(1e-3, 0.0)  # no bound proved
    assert "above optimal" not in bound_text(float("inf"), 1e-3)  # no makespan
    assert bound_text(1e-3, 1e-3).endswith("at most 0.0% above optimal)")
