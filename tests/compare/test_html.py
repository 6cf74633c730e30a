"""The HTML reports, read as text: charts present, self-contained, escaped, deterministic."""

from __future__ import annotations

import re
from pathlib import Path

import planner
from planner.compare import PlanView, SweepResult, best_plans, plan_sweep, run_sweep
from planner.compare.rows import is_ok
from planner.plan import Plan
from planner.render.compare_html import compare_report_html, write_compare_html
from planner.render.html import write_plan_html
from planner.report.compare import compare_report
from planner.simulate import simulate

from .helpers import SPECS, count, expected_marks


def test_compare_report_has_every_chart_and_mark(clean: SweepResult) -> None:
    views = best_plans(clean)
    assert [(v.row["spec"].rsplit("/", 1)[-1], v.row["bandwidth"], v.row["memory"])
            for v in views] == [("chain.plan", "50 GB/s", "100%"),
                                ("fork.plan", "50 GB/s", "100%")]
    for v in views:  # the best of its setting, re-simulated to the same makespan
        assert v.row["ratio_to_best"] == 1.0
        assert v.result.feasible and v.result.makespan_s == v.row["makespan_s"]
    text = compare_report_html(compare_report(clean.rows, views))
    assert count(r'<svg class="chart" data-chart="line"', text) == 4
    assert count(r'<svg class="chart" data-chart="gantt"', text) == 2
    assert count(r'<svg class="chart" data-chart="memory"', text) == 2
    pts, fails = expected_marks(clean.rows)
    assert fails > 0  # 25% memory is infeasible: failures are drawn, not dropped
    assert count(r'<circle class="pt"', text) == pts
    assert count(r'<path class="fail"', text) == fails
    assert count(r'<rect class="op"', text) == 10 + 8
    assert count(r'<line class="xfer"', text) == sum(len(v.result.transfers) for v in views)
    assert count(r'<path class="mem', text) == 8  # 4 devices × 2 plans
    assert count(r"<tr", text.split("All runs")[1]) == 1 + len(clean.rows)


def test_report_is_self_contained_and_deterministic(clean: SweepResult, tmp_path: Path) -> None:
    views = best_plans(clean)
    path = tmp_path / "report.html"
    write_compare_html(str(path), compare_report(clean.rows, views))
    text = path.read_text(encoding="utf-8")
    assert text == compare_report_html(compare_report(clean.rows, views))
    assert re.findall(r"https?://[^\"' ]+", text) == ["http://www.w3.org/2000/svg"] * 8
    assert "<link" not in text and " src=" not in text and "@import" not in text
    assert text.count("<script>") == 1 and text.count("<style>") == 1


def test_rows_read_back_give_the_same_best_plans(clean: SweepResult) -> None:
    # without kept plans (rows from a resume file), the best plans are recomputed
    again = SweepResult(clean.sweep, clean.rows, ran=0, reused=len(clean.rows))
    a = [(v.row["algorithm"], v.result.placement) for v in best_plans(again)]
    b = [(v.row["algorithm"], v.result.placement) for v in best_plans(clean)]
    assert a == b


def test_one_setting_gets_a_bar_chart() -> None:
    result = run_sweep(plan_sweep([SPECS[0]], "msct,heft,single"), executor="inline")
    text = compare_report_html(compare_report(result.rows, best_plans(result)))
    assert count(r'data-chart="line"', text) == 0
    assert count(r'data-chart="bar"', text) == 1
    assert count(r'<rect class="pt"', text) == sum(is_ok(r) for r in result.rows) == 2
    assert "failed: no_plan: no single device holds all 10 ops" in text


SPEC = """
cluster c { device d[0..1] { memory 4 MiB  speed 1 }  link d[*] <-> d[*] { bandwidth 1 GB/s } }
graph g {
  op "<img src=x onerror=alert(1)>" { time 1 ms  output 1 MiB }
  op b { time 2 ms }
  op c { time 2 ms }
  "<img src=x onerror=alert(1)>" -> b
  "<img src=x onerror=alert(1)>" -> c
}
plan p { graph g  cluster c  memory liveness
  place "<img src=x onerror=alert(1)>", b on d0  place c on d1 }
"""


def test_plan_report_escapes_names_and_draws_one_plan(tmp_path: Path) -> None:
    problem = planner.loads(SPEC).plan("p")
    result = simulate(problem, Plan((0, 0, 1)))
    path = tmp_path / "plan.html"
    write_plan_html(str(path), problem, result)
    text = path.read_text(encoding="utf-8")
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
    assert count(r'data-chart="gantt"', text) == 1 and count(r'data-chart="memory"', text) == 1
    assert count(r'<rect class="op"', text) == 3
    assert count(r'<line class="xfer"', text) == len(result.transfers) == 1
    # liveness: d0's memory rises (the tensor is held) and falls again (it is freed)
    d0 = re.search(r'<path class="mem[^"]*" d="([^"]+)"', text)
    assert d0 is not None
    ys = [float(y) for y in re.findall(r",([0-9.]+)", d0.group(1))]
    top = min(ys)  # SVG y grows downwards: the peak is the smallest y
    assert ys[0] > top  # starts empty
    assert ys[-2] > top  # the level at the end (before the closing baseline) is lower


def test_plan_view_type_is_what_best_plans_returns(clean: SweepResult) -> None:
    assert all(isinstance(v, PlanView) for v in best_plans(clean))


def test_the_runs_table_sorts_a_setting_by_value_not_by_its_text() -> None:
    """The sortable table's comparator reads `data-v` (parseFloat, else text): a setting's
    label put 4 Gbps (0.5 GB/s) after 2 GB/s and 6 GiB before 50%; its place on the axis
    (factors, then rates; shares, then sizes) is its sort value now."""
    result = run_sweep(plan_sweep([SPECS[0]], "msct", bandwidths="2GB/s,4Gbps,0.5x,100Gbps",
                                  memories="6GiB,50%"), executor="inline")
    text = compare_report_html(compare_report(result.rows))
    labels = ("0.5x", "4 Gbps", "2 GB/s", "12.5 GB/s", "50%", "6 GiB")
    cells = {label: v for v, label in re.findall(r'data-v="([^"]*)">([^<]*)</td>', text)
             if label in labels}
    assert cells == {"0.5x": "0", "4 Gbps": "1", "2 GB/s": "2", "12.5 GB/s": "3",
                     "50%": "0", "6 GiB": "1"}


def test_a_sweep_of_shares_and_sizes_holds_the_least_constrained_as_the_cluster_has_it() -> None:
    """75% of quad's 128 MiB GPUs is 96 MiB, more than 64 MiB; 10x its links is 50-200 GB/s,
    more than 1 GB/s. The page held the charts and drew the best plan at 64 MiB and 1 GB/s
    (an absolute value sorts after every share and factor), where compare.md says "the
    least constrained one swept"."""
    from planner.compare import held_settings

    result = run_sweep(plan_sweep([SPECS[0]], "msct,heft", bandwidths="10x,1GB/s",
                                  memories="75%,64MiB"), executor="inline", keep_plans=True)
    assert list(held_settings(result).values()) == [
        {"bandwidth": "10x", "memory": "75%", "devices": "all"}]
    text = compare_report_html(compare_report(result.rows, best_plans(result),
                                              held_settings(result)))
    assert "at memory 75%, devices all" in text and "at bandwidth 10x, devices all" in text
    assert "Best plan at bandwidth 10x, memory 75%, devices all" in text
    assert "at memory 64 MiB" not in text and "Best plan at bandwidth 1 GB/s" not in text
