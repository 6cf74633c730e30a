"""The micro-batch timeline (issue 26, item 4): task times against hand-derived GPipe and
1F1B timelines, and the pipeline section of `solve --html`.

On a chain of S uniform stages (stage k on device k, forward t_f and backward t_b, no
communication to speak of), GPipe runs stage k's forward of micro-batch m at
(k + m) t_f and its backward at (S + M - 1) t_f + (S - 1 - k + m) t_b; 1F1B's times follow
from its order (min(S - k - 1, M) forwards, then one forward and one backward in turn) and
the two dependencies (a forward after the previous stage's, a backward after the next
stage's), derived below by hand.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pipe_support import chain_spec
from typer.testing import CliRunner

import planner
from planner.cli import app
from planner.model import Problem
from planner.pipeline.schedule import PipelineRun, run
from planner.pipeline.split import Split
from planner.pipeline.units import units
from planner.plan import Plan
from planner.render.html import plan_report_html
from planner.render.pipeline import rate
from planner.report.pipeline import pipeline_view
from planner.simulate import simulate
from planner.units import format_seconds

MS = 1e-3
#: the chain's 1 MB activations over 1e15 B/s: a nanosecond per transfer
TOL = 1e-7

Key = tuple[int, int, bool]  # (stage, micro-batch, forward?)


def _chain(problem: Problem) -> tuple[tuple[int, ...], PipelineRun]:
    n = units(problem).count
    placement = Split(tuple(range(n + 1)), tuple(range(n))).placement(problem)
    assert problem.pipeline is not None
    return placement, run(problem, placement, problem.pipeline)


def _times(r: PipelineRun) -> dict[Key, tuple[float, float]]:
    out = {(t.stage, t.microbatch, t.forward): (t.start_s, t.end_s) for t in r.tasks}
    assert len(out) == len(r.tasks)  # one task per (stage, micro-batch, direction)
    return out


def _one_f_one_b(stages: int, mb: int, tf: float, tb: float) -> dict[Key, tuple[float, float]]:
    """1F1B by hand: each device's order, each task as soon as its device is free and its
    input is there."""
    orders = []
    for k in range(stages):
        warm = min(stages - k - 1, mb)
        seq = [(k, m, True) for m in range(warm)]
        f = warm
        for m in range(mb):
            if f < mb:
                seq.append((k, f, True))
                f += 1
            seq.append((k, m, False))
        orders.append(seq)
    done: dict[Key, tuple[float, float]] = {}
    free = [0.0] * stages
    at = [0] * stages
    while len(done) < 2 * stages * mb:
        moved = False
        for k in range(stages):
            if at[k] == len(orders[k]):
                continue
            _, m, fwd = orders[k][at[k]]
            need = ((k - 1, m, True) if fwd else (k + 1, m, False) if k + 1 < stages
                    else (k, m, True))
            if fwd and k == 0:
                ready = 0.0
            elif need in done:
                ready = done[need][1]
            else:
                continue
            start = max(free[k], ready)
            done[(k, m, fwd)] = (start, start + (tf if fwd else tb))
            free[k] = start + (tf if fwd else tb)
            at[k] += 1
            moved = True
        assert moved
    return done


@pytest.mark.parametrize(("stages", "mb"), [(2, 1), (3, 4), (4, 3)])
def test_gpipe_tasks_follow_the_wavefront(stages: int, mb: int) -> None:
    tf, tb = 2.0, 3.0
    _, r = _chain(chain_spec([tf] * stages, [tb] * stages, microbatches=mb,
                             schedule="gpipe"))
    times = _times(r)
    assert len(times) == stages * mb * 2
    for k in range(stages):
        assert {t.device for t in r.tasks if t.stage == k} == {k}
        for m in range(mb):
            fwd = (k + m) * tf
            bwd = (stages + mb - 1) * tf + (stages - 1 - k + m) * tb
            assert times[(k, m, True)] == pytest.approx((fwd * MS, (fwd + tf) * MS), abs=TOL)
            assert times[(k, m, False)] == pytest.approx((bwd * MS, (bwd + tb) * MS), abs=TOL)


def test_1f1b_on_two_stages_by_hand() -> None:
    _, r = _chain(chain_spec([2.0, 2.0], [3.0, 3.0], microbatches=3, schedule="1f1b"))
    expected = {  # stage 0: F0 F1 B0 F2 B1 B2; stage 1: F0 B0 F1 B1 F2 B2 (ms)
        (0, 0, True): (0, 2), (0, 1, True): (2, 4), (0, 0, False): (7, 10),
        (0, 2, True): (10, 12), (0, 1, False): (12, 15), (0, 2, False): (17, 20),
        (1, 0, True): (2, 4), (1, 0, False): (4, 7), (1, 1, True): (7, 9),
        (1, 1, False): (9, 12), (1, 2, True): (12, 14), (1, 2, False): (14, 17)}
    times = _times(r)
    assert times.keys() == expected.keys()
    for key, (s, e) in expected.items():
        assert times[key] == pytest.approx((s * MS, e * MS), abs=TOL)


@pytest.mark.parametrize(("stages", "mb"), [(3, 5), (4, 8), (4, 2)])
def test_1f1b_tasks_are_the_hand_derived_schedule(stages: int, mb: int) -> None:
    tf, tb = 2.0, 3.0
    _, r = _chain(chain_spec([tf] * stages, [tb] * stages, microbatches=mb, schedule="1f1b"))
    times = _times(r)
    expected = _one_f_one_b(stages, mb, tf, tb)
    assert times.keys() == expected.keys()
    for key, (s, e) in expected.items():
        assert times[key] == pytest.approx((s * MS, e * MS), abs=TOL), key
    assert max(e for _, e in times.values()) == pytest.approx(r.iteration_s, abs=TOL)


def test_inference_has_forward_tasks_only() -> None:
    _, r = _chain(chain_spec([2.0, 2.0, 2.0], None, microbatches=4))
    assert len(r.tasks) == 3 * 4 and all(t.forward for t in r.tasks)
    assert _times(r)[(2, 3, True)] == pytest.approx(((2 + 3) * 2 * MS, 6 * 2 * MS), abs=TOL)


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_one_device_runs_its_tasks_back_to_back(schedule: str) -> None:
    p = chain_spec([2.0, 1.0], [3.0, 3.0], microbatches=3, schedule=schedule)
    assert p.pipeline is not None
    r = run(p, (0,) * len(p.graph.ops), p.pipeline)
    assert len(r.tasks) == 6 and {t.device for t in r.tasks} == {0}
    spans = sorted((t.start_s, t.end_s) for t in r.tasks)
    assert spans[0][0] == 0.0 and spans[-1][1] == pytest.approx(r.iteration_s)
    assert all(a[1] == pytest.approx(b[0]) for a, b in zip(spans, spans[1:], strict=False))
    first = [t.forward for t in sorted(r.tasks, key=lambda t: t.start_s)]
    assert first[:3] == ([True] * 3 if schedule == "gpipe" else [True, False, True])


def test_interleaved_tasks_are_per_virtual_stage() -> None:
    p = planner.loads(_interleaved_text()).plan("p")
    assert p.pipeline is not None and p.pipeline.stages_per_device == 2
    n = units(p).count
    placement = Split(tuple(range(n + 1)), (0, 1, 0, 1)).placement(p)
    r = run(p, placement, p.pipeline)
    assert r.schedule == "interleaved"
    assert len(_times(r)) == 4 * 4 * 2
    for d in (0, 1):  # a device runs one task at a time
        spans = sorted((t.start_s, t.end_s) for t in r.tasks if t.device == d)
        assert all(a[1] <= b[0] + TOL for a, b in zip(spans, spans[1:], strict=False))


def _interleaved_text() -> str:
    ops = "\n".join(f"  op f{k} {{ time 1 ms; output 1 MB }}\n"
                    f"  op f{k}.bwd {{ time 2 ms; backward_of f{k} }}\n"
                    f"  f{k} -> f{k}.bwd\n  colocate f{k}, f{k}.bwd" for k in range(4))
    edges = "\n".join(f"  f{k} -> f{k + 1}\n  f{k + 1}.bwd -> f{k}.bwd {{ bytes 1 MB }}"
                      for k in range(3))
    return ("cluster c { device d[0..1] { memory 64 GiB }\n"
            "  link d[0..1] <-> d[0..1] { bandwidth 1000000 GB/s latency 0 s } }\n"
            f"graph g {{\n{ops}\n{edges}\n}}\n"
            "plan p { graph g; cluster c; objective pipeline; microbatches 4; "
            "schedule interleaved; stages_per_device 2 }\n")


# -- the HTML ---------------------------------------------------------------------------


def _section(page: str) -> str:
    return page[page.index("<h2>Pipeline</h2>"):page.index("<h2>One pass</h2>")]


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_html_draws_one_bar_per_stage_microbatch_and_direction(schedule: str) -> None:
    stages, mb = 3, 4
    p = chain_spec([2.0] * stages, [3.0] * stages, microbatches=mb, schedule=schedule)
    placement, r = _chain(p)
    view = pipeline_view(p, placement, "given", 0.0)
    assert view.rows[-1].run is r and view.rows[-1].label == "this plan"
    page = plan_report_html(p, simulate(p, Plan(placement)), pipeline=view)
    section = _section(page)
    assert section.count('data-chart="pipeline"') == 1
    bars = set(re.findall(r'<rect class="task" data-mb="(\d+)" data-dir="(fwd|bwd)" '
                          r'data-stage="(\d+)"', section))
    assert len(re.findall(r'<rect class="task"', section)) == stages * mb * 2
    assert bars == {(str(m), d, str(k)) for m in range(mb) for d in ("fwd", "bwd")
                    for k in range(stages)}
    for label, value in (("iteration (simulated)", r.iteration_s),
                         ("per micro-batch", r.time_per_microbatch_s),
                         ("period T", r.period_s)):
        assert f"<span>{label}</span><b>{format_seconds(value)}</b>" in section
    assert f"<span>bubble</span><b>{r.bubble_fraction:.1%}</b>" in section
    assert f"<span>period bound</span><b>{format_seconds(view.bound.period_s)}" in section
    for label in ("one device", "uniform split", "this plan"):
        assert f'<td class="l">{label}</td>' in section
    # the one-pass charts are still there, after the section
    assert page.count('data-chart="gantt"') == 1
    assert "href" not in section and "src=" not in section and "<link" not in section


def test_a_makespan_plans_page_has_no_pipeline_section() -> None:
    p = chain_spec([2.0, 2.0], [3.0, 3.0])
    flat = planner.loads(_interleaved_text().replace(
        "objective pipeline; microbatches 4; schedule interleaved; stages_per_device 2",
        "objective makespan")).plan("p")
    assert p.pipeline is not None and flat.pipeline is None
    result = simulate(flat, Plan((0, 0, 1, 1, 0, 0, 1, 1)))
    page = plan_report_html(flat, result)
    assert page == plan_report_html(flat, result, pipeline=None)
    assert "Pipeline" not in page and 'class="task"' not in page and "One pass" not in page


HOSTILE = "<img src=x onerror=alert(1)>"
DEVICE = "<b>gpu</b>"


def test_solve_html_escapes_names_in_the_pipeline_section(tmp_path: Path) -> None:
    op, bwd = f'"{HOSTILE}"', f'"{HOSTILE}.bwd"'
    (tmp_path / "s.plan").write_text(
        f'cluster c {{ device "{DEVICE}" {{ memory 1 GiB }}  device d1 {{ memory 1 GiB }}\n'
        f'  link "{DEVICE}" <-> d1 {{ bandwidth 1000 GB/s }} }}\n'
        f"graph g {{\n  op {op} {{ time 2 ms; output 1 MB }}\n"
        "  op f1 { time 2 ms; output 1 MB }\n"
        f"  op {bwd} {{ time 3 ms; backward_of {op} }}\n"
        "  op f1.bwd { time 3 ms; backward_of f1 }\n"
        f"  {op} -> f1\n  {op} -> {bwd}\n  f1 -> f1.bwd\n  f1.bwd -> {bwd} {{ bytes 1 MB }}\n"
        f"  colocate {op}, {bwd}\n  colocate f1, f1.bwd\n}}\n"
        "plan p { graph g; cluster c; objective pipeline; microbatches 3; schedule gpipe }\n",
        encoding="utf-8")
    res = CliRunner().invoke(app, ["solve", str(tmp_path / "s.plan"), "--json",
                                   "--html", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    section = _section(page)
    assert "<img" not in page and "<b>gpu" not in page
    assert "&lt;b&gt;gpu&lt;/b&gt;" in section and "&lt;img src=x onerror=alert(1)&gt;" in section
    stages = int(re.findall(r"<span>stages</span><b>(\d+)</b>", section)[0])
    assert section.count('<rect class="task"') == stages * 3 * 2
    assert "<script" not in section


def test_a_throughput_is_never_in_exponent_notation() -> None:
    """Before: `3.615e+06 samples/s`, `0.0004938` was fine but `4.9e-07` was not."""
    assert [rate(x) for x in (3614858.2, 4.938e-4, 87.4, 2.806, 4.9e-7)] == [
        "3615000", "0.0004938", "87.4", "2.806", "0.00000049"]


def _two_by_two(folder: Path) -> Path:
    """Four layers as two stages of two replicas (`data_parallel 2`) on four devices."""
    ops = "".join(f"  op f{k} {{ time 2 ms; params 64 MB; output 1 MB }}\n"
                  f"  op f{k}.bwd {{ time 3 ms; backward_of f{k} }}\n"
                  f"  f{k} -> f{k}.bwd\n  colocate f{k}, f{k}.bwd\n" for k in range(4))
    ops += "".join(f"  f{k} -> f{k + 1}\n  f{k + 1}.bwd -> f{k}.bwd {{ bytes 1 MB }}\n"
                   for k in range(3))
    (folder / "s.plan").write_text(
        "cluster c { device d[0..3] { memory 4 GiB }\n"
        "  link d[0..3] <-> d[0..3] { bandwidth 10 GB/s } }\n"
        f"graph g {{\n{ops}}}\n"
        "plan p { graph g; cluster c; objective pipeline; microbatches 4; schedule 1f1b;\n"
        "  data_parallel 2; microbatch_size 8 }\n", encoding="utf-8")
    return folder / "s.plan"


def test_a_hybrid_plans_page_shows_its_all_reduces_and_throughput(tmp_path: Path) -> None:
    """Before: the page of a hybrid plan (two stages of two replicas) gave its iteration but
    neither the throughput nor the all-reduce that the terminal and `--json` report (a
    GPT on two-nodes: 1.682 ms of its 4.522 ms), and its timeline left the all-reduce as a
    gap called the bubble."""
    res = CliRunner().invoke(app, ["solve", str(_two_by_two(tmp_path)), "--algo", "hybrid",
                                   "--json", "--html", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    piped = json.loads(res.stdout)["result"]["pipeline"]
    assert piped["allreduce_s"] > 0 and [len(s["devices"]) for s in piped["stages"]] == [2, 2]
    section = _section((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert (f"<span>throughput</span><b>{rate(piped['throughput'])} samples/s (8 per "
            "micro-batch)</b>") in section
    assert (f"<span>all-reduce</span><b>{format_seconds(piped['allreduce_s'])} per "
            "iteration") in section
    assert "the replicated stages&#x27; gradients among their replicas</b>" in section
    # each replica's share of its stage's all-reduce: a bar on each of the four devices
    bars = re.findall(r'<rect data-allreduce="replicas" x="[^"]+" y="([^"]+)"', section)
    assert len(set(bars)) == 4 and "grey (AR): a gradient all-reduce" in section
    assert section.count('<rect class="task"') == 2 * 4 * 2


def test_an_all_reduce_summed_over_overlapping_rings_says_so(tmp_path: Path) -> None:
    """Before: 'all-reduce 25.600 ms per iteration' with no word that the two stages' rings
    overlap (18.9 ms of wall clock), so the figure read as time spent, and passed the
    iteration itself on a GPT-2 of two stages of two replicas (127.6 us against 123.8 us)."""
    res = CliRunner().invoke(app, ["solve", str(_two_by_two(tmp_path)), "--algo", "hybrid"])
    assert res.exit_code == 0, res.output
    words = " ".join(res.output.split())  # the table wraps it as the terminal's width says
    assert ("all-reduce 25.600 ms per iteration (summed over rings that overlap: 18.900 ms "
            "from the first start to the last end): the replicated stages' gradients among "
            "their replicas") in words
    assert "iteration (simulated) 40.000 ms" in words


def test_a_replicated_stages_busy_time_says_it_is_all_its_replicas(tmp_path: Path) -> None:
    """A replicated stage's busy time is its replicas' sum, its load each replica's: the
    stage tables of the terminal and the page say so. Before: headed `busy` and `load` as
    for one device, a GPT of one stage on 8 replicas read `busy 1.089 s` beside an
    iteration of 189.4 ms, and `load 17.023 ms`, a replica's, in the same row."""
    spec = _two_by_two(tmp_path)
    res = CliRunner().invoke(app, ["solve", str(spec), "--algo", "hybrid", "--json",
                                   "--html", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    piped = json.loads(res.stdout)["result"]["pipeline"]
    busy = {d["name"]: d["busy_s"] for d in piped["devices"]}
    for s in piped["stages"]:  # the figure: every replica's busy time, summed
        assert s["busy_s"] == pytest.approx(sum(busy[d] for d in s["devices"]))
        assert s["busy_s"] > piped["iteration_s"] * 0.5
    section = _section((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert "<th>busy (sum)</th><th>load (each)</th>" in section
    res = CliRunner().invoke(app, ["solve", str(spec), "--algo", "hybrid"],
                             env={"COLUMNS": "200"})
    assert re.search(r"┃ stage ┃ device +┃ ops ┃ +busy \(sum\) ┃ +load \(each\) ┃", res.output)
    # one device a stage (`data_parallel auto`: pipedp plans one pipeline there): as before
    spec.write_text(spec.read_text(encoding="utf-8").replace("data_parallel 2",
                                                             "data_parallel auto"),
                    encoding="utf-8")
    one = CliRunner().invoke(app, ["solve", str(spec), "--algo", "pipedp"],
                             env={"COLUMNS": "200"})
    assert re.search(r"┃ stage ┃ device +┃ ops ┃ +busy ┃ +load ┃", one.output), one.output



def test_a_page_says_why_its_plan_is_no_pipeline(tmp_path: Path) -> None:
    """The page of a plan that breaks the pipeline says what breaks it, as `solve`'s exit 3
    does (`pipeline.verdict`), and labels one pass's verdict as one pass's, as the terminal
    does. Before: a plan that split a unit over two devices (E401: a one-pass heuristic's)
    got `· feasible` in the page's summary and the note `does not fit: a device holds less
    than its stages' activations in flight need`, beside stages all under their caps."""
    spec = _two_by_two(tmp_path)
    spec.write_text(spec.read_text(encoding="utf-8").replace("  colocate f0, f0.bwd\n", ""),
                    encoding="utf-8")
    p = planner.load(spec).plan("p")
    ops = [op.name for op in p.graph.ops]
    placement = tuple(1 if name == "f0.bwd" else 0 for name in ops)  # f0 | f0.bwd: split
    result = simulate(p, Plan(placement))
    view = pipeline_view(p, placement, "given", 0.0)
    assert result.feasible and not view.rows[-1].fits  # one pass runs; the pipeline not
    assert max(view.rows[-1].run.memory_bytes) < p.cluster.devices[0].memory_bytes
    page = plan_report_html(p, result, pipeline=view)
    assert "· feasible (one pass)</p>" in page
    section = _section(page)
    # which unit, where (before: "a pipeline unit is split over devices")
    assert ('<p class="note">does not run as this pipeline: unit: op `f0.bwd` is on `d1` and '
            "op `f0` on `d0`, but they are one pipeline unit; ") in section
    # and a placement without replicas runs no `data_parallel 2`
    assert "replicas: stage 0 (`f0`, `f0.bwd`, `f1` and 5 more) runs on 1 device(s)" in section
    assert "activations in flight need" not in section
