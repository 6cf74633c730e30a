"""The tables' `peak/cap` never prints a number in exponent notation.

Before: `--memory 1000MiB` read `1.92/1e+03 MiB`, and a pipeline's 2 KiB on an 8 GiB device
`1.91e-06/8 GiB`: every cap from 999.5 to 1023.99 of a unit, and every peak below a
ten-thousandth of the cap's unit, came out in exponent notation (and a peak below a
hundredth of it, as the 0.00188 GiB of a tiny pipeline, was hard to read)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from planner.compare import plan_sweep, run_sweep
from planner.render.compare_html import compare_report_html
from planner.render.tables import print_tables
from planner.report.compare import compare_report
from planner.units import format_bytes_of

from .test_tables import _row

KIB, MIB, GIB = 1024, 1024**2, 1024**3
#: `a` and `b` placed on gpu0: 1 GiB + 1 MiB of outputs on a 1 GiB device
OVER = ("cluster c { device gpu[0..1] { memory 1 GiB }\n"
        "  link gpu0 <-> gpu1 { bandwidth 10 GB/s  latency 5 us } }\n"
        "graph g { op a { time 1 ms  output 1 GiB }\n  op b { time 1 ms  output 1 MiB }\n"
        "  a -> b }\nplan p { graph g  cluster c  place a, b on gpu0 }\n")


def _peak_cap(peak: float, cap: float) -> str:
    console = Console(width=200, record=True, color_system=None)
    row = _row("heft", "feasible", 0.01, peak_memory_bytes=int(peak), memory_cap_bytes=cap,
               devices_used=1, n_devices=4)
    print_tables(console, compare_report([row]))
    line = next(x for x in console.export_text().splitlines() if x.strip().startswith("heft"))
    return line.split("1/4")[1].strip()


def test_peak_and_cap_are_plain_numbers() -> None:
    assert _peak_cap(1.92 * MIB, 1000 * MIB) == "1.92/1000 MiB"
    assert _peak_cap(1020 * MIB, 1023 * MIB) == "1020/1023 MiB"
    assert _peak_cap(2 * KIB, 8 * GIB) == "2 KiB/8 GiB"
    assert _peak_cap(7.99 * GIB, 8 * GIB) == "7.99/8 GiB"
    assert _peak_cap(63 * MIB, 128 * MIB) == "63/128 MiB"
    assert _peak_cap(0, 8 * GIB) == "0/8 GiB"


def test_a_peak_above_the_cap_reads_above_it() -> None:
    """Before: a peak just over the cap rounded to it, `8/8 GiB` beside `violated` (and a
    peak of 7.999 GiB over a cap of 7.996 GiB read `8/8 GiB` too)."""
    assert _peak_cap(8 * GIB + MIB, 8 * GIB) == "8.001/8 GiB"
    assert _peak_cap(8 * GIB + 1, 8 * GIB) == "8.000000001/8 GiB"
    assert _peak_cap(7.999 * GIB, 7.996 * GIB) == "7.999/7.996 GiB"
    assert _peak_cap(1023.9 * MIB, 1023.8 * MIB) == "1023.9/1023.8 MiB"
    assert _peak_cap(8 * GIB, 8 * GIB) == "8/8 GiB"  # at the cap: fits, 3 digits as before
    assert _peak_cap(2**60, 2**60 - 1) == ">1048576/1048576 TiB"


def test_a_peak_below_the_cap_reads_below_it() -> None:
    """The table's rule is `units.format_bytes_of`'s on both sides of the cap: a plan that
    fits never reads as full (before: 8 GiB - 1 MiB read `8/8 GiB`)."""
    assert _peak_cap(8 * GIB - MIB, 8 * GIB) == "7.999/8 GiB"
    assert _peak_cap(8 * GIB - 1, 8 * GIB) == "7.999999999/8 GiB"
    assert _peak_cap(2**60 - 1, 2**60) == "<1048576/1048576 TiB"
    assert _peak_cap(7.99 * GIB, 8 * GIB) == "7.99/8 GiB"  # 3 digits tell them apart


def test_an_expert_plan_over_its_cap_reads_so(tmp_path: Path) -> None:
    """End to end: a placement that needs 1 GiB + 1 MiB on a 1 GiB device."""
    spec = tmp_path / "over.plan"
    spec.write_text(OVER, encoding="utf-8")
    rows = run_sweep(plan_sweep([spec], "expert"), executor="inline").rows
    assert [r["status"] for r in rows] == ["violated"]
    assert rows[0]["peak_memory_bytes"] > rows[0]["memory_cap_bytes"] == GIB
    console = Console(width=200, record=True, color_system=None)
    print_tables(console, compare_report(rows))
    line = next(x for x in console.export_text().splitlines() if "violated" in x)
    peak, cap = line.split()[-2].split("/")
    assert float(peak) > float(cap) == 1.0
    # no makespan, so no ratio to the bound either (before: `×bound 0.018`, a plan that
    # does not run read as 55 times faster than the bound)
    assert line.split()[:5] == ["expert", "—", "—", "—", "violated"]
    assert rows[0]["ratio_to_bound"] < 1  # the CSV keeps the figure, beside its status
    # the reason beside it, and the HTML report's cell: `1.00 GiB` of `1.00 GiB` before
    assert rows[0]["reason"].endswith("needs 1.001 GiB (static) but its memory is 1.000 GiB")
    assert ">1.001 GiB / 1.000 GiB<" in compare_report_html(compare_report(rows))


def test_format_bytes_of_reads_a_peak_over_its_cap_as_over() -> None:
    assert format_bytes_of(GIB + 1, GIB) == ("1.000000001 GiB", "1.000000000 GiB")
    assert format_bytes_of(GIB // 2, GIB) == ("512.00 MiB", "1.00 GiB")  # fits: as before
    assert format_bytes_of(2 * GIB, GIB) == ("2.00 GiB", "1.00 GiB")
    assert format_bytes_of(1024 * GIB, 1024 * GIB - 1) == ("1.000000000 TiB",
                                                           "1023.999999999 GiB")
    assert format_bytes_of(2**60 + 1, 2**60) == ("> 1048576.00 TiB", "1048576.00 TiB")
