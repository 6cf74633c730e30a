"""`planner compare` across objectives and micro-batch counts: the axes, the pipeline's
columns (equal to `planner.pipeline.schedule.run` on the same placement), "best" by
iteration, usage errors, and resume files written before these columns existed."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import planner
from planner.cli import app
from planner.compare import SweepResult, plan_sweep, read_rows, run_sweep
from planner.compare.resume import ResumeLog
from planner.compare.rows import (
    FIELD_NAMES,
    PIPELINE_FIELDS,
    SETTING_DEFAULTS,
    columns,
    dumps_rows,
    is_ok,
    row_key,
    row_setting,
    score,
)
from planner.compare.settings import (
    DEFAULT_PIPELINE_MICROBATCHES,
    Setting,
    SettingError,
    apply_setting,
    grid,
    parse_microbatches,
    parse_objectives,
    setting_key,
)
from planner.errors import UsageError
from planner.model import Pipeline
from planner.pipeline.bound import pipeline_bound
from planner.pipeline.schedule import run as run_pipeline
from planner.render.tables import print_tables
from planner.report.compare import compare_report

from .helpers import FIXTURES, assert_names_the_option, stable

TINY = Path(__file__).resolve().parent / "pipeline_specs" / "tiny.plan"
#: the fields of a results file before `--objective` and `--microbatches` existed
OLD_FIELDS = tuple(k for k in FIELD_NAMES if k not in SETTING_DEFAULTS
                   and k not in PIPELINE_FIELDS)
ALGOS = "heft,uniform,pipedp"
runner = CliRunner()


def _sweep(**kw: str) -> planner.compare.Sweep:
    return plan_sweep([TINY], kw.pop("algos", ALGOS), plan=kw.pop("plan", "tiny_small4"),
                      time_limit_s=5.0, **kw)


@pytest.fixture(scope="module")
def piped() -> SweepResult:
    """makespan and pipeline × 4 and 8 micro-batches on the tiny training graph."""
    return run_sweep(_sweep(objectives="makespan,pipeline", microbatches="4,8"),
                     executor="inline", keep_plans=True)


# -- the axes -----------------------------------------------------------------------------


def test_axes_parse_to_canonical_labels() -> None:
    assert parse_objectives(None) == ("spec",)
    assert parse_objectives(" Pipeline,makespan, pipeline,spec") == ("pipeline", "makespan",
                                                                     "spec")
    assert parse_microbatches("") == ("spec",)
    assert parse_microbatches("8, 4,08,spec,1024") == ("8", "4", "spec", "1024")
    settings = grid(("1x",), ("100%",), ("all",), ("makespan", "pipeline"), ("4", "8"))
    assert len(settings) == 4 and Setting() == Setting("1x", "100%", "all", "spec", "spec")
    assert sorted(settings, key=setting_key)[0] == Setting("1x", "100%", "all", "makespan", "4")


@pytest.mark.parametrize(("parse", "option", "value"), [
    *((parse_objectives, "--objective", v) for v in ("throughput", "pipelines")),
    *((parse_microbatches, "--microbatches", v) for v in ("0", "1025", "eight")),
])
def test_bad_axis_values_name_the_option(parse: Callable[[str], object], option: str,
                                         value: str) -> None:
    assert_names_the_option(parse, option, value)


def test_the_objective_and_micro_batches_apply_to_the_problem() -> None:
    spec = planner.load(TINY)
    flat, pipe = spec.plan("tiny_small4"), spec.plan("tiny_pipe")
    assert flat.pipeline is None and pipe.pipeline == Pipeline(4, "gpipe")
    assert apply_setting(flat, Setting())[0] is flat
    assert apply_setting(flat, Setting(objective="pipeline"))[0].pipeline == Pipeline(
        DEFAULT_PIPELINE_MICROBATCHES, "1f1b")
    assert apply_setting(flat, Setting(objective="pipeline", microbatches="16"))[
        0].pipeline == Pipeline(16, "1f1b")
    assert apply_setting(pipe, Setting(microbatches="16"))[0].pipeline == Pipeline(16, "gpipe")
    assert apply_setting(pipe, Setting(objective="makespan"))[0].pipeline is None
    with pytest.raises(SettingError):
        apply_setting(flat, Setting(microbatches="4"))


def test_micro_batches_only_split_points_under_the_pipeline_objective() -> None:
    sweep = _sweep(algos="heft", objectives="makespan,pipeline", microbatches="4,8")
    assert [(p.objective, p.microbatches) for p in sweep.points] == [
        ("makespan", "spec"), ("pipeline", "4"), ("pipeline", "8")]
    # the spec's own objective: micro-batches split its pipeline plan only
    both = plan_sweep([TINY], "heft", microbatches="2,4")
    assert [(p.plan, p.microbatches) for p in both.points] == [
        ("tiny_small4", "spec"), ("tiny_pipe", "2"), ("tiny_pipe", "4")]


def test_spec_beside_the_count_it_means_is_one_point() -> None:
    """`--microbatches 4,spec` on a plan of 4 micro-batches: one point, labelled 4. Before:
    the same run twice, under two identical titles, counted as 2 settings in the wins;
    a plan of another count keeps both, and `--objective pipeline` on a plan with no
    pipeline means its default of 8."""
    both = plan_sweep([TINY], "heft", plan="tiny_pipe", microbatches="4,spec")
    assert [p.microbatches for p in both.points] == ["4"]
    other = plan_sweep([TINY], "heft", plan="tiny_pipe", microbatches="2,spec")
    assert [p.microbatches for p in other.points] == ["spec", "2"]
    flat = _sweep(algos="heft", objectives="pipeline", microbatches="8,spec")
    assert [p.microbatches for p in flat.points] == ["8"]


def test_micro_batches_without_a_pipeline_are_a_located_usage_error() -> None:
    chain = FIXTURES / "chain.plan"
    with pytest.raises(UsageError) as err:
        plan_sweep([chain], "heft", microbatches="4,8")
    d = err.value.diagnostics[0]
    assert d.code == "E624" and "--microbatches 4,8" in d.message
    assert d.span is not None and d.span.file.endswith("chain.plan")
    assert any("--objective pipeline" in h for h in d.hints)
    result = runner.invoke(app, ["compare", str(chain), "--microbatches", "4"])
    assert result.exit_code == 2 and "error[E624]" in result.stderr
    assert "chain.plan" in result.stderr and result.stdout == ""
    result = runner.invoke(app, ["compare", str(chain), "--objective", "fast", "--json"])
    doc = json.loads(result.stdout)
    assert doc["exit_code"] == 2 and [d["code"] for d in doc["diagnostics"]] == ["E611"]


# -- the rows -----------------------------------------------------------------------------


def test_pipeline_rows_equal_the_pipeline_run_of_their_placement(piped: SweepResult) -> None:
    spec = planner.load(TINY)
    rows = piped.rows
    # pipedp and uniform plan pipelines: no point under `objective makespan` (W625)
    assert len(rows) == 1 + 2 * 3 and all(r["status"] == "feasible" or r["status"] == "optimal"
                                          for r in rows)
    for r in rows:
        problem, _ = apply_setting(spec.plan("tiny_small4"), row_setting(r))
        if r["objective"] == "makespan":
            assert problem.pipeline is None
            assert all(r[k] is None for k in PIPELINE_FIELDS)
            continue
        assert problem.pipeline is not None
        placement, _ = piped.plans[row_key(r)]
        run = run_pipeline(problem, placement, problem.pipeline)
        bound = pipeline_bound(problem, r["lower_bound_s"])
        assert (r["schedule"], r["n_microbatches"]) == ("1f1b", int(r["microbatches"]))
        assert r["iteration_s"] == run.iteration_s
        assert r["time_per_microbatch_s"] == run.time_per_microbatch_s
        assert r["period_s"] == run.period_s and r["bubble_fraction"] == run.bubble_fraction
        assert r["period_bound_s"] == bound.period_s
        assert r["iteration_bound_s"] == bound.iteration_s
        assert r["period_gap"] == pytest.approx((run.period_s - bound.period_s) / bound.period_s)
        caps = [d.memory_bytes for d in problem.cluster.devices]
        assert r["pipeline_fits"] is all(m <= c for m, c in zip(run.memory_bytes, caps,
                                                                strict=True))
        assert r["pipeline_memory_bytes"] == int(max(run.memory_bytes))
        assert r["iteration_bound_s"] <= r["iteration_s"]
    # the uniform split spreads over every device: the schedule's simulator ran
    uniform = [r for r in rows if r["algorithm"] == "uniform" and r["objective"] == "pipeline"]
    assert {r["devices_used"] for r in uniform} == {4}
    assert uniform[0]["iteration_s"] < uniform[1]["iteration_s"]  # 4, then 8 micro-batches


def test_best_is_the_shortest_iteration_under_the_pipeline_objective(
        piped: SweepResult) -> None:
    groups: dict[tuple[str, str], list[dict]] = {}  # type: ignore[type-arg]
    for r in piped.rows:
        groups.setdefault((r["objective"], r["microbatches"]), []).append(r)
    assert len(groups) == 3
    for (objective, _), members in groups.items():
        metric = "iteration_s" if objective == "pipeline" else "makespan_s"
        best = min(r[metric] for r in members)
        for r in members:
            assert is_ok(r) and score(r) == r[metric]
            assert r["ratio_to_best"] == pytest.approx(r[metric] / best)


def test_columns_apply_only_where_they_mean_something(piped: SweepResult) -> None:
    assert columns(piped.rows) == FIELD_NAMES
    flat = [r for r in piped.rows if r["objective"] == "makespan"]
    assert set(columns(flat)) == set(FIELD_NAMES) - set(PIPELINE_FIELDS)
    spec_only = [{**r, "objective": "spec"} for r in flat]
    assert columns(spec_only) == OLD_FIELDS  # a makespan-only sweep: the columns it had


def test_tables_show_the_pipeline_columns(piped: SweepResult) -> None:
    from rich.console import Console

    console = Console(width=200, record=True, color_system=None)
    print_tables(console, compare_report(piped.rows))
    text = console.export_text()
    assert "objective pipeline · 8 micro-batches, 1f1b" in text
    assert "objective makespan\n" in text
    for head in ("iteration", "per µbatch", "T bound", "bubble", "mem fits", "pipe peak/cap"):
        assert head in text
    assert "or iteration where the setting ran as a pipeline" in text


def test_the_html_page_says_what_wins_and_shows_the_pipelines_memory(
        piped: SweepResult) -> None:
    """Before: the page said a win was the shortest makespan where wins were counted by the
    iteration, and its only memory column was one pass's."""
    from planner.render.compare_html import compare_report_html

    page = compare_report_html(compare_report(piped.rows))
    assert "shortest simulated makespan, or iteration where the setting ran as a " \
           "pipeline; ties count for each" in page
    assert ">pipe peak / cap</th>" in page
    held = next(r for r in piped.rows if r.get("pipeline_memory_bytes"))
    assert f'data-v="{held["pipeline_memory_bytes"] / held["pipeline_memory_cap_bytes"]}"' \
        in page


def test_json_output_has_the_pipeline_columns(tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    result = runner.invoke(app, ["compare", str(TINY), "--plan", "tiny_small4", "--algos",
                                 "heft", "--objective", "pipeline", "--microbatches", "4",
                                 "--jobs", "1", "--json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["result"]
    assert list(row) == list(FIELD_NAMES)
    assert row["objective"] == "pipeline" and row["n_microbatches"] == 4
    assert math.isclose(row["time_per_microbatch_s"] * 4, row["iteration_s"])
    assert read_rows(out)[0]["iteration_s"] == row["iteration_s"]


# -- resuming -----------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_resume_file_without_the_new_columns_carries_on(tmp_path: Path, suffix: str,
                                                          piped: SweepResult) -> None:
    old = [{k: r[k] for k in OLD_FIELDS} for r in piped.rows if r["objective"] == "makespan"]
    path = tmp_path / f"rows{suffix}"
    path.write_text(dumps_rows(old, suffix.lstrip("."), OLD_FIELDS), encoding="utf-8")
    assert '"objective":' not in path.read_text() and ",objective," not in path.read_text()
    back = read_rows(path)
    # heft alone runs under makespan (pipedp and uniform plan pipelines, W625)
    assert [(r["objective"], r["microbatches"]) for r in back] == [("spec", "spec")]
    # the plan's own objective (makespan) reuses the old rows; the pipeline's run now
    sweep = _sweep(objectives="spec,pipeline", microbatches="4")
    result = run_sweep(sweep, executor="inline", resume=path)
    assert (result.ran, result.reused) == (3, 1)
    rows = read_rows(path)
    assert len(rows) == 4 and [r["objective"] for r in rows] == ["spec"] + ["pipeline"] * 3
    assert stable(rows[:1]) == stable(back)
    assert all(r["iteration_s"] is not None for r in rows[1:])
    if suffix == ".csv":
        assert path.read_text().splitlines()[0] == ",".join(FIELD_NAMES)
    again = run_sweep(sweep, executor="inline", resume=path)
    assert (again.ran, again.reused) == (0, 4)


def test_appending_to_an_old_csv_rewrites_its_header_first(tmp_path: Path,
                                                           piped: SweepResult) -> None:
    path = tmp_path / "rows.csv"
    old = [{k: r[k] for k in OLD_FIELDS} for r in piped.rows[:2]]
    path.write_text(dumps_rows(old, "csv", OLD_FIELDS), encoding="utf-8")
    log = ResumeLog(path)
    assert len(log.open()) == 2
    log.append(piped.rows[-1])
    log.close()
    rows = read_rows(path)
    assert len(rows) == 3 and rows[2]["iteration_s"] == piped.rows[-1]["iteration_s"]
    assert rows[0]["objective"] == "spec"


def test_the_html_report_charts_iterations_per_objective(piped: SweepResult) -> None:
    from planner.render.compare_html import compare_report_html

    page = compare_report_html(compare_report(piped.rows))
    assert "<h3>objective makespan</h3>" in page
    assert "<h3>objective pipeline · 8 micro-batches, 1f1b</h3>" in page
    assert page.count("Iteration per algorithm") == 2 and "Makespan per algorithm" in page
    for head in (">objective<", ">micro-batches<", ">iteration<", ">T bound<", ">bubble<",
                 ">mem fits<"):
        assert head in page
    flat = compare_report_html(compare_report([{**r, "objective": "spec"} for r in piped.rows
                                               if r["objective"] == "makespan"]))
    assert ">objective<" not in flat and ">iteration<" not in flat and "<h3>objective" not in flat


def test_the_html_runs_table_says_whose_gap_it_shows(piped: SweepResult) -> None:
    """Before: a pipeline sweep's runs table showed one pass's gap (the makespan's to one
    pass's bound) under `gap`, next to the pipeline's iteration and period, and no gap of
    the pipeline's own (`period_gap`)."""
    import re

    from planner.render.compare_html import compare_report_html
    from planner.render.figures import format_gap

    page = compare_report_html(compare_report(piped.rows))
    runs = page.split('<table class="sortable runs">', 1)[1].split("</table>", 1)[0]
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", runs)
    assert "gap" not in heads and "gap (one pass)" in heads and "T gap" in heads
    column = heads.index("T gap")
    shown = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", runs.split("<tbody>", 1)[1]):
        cells = re.findall(r"<td[^>]*>([^<]*)</td>", row)
        shown[(cells[heads.index("algorithm")], cells[heads.index("micro-batches")],
               cells[heads.index("objective")])] = cells[column]
    for r in piped.rows:
        if r["objective"] == "pipeline":
            want = format_gap(r["period_gap"])
            assert shown[(r["algorithm"], str(r["microbatches"]), r["objective"])] == want
    flat = compare_report_html(compare_report([{**r, "objective": "spec"} for r in piped.rows
                                               if r["objective"] == "makespan"]))
    assert ">gap<" in flat and "one pass" not in flat and "T gap" not in flat



def test_the_html_runs_table_puts_x_best_beside_the_figure_it_compares(
        piped: SweepResult) -> None:
    """Before: one `× best` column right after `makespan`, though a pipeline row's ratio is
    its iteration's (a pipeline plan read `455.643 ms 1.000×` beside another's `394.135 ms
    1.195×`). Now `× best (makespan)` holds the makespan rows' ratios and `× best
    (iteration)`, right after `iteration`, the pipeline rows'."""
    import re

    from planner.render.compare_html import compare_report_html

    page = compare_report_html(compare_report(piped.rows))
    runs = page.split('<table class="sortable runs">', 1)[1].split("</table>", 1)[0]
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", runs)
    assert "× best" not in heads
    by_ms, by_it = heads.index("× best (makespan)"), heads.index("× best (iteration)")
    assert heads[by_ms - 1] == "makespan" and heads[by_it - 1] == "iteration"
    rows = [re.findall(r"<td[^>]*>([^<]*)</td>", row)
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", runs.split("<tbody>", 1)[1])]
    shown = {(c[heads.index("algorithm")], c[heads.index("micro-batches")],
              c[heads.index("objective")]): (c[by_ms], c[by_it]) for c in rows}
    seen = set()
    for r in piped.rows:
        ratio = f"{r['ratio_to_best']:.3f}×"
        piped_row = r["objective"] == "pipeline"
        want = ("—", ratio) if piped_row else (ratio, "—")
        assert shown[(r["algorithm"], str(r["microbatches"]), r["objective"])] == want
        seen.add(piped_row)
    assert seen == {True, False}
    flat = compare_report_html(compare_report([{**r, "objective": "spec"} for r in piped.rows
                                               if r["objective"] == "makespan"]))
    assert ">× best<" in flat and "× best (" not in flat  # no pipeline: as before

def _replicable(folder: Path, units: int, setting: str) -> Path:
    """A training chain of `units` units (1 MB of params each) on four linked GPUs, its
    pipeline plan with `setting` (`data_parallel N`), written as `dp.plan`."""
    forward = [f"f{k}" for k in range(units)]
    chain = " -> ".join(forward + [f"b{k}" for k in reversed(range(units))])
    spec = folder / "dp.plan"
    spec.write_text(
        "cluster c4 { device gpu[0..3] { memory 16 GiB }\n"
        "  link gpu[*] <-> gpu[*] { bandwidth 100 GB/s } }\n"
        "graph g {\n" + "".join(
            f"  op f{k} {{ time 1 ms  params 1 MB  output 1 MB }}\n"
            f"  op b{k} {{ time 2 ms  output 1 MB  backward_of f{k} }}\n" for k in range(units))
        + f"  {chain}\n}}\n"
        f"plan p {{ graph g  cluster c4  objective pipeline  microbatches 4  {setting} }}\n")
    return spec


def test_a_replicated_plan_counts_its_replicas_as_devices_used(tmp_path: Path) -> None:
    """Before: `devices_used` 1 (`devs 1/4`) for a plan of pure data parallelism over four
    GPUs: the one pass holds its ops on the first replica only."""
    spec = _replicable(tmp_path, 4, "data_parallel 4")
    result = runner.invoke(app, ["compare", str(spec), "--algos", "hybrid", "--jobs", "1",
                                 "--json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["result"]
    assert row["devices_used"] == 4


def test_a_row_that_plans_no_replicas_says_so_where_the_spec_asks_for_them(
        tmp_path: Path) -> None:
    """Before: under `data_parallel 2`, pipedp's row planned a pure pipeline with an empty
    `reason` (and won `× best` against the replicated plan asked for); then with the note
    "gives each stage one device", still `feasible` and best. Now `invalid`, as `solve`
    refuses it (E625): a plan of one pipeline is not the N pipelines asked for. Under
    `data_parallel auto` (one device a stage is a choice there) it plans, and says so."""
    spec = _replicable(tmp_path, 2, "data_parallel 2")
    result = runner.invoke(app, ["compare", str(spec), "--algos", "pipedp,hybrid", "--jobs",
                                 "1", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["algorithm"]: r for r in json.loads(result.stdout)["result"]}
    assert (rows["pipedp"]["status"], rows["pipedp"]["ratio_to_best"]) == ("invalid", None)
    assert rows["pipedp"]["reason"] == ("--algo pipedp plans one pipeline, and plan `p` has "
                                        "`data_parallel 2`: 2 replicas of every stage")
    # at its period's bound: `optimal`, whatever made it (test_pipeline_status_optimal.py)
    assert (rows["hybrid"]["status"], rows["hybrid"]["period_gap"]) == ("optimal", 0.0)
    assert rows["hybrid"]["ratio_to_best"] == 1.0
    spec = _replicable(tmp_path, 2, "data_parallel auto")
    result = runner.invoke(app, ["compare", str(spec), "--algos", "pipedp", "--jobs", "1",
                                 "--json"])
    (row,) = json.loads(result.stdout)["result"]
    assert row["reason"] == ("`pipedp` gives each stage one device: `data_parallel auto` is "
                             "planned by auto, hybrid, search")


def test_micro_batches_under_an_objective_that_overrides_the_plans_pipeline() -> None:
    # the plan asks for a pipeline; `--objective makespan` took it away, and the hint says
    # so (before: "write `objective pipeline` in the plan", which it already was)
    with pytest.raises(UsageError) as err:
        plan_sweep([TINY], "heft", objectives="makespan", microbatches="4")
    d = err.value.diagnostics[0]
    assert d.code == "E624" and "`--objective` plans `tiny_pipe`" in d.message
    assert any("drop `--objective`" in h for h in d.hints)
    assert not any("write `objective pipeline`" in h for h in d.hints)


def test_a_row_where_no_plan_fits_has_no_period_gap(tmp_path: Path) -> None:
    """main: `uniform`'s row, which no plan could fit (E301), had `period_gap` 0.0."""
    spec = tmp_path / "s.plan"
    spec.write_text(
        "cluster c {\n  device d[0..1] { memory 1 MB }\n"
        "  link d[0..1] <-> d[0..1] { bandwidth 100 GB/s }\n}\n"
        "graph g {\n  op a { time 4 ms; output 100 MB }\n  op b { time 4 ms; output 100 MB }\n"
        "  op b.bwd { time 4 ms; backward_of b }\n  op a.bwd { time 4 ms; backward_of a }\n"
        "  a -> b\n  b -> b.bwd\n  b.bwd -> a.bwd { bytes 1 MB }\n}\n"
        "plan p {\n  graph g; cluster c; objective pipeline; microbatches 4; schedule 1f1b\n}\n")
    result = runner.invoke(app, ["compare", str(spec), "--algos", "uniform", "--jobs", "1",
                                 "--json"])
    (row,) = json.loads(result.stdout)["result"]
    assert row["status"] == "violated" and row["period_bound_s"] == pytest.approx(0.008)
    assert row["period_gap"] is None


def test_the_best_plans_gantt_marks_one_passs_bound_not_the_iterations() -> None:
    """The Gantt under "Best plan" draws one pass of a pipeline plan; its bound mark was
    the iteration's bound, drawn past the end of the pass it bounds (the plan seemed to beat
    its own lower bound; `solve --html` marks one pass's)."""
    import re

    from planner.compare import best_plans
    from planner.render.compare_html import compare_report_html
    from planner.units import format_seconds

    result = run_sweep(_sweep(objectives="pipeline", microbatches="8", algos="pipedp"),
                       executor="inline", keep_plans=True)
    report = compare_report(result.rows, best_plans(result))
    (view,) = report.best
    row = view.run
    assert row.pipeline and row["iteration_bound_s"] > row["makespan_s"]  # told apart
    marks = re.findall(r'class="lb-mark"[^>]*data-tip="lower bound ([^"]*)"',
                       compare_report_html(report))
    assert marks == [format_seconds(row["lower_bound_s"])]
    assert row["lower_bound_s"] <= view.result.makespan_s
