"""The compare tables' pipeline fit column says it is memory only: `mem fits`.

Before: its header was `fits`, the word `solve`'s comparison table uses for "fits, and no
pipeline unit is split" (docs/pipelines.md: a split unit reads `fits no` there), while
compare's column checks memory alone: the expert's plan below, a unit split over devices,
read `fits yes` next to status `violated`."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from planner.compare import plan_sweep, run_sweep
from planner.render.compare_html import compare_report_html
from planner.render.tables import print_tables
from planner.report.compare import compare_report

#: two units, `c` on gpu1 and its backward op `cb` on gpu0: a unit split over devices
SPLIT = ("cluster c { device gpu[0..1] { memory 1 GiB }\n"
         "  link gpu0 <-> gpu1 { bandwidth 10 GB/s  latency 5 us } }\ngraph g {\n"
         + "".join(f"  op {n} {{ time {t} ms  output 1 MiB }}\n"
                   f"  op {n}b {{ time {2 * t} ms  backward_of {n} }}\n"
                   for n, t in (("a", 1), ("c", 3)))
         + "  a -> c -> cb -> ab\n}\nplan p { graph g  cluster c  objective pipeline  "
         "microbatches 4  schedule 1f1b\n  place a, ab, cb on gpu0  place c on gpu1 }\n")


def test_the_memory_only_fit_column_is_named_so(tmp_path: Path) -> None:
    spec = tmp_path / "split.plan"
    spec.write_text(SPLIT, encoding="utf-8")
    rows = run_sweep(plan_sweep([spec], "expert"), executor="inline").rows
    assert [(r["status"], r["pipeline_fits"]) for r in rows] == [("violated", True)]
    assert "pipeline unit" in rows[0]["reason"]
    console = Console(width=200, record=True, color_system=None)
    print_tables(console, compare_report(rows))
    header = next(line for line in console.export_text().splitlines() if "iteration" in line)
    assert "mem fits" in header
    page = compare_report_html(compare_report(rows))
    assert ">mem fits<" in page and ">fits<" not in page
