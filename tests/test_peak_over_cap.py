"""A peak just over its cap reads above it wherever it is shown beside the cap (the one rule
of `units.format_bytes_of`), on a 1 GiB device held 1 MiB or 1 byte too much.

Before: solve's device table read `mem %` `100.0` (in red) for 1 byte over; the HTML memory
chart's tooltip `peak 1.00 GiB of 1.00 GiB (100%)`; the pipeline pages' held / cap `1.00 GiB`
beside `1.00 GiB`; `--algo single` and a heuristic's E706 `would need 1.00 GiB but holds
1.00 GiB`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import planner
from planner import units
from planner.algorithms.infeasible import memory_figures, stuck_error
from planner.cli import app
from planner.model import Problem
from planner.pipeline.split import Split, stage_bytes
from planner.plan import Plan
from planner.render.terminal import device_table
from planner.render.timeline import memory_svg
from planner.simulate import SimResult, simulate

KIB, MIB, GIB = 1024, 1024**2, 1024**3
CLUSTER = ("cluster c {{ device gpu[0..1] {{ memory {cap} }}\n"
           "  link gpu0 <-> gpu1 {{ bandwidth 10 GB/s  latency 5 us }} }}\n")
#: `a` and `b` on gpu0: 1 GiB plus `b`'s output on a 1 GiB device
OVER = CLUSTER + ("graph g {{ op a {{ time 1 ms  output 1 GiB }}\n"
                  "  op b {{ time 1 ms  output {extra} }}\n  a -> b }}\n"
                  "plan p {{ graph g  cluster c }}\n")
#: two independent ops that no single 1 GiB device holds together (1 GiB + `extra`)
APART = CLUSTER + ("graph g {{ op a {{ time 1 ms  output 512 MiB }}\n"
                   "  op b {{ time 1 ms  output {b} }} }}\nplan p {{ graph g  cluster c }}\n")
#: a two-stage 1F1B pipeline of 4 micro-batches that needs 1025 MiB per 1 GiB device: d0
#: 2 in flight x 512 KiB + 4 receive buffers x 256 MiB (its output's gradient), d1 1022.5 MiB
#: kept + 512 KiB received + 4 x 512 KiB (its input's buffers). (Before 2026-12-07's receive
#: buffers: f0 and f1 of 524800 KiB each, 2 x 524800 KiB held on d0 and on d1.)
PIPE = """cluster c { device d[0..1] { memory 1 GiB }
  link d[0..1] <-> d[0..1] { bandwidth 1000000 GB/s latency 0 s } }
graph g {
  op f0 { time 1 ms; output 512 KiB }
  op f1 { time 1 ms; output 1047040 KiB }
  op f0.bwd { time 1 ms; backward_of f0 }
  op f1.bwd { time 1 ms; backward_of f1 }
  f0 -> f0.bwd
  f1 -> f1.bwd
  colocate f0, f0.bwd
  colocate f1, f1.bwd
  f1.bwd -> f0.bwd { bytes 256 MiB }
  f0 -> f1
}
plan p { graph g; cluster c; objective pipeline; microbatches 4; schedule 1f1b
  place f0 on d0
  place f1 on d1
  place f0.bwd on d0
  place f1.bwd on d1
}
"""


def _over(extra: str) -> tuple[Problem, SimResult]:
    problem = planner.loads(OVER.format(cap="1 GiB", extra=extra)).plan()
    result = simulate(problem, Plan((0, 0)))
    assert not result.feasible
    return problem, result


@pytest.mark.parametrize(("extra", "peak", "pct"), [
    ("1 MiB", "1.001 GiB / 1.000 GiB", "100.1"),
    ("410 KiB", "1.0004 GiB / 1.0000 GiB", "100.04"),  # was `100.0`
    ("1 B", "1.000000001 GiB / 1.000000000 GiB", "100.0000001")])
def test_device_table_mem_percent_reads_above_100(extra: str, peak: str, pct: str) -> None:
    problem, result = _over(extra)
    console = Console(width=200, record=True, color_system=None)
    console.print(device_table(problem, result))
    row = next(x for x in console.export_text().splitlines() if "gpu0" in x).split("│")
    assert [c.strip() for c in row[5:7]] == [peak, pct]  # was `100.0` for 1 byte over


@pytest.mark.parametrize(("extra", "tip", "label"), [
    ("1 MiB", "peak 1.001 GiB of 1.000 GiB (100.1%)", "peak 100.1%"),
    ("1 B", "peak 1.000000001 GiB of 1.000000000 GiB (100.0000001%)", "peak 100.0000001%")])
def test_memory_chart_tooltip_reads_above_the_cap(extra: str, tip: str, label: str) -> None:
    svg = memory_svg(*_over(extra))
    assert f'data-tip="gpu0: {tip}"' in svg  # was `peak 1.00 GiB of 1.00 GiB (100%)`
    assert f">{label}</text>" in svg


def test_format_percent_of() -> None:
    assert units.format_percent_of(GIB + MIB, GIB) == "100.1"
    assert units.format_percent_of(1.0004 * GIB, GIB) == "100.04"
    assert units.format_percent_of(GIB + 1, GIB, 0) == "100.0000001"
    assert units.format_percent_of(GIB, GIB) == "100.0"  # at the cap: fits
    assert units.format_percent_of(GIB // 2, GIB, 0) == "50"
    assert units.format_percent_of(2**60 + 1, 2**60) == ">100"
    assert units.format_percent_of(2**1100, 1) == "∞"


def test_pipeline_pages_read_a_held_figure_over_its_cap(tmp_path: Path) -> None:
    spec, html = tmp_path / "pipe.plan", tmp_path / "r.html"
    spec.write_text(PIPE, encoding="utf-8")
    p = planner.loads(PIPE).plan()
    assert p.pipeline is not None and stage_bytes(p, Split((0, 1, 2), (0, 1)), p.pipeline) == [
        2 * 512 * KIB + 4 * 256 * MIB, 1047040 * KIB + 512 * KIB + 4 * 512 * KIB]  # `PIPE`
    res = CliRunner().invoke(app, ["solve", str(spec), "--algo", "expert", "--html",
                                   str(html)], env={"COLUMNS": "200"})
    assert "does not fit as a pipeline" in res.output, res.output
    held = [x.split("│") for x in res.output.splitlines() if re.match(r"│ d[01] +│ +1\.", x)]
    assert [[c.strip() for c in r[2:4]] for r in held] == [["1.001 GiB", "1.000 GiB"]] * 2
    page = html.read_text(encoding="utf-8")
    cells = '<td class="status-bad">1.001 GiB</td><td>1.000 GiB</td>'
    assert page.count(cells) == 2  # both were `1.00 GiB` beside `1.00 GiB`


@pytest.mark.parametrize(("b", "needs"), [
    ("513 MiB", "would need 1.001 GiB but holds 1.000 GiB (short by 1.00 MiB)"),
    ("536870913 B", "would need 1.000000001 GiB but holds 1.000000000 GiB (short by 1 B)")])
def test_single_says_short_by_with_figures_apart(tmp_path: Path, b: str, needs: str) -> None:
    spec = tmp_path / "apart.plan"
    spec.write_text(APART.format(cap="1 GiB", b=b), encoding="utf-8")
    res = CliRunner().invoke(app, ["solve", str(spec), "--algo", "single"],
                             env={"COLUMNS": "400"})
    assert f"`gpu0` (the closest) {needs}" in " ".join(res.output.split()), res.output


def test_stuck_error_and_memory_figures_read_over() -> None:
    problem = planner.loads(APART.format(cap="1 GiB", b="1 MiB")).plan()
    err = stuck_error(problem, "mtopo", 1, [(0, GIB + MIB), (1, GIB + 1)])
    text = str(err.diagnostics[0].message)
    assert "`gpu0` would need 1.001 GiB of 1.000 GiB, 1.00 MiB short" in text
    assert "`gpu1` would need 1.000000001 GiB of 1.000000000 GiB, 1 B short" in text
    tight = planner.loads(APART.format(cap="1 GiB", b="1 MiB").replace(
        "output 512 MiB", "output 1025 MiB").replace("gpu[0..1]", "gpu[0..0]").replace(
        "  link gpu0 <-> gpu1 { bandwidth 10 GB/s  latency 5 us }", "")).plan()
    assert memory_figures(tight) == (
        "least total memory 1.002 GiB (static) vs total capacity 1.000 GiB of 1 device(s)",
        "largest unit: op `a` needs at least 1.001 GiB; largest device `gpu0` holds 1.000 GiB")


def test_pipedp_memory_note_reads_the_need_above_the_cap(tmp_path: Path) -> None:
    """One stage would be best without the caps, but both ops' params (1025 MiB) and their
    activations exceed a 1 GiB device: the note read `need 1.00 GiB on d0, which holds 1.00
    GiB`."""
    spec = tmp_path / "dp.plan"
    spec.write_text(
        "cluster c { device d[0..1] { memory 1 GiB }\n"
        "  link d[0..1] <-> d[0..1] { bandwidth 1 MB/s latency 0 s } }\n"
        "graph g {\n  op f0 { time 1 ms; params 512 MiB; output 1 MB }\n"
        # f1's output 1 KB: the model's output, which the last stage of an inference
        # pipeline holds 2M times (`hybrid.returned_copies`), keeps the need just above 1 GiB
        "  op f1 { time 1 ms; params 513 MiB; output 1 KB }\n  f0 -> f1\n}\n"
        "plan p { graph g; cluster c; objective pipeline; microbatches 4; schedule 1f1b }\n",
        encoding="utf-8")
    res = CliRunner().invoke(app, ["solve", str(spec), "--algo", "pipedp"],
                             env={"COLUMNS": "400"})
    assert "but need 1.002 GiB on d0, which holds 1.000 GiB" in " ".join(res.output.split())


def test_generate_note_reads_params_and_outputs_above_the_largest_device(
        tmp_path: Path) -> None:
    """`generate --cluster`'s note beside each plan: with the largest device one byte short
    of the params and outputs it read `the largest 2.10 MiB; params + outputs (2.10 MiB) fit
    on more than one device`."""
    args = ["generate", "transformer", "--layers", "2", "--hidden", "64", "--heads", "2",
            "--seq", "16", "--batch", "1", "--vocab", "100", "--training", "--name", "tiny"]
    first = tmp_path / "first.plan"
    res = CliRunner().invoke(app, [*args, "-o", str(first)])
    assert res.exit_code == 0, res.output
    need = sum(o.params_bytes + o.output_bytes for o in planner.load(first).graphs["tiny"].ops)
    cluster = tmp_path / "c.plan"
    cluster.write_text(CLUSTER.format(cap=f"{need - 1} B"), encoding="utf-8")
    out = tmp_path / "tiny.plan"
    res = CliRunner().invoke(app, [*args, "--cluster", str(cluster), "-o", str(out)])
    assert res.exit_code == 0, res.output
    note = " ".join(line.lstrip("# ") for line in out.read_text(encoding="utf-8").splitlines()
                    if line.startswith("#"))
    found = re.search(r"the largest ([\d.]+) MiB; params \+ outputs \(([\d.]+) MiB\) fit on "
                      r"more than one device", note)
    assert found, note
    assert float(found[2]) > float(found[1])


def test_a_peak_under_its_cap_never_reads_as_full() -> None:
    """The other side of the rule: a plan that fits reads below its cap (before: 99.96%
    read `100.0` and 1 byte under `1.00 GiB` of `1.00 GiB`, as full as a plan one byte
    over read before `format_bytes_of`)."""
    assert units.format_percent_of(0.9996 * GIB, GIB) == "99.96"
    assert units.format_percent_of(GIB - 1, GIB, 0) == "99.9999999"
    assert units.format_percent_of(GIB, GIB) == "100.0"  # at the cap: full, and it fits
    assert units.format_percent_of(2**60 - 1, 2**60) == "<100"
    assert units.format_bytes_of(GIB - 1, GIB) == ("1023.999999 MiB", "1.000000 GiB")
    assert units.format_bytes_of(GIB - 4 * 2**10, GIB) == ("1023.996 MiB", "1.000 GiB")
    assert units.format_bytes_of(GIB, GIB) == ("1.00 GiB", "1.00 GiB")
    assert units.format_bytes_of(2**60 - 1, 2**60) == ("< 1048576.00 TiB", "1048576.00 TiB")
