"""The HTML report from 10 to 100,000 ops, read as text: bars or aggregated columns,
colours per op type with a legend, transfers only where legible, aligned time axes,
memory ticks and caps, lower bounds, failed runs explained, axis ranges from the data.

`solve --html` is run as users run it (the CLI in-process) on specs/resnet.plan (177 ops)
and on a 10,000-op spec from bench/bench_parse.py's `generate`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from planner.compare import SweepResult, best_plans
from planner.render.compare_html import compare_report_html
from planner.render.html import line_chart_svg
from planner.report.compare import compare_report

from .helpers import ROOT, count


def svg_of(kind: str, text: str) -> str:
    found = re.search(rf'<svg class="chart" data-chart="{kind}".*?</svg>', text, re.DOTALL)
    assert found is not None, f"no {kind} chart"
    return found.group(0)


def test_small_report_draws_each_op_coloured_by_type(resnet_html: Path) -> None:
    text = resnet_html.read_text(encoding="utf-8")
    gantt = svg_of("gantt", text)
    ops = re.findall(r'<rect class="op" data-cat="(\d+)"[^>]* fill="([^"]+)"', gantt)
    assert len(ops) == 177 and count(r'class="bin"', gantt) == 0
    colour_of: dict[str, set[str]] = {}
    for cat, fill in ops:
        colour_of.setdefault(cat, set()).add(fill)
    assert all(len(fills) == 1 for fills in colour_of.values())  # one colour per type
    legend = re.findall(r'<span data-cat="(\d+)"><i style="background:([^"]+)"></i>([^ <]+)',
                        text)
    assert {c: {f} for c, f, _ in legend if c in colour_of} == colour_of
    assert [name for _, _, name in legend][:3] == ["Conv", "BatchNormalization", "Relu"]
    # the transfers are few: drawn as arrows, no per-pair table
    assert count(r'<line class="xfer"', gantt) >= 1 and 'class="pairs"' not in text


def test_solve_page_says_algorithm_status_bound_gap_and_time(resnet_html: Path) -> None:
    text = resnet_html.read_text(encoding="utf-8")
    figures = dict(re.findall(r"<div><span>([^<]+)</span><b>([^<]+)</b></div>", text))
    assert list(figures) == ["makespan", "algorithm", "status", "lower bound", "gap",
                             "planning time"]
    assert figures["algorithm"] == "msct" and figures["status"] == "feasible"
    assert re.fullmatch(r"\d+(\.\d+)? ms", figures["lower bound"])
    assert re.fullmatch(r"\d+\.\d%", figures["gap"])
    # the bound is on the Gantt chart too, left of the makespan
    gantt = svg_of("gantt", text)
    lb = re.search(r'<line class="lb-mark" x1="([\d.]+)"', gantt)
    ms = re.search(r'<line class="ms-mark" x1="([\d.]+)"', gantt)
    assert lb and ms and float(lb.group(1)) < float(ms.group(1))


def test_memory_panel_shares_the_gantt_time_axis(resnet_html: Path) -> None:
    text = resnet_html.read_text(encoding="utf-8")
    gantt, memory = svg_of("gantt", text), svg_of("memory", text)

    def time_ticks(svg: str) -> list[tuple[str, str]]:
        return re.findall(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="middle">'
                          r'(0|[\d.]+ [mu]?s)</text>', svg)

    assert time_ticks(gantt) and time_ticks(gantt) == time_ticks(memory)
    lanes = re.compile(r'<rect class="lane" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"')
    assert set(lanes.findall(gantt)) == set(lanes.findall(memory))
    # y ticks in binary units and a cap line per device, labelled
    assert count(r'text-anchor="end">\d+(\.\d+)? GiB</text>', memory) >= 4
    assert count(r'<line class="cap"', memory) == 4
    assert count(r'class="cap-label"[^>]*>cap 8 GiB<', memory) == 4


@pytest.mark.slow
def test_big_report_aggregates_and_stays_small(big_html: Path) -> None:
    text = big_html.read_text(encoding="utf-8")
    size = len(text.encode("utf-8"))
    assert size < 1_500_000, f"{size} bytes"
    gantt = svg_of("gantt", text)
    assert count(r'class="op"', gantt) == 0  # no bar per op: columns per 4 px instead
    bins = count(r'<rect class="bin"', gantt)
    assert 0 < bins <= 8 * (1080 - 150 - 130) // 4
    assert count(r'<line class="xfer"', gantt) == 0  # 8,000+ transfers: summed per pair
    pairs = re.findall(r'<tr><td class="l">(gpu\d)</td><td class="l">(gpu\d)</td><td>(\d+)</td>',
                       text)
    assert 10 <= len(pairs) <= 24 and len({(a, b) for a, b, _ in pairs}) == len(pairs)
    counts = [int(n) for _, _, n in pairs]
    assert sum(counts) > 1000
    # eight op types from the generator, each its own colour, named in the legend
    legend = re.findall(r'<span data-cat="\d+"><i style="background:([^"]+)"></i>([^ <]+)', text)
    assert sorted(name for _, name in legend) == sorted(
        ["MatMul", "Add", "Relu", "Softmax", "LayerNorm", "Conv", "Concat", "Gather"])
    assert len({c for c, _ in legend}) == 8
    # tooltips name the op groups (name prefixes) that ran in a column
    assert re.search(r'data-tip="gpu\d · [^"]*ops started: layer\d+ ×\d+', gantt)


@pytest.mark.slow
def test_the_compare_page_gives_the_sizes_of_these_reports(resnet_html: Path,
                                                           big_html: Path) -> None:
    # it said 0.41 MB for the 10,000-op page, which had grown to 0.46 MB
    page = " ".join((ROOT / "docs" / "compare.md").read_text(encoding="utf-8").split())
    said = re.search(r"the pages are (\d+) KB and ([\d.]+) MB", page)
    assert said, "docs/compare.md no longer gives the reports' sizes"
    for path, figure, unit in ((resnet_html, said.group(1), 1e3), (big_html, said.group(2), 1e6)):
        size = path.stat().st_size / unit
        assert abs(size - float(figure)) <= 0.05 * size, (path.name, size, figure)


def test_log_axis_spans_only_the_data() -> None:
    # makespans from 11 ms to 550 ms: the axis must not run from nanoseconds
    ys = [0.011, 0.09, 0.55]
    svg = line_chart_svg(["1 GB/s", "10 GB/s", "100 GB/s"], [("a", "#000", ys, ["", "", ""])],
                         x_title="bandwidth", bounds=[0.010, 0.05, None])
    assert "(log)" in svg
    labels = re.findall(r'text-anchor="end">([\d.]+ (?:ns|us|ms|s))</text>', svg)
    seconds = [float(v) * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[u]
               for v, u in (lab.split() for lab in labels)]
    assert len(seconds) >= 3 and min(seconds) >= 0.005 and max(seconds) <= 1.0
    # the bound is a dashed series of its own, failures none
    assert count(r'<g class="lb"', svg) == 1 and count(r'class="failband"', svg) == 0


def test_failed_runs_sit_in_a_labelled_band() -> None:
    svg = line_chart_svg(["a", "b"], [("x", "#000", [0.01, None], ["", "infeasible: cap"])],
                         x_title="memory")
    band = re.search(r'<rect class="failband" x="[\d.]+" y="([\d.]+)" width="[\d.]+" '
                     r'height="([\d.]+)"', svg)
    cross = re.search(r'<path class="fail"[^>]* d="M[\d.]+,([\d.]+)', svg)
    assert band and cross and ">failed</text>" in svg
    top, height = float(band.group(1)), float(band.group(2))
    assert top <= float(cross.group(1)) <= top + height  # in the band, not at y = 0
    assert "infeasible: cap" in svg


def test_compare_charts_draw_the_bound_and_explain_failures(clean: SweepResult) -> None:
    text = compare_report_html(compare_report(clean.rows, best_plans(clean)))
    lines = re.findall(r'<svg class="chart" data-chart="line".*?</svg>', text, re.DOTALL)
    assert len(lines) == 4
    for svg in lines:
        marks = re.findall(r'data-tip="lower bound · ([^\n]+)\n', svg)
        assert len(marks) == 3  # one per setting on the x axis
    assert count(r'<i class="cross">×</i>failed run', text) == count('class="failband"', text)
    assert count('class="failband"', text) >= 2  # 25% memory fails: explained, not a bare ×
    assert count(r'<line class="lb-mark"', text) == 2  # on each best plan's Gantt chart
