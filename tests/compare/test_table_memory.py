"""The tables' `peak/cap` never prints a number in exponent notation.

Before: `--memory 1000MiB` read `1.92/1e+03 MiB`, and a pipeline's 2 KiB on an 8 GiB device
`1.91e-06/8 GiB`: every cap from 999.5 to 1023.99 of a unit, and every peak below a
ten-thousandth of the cap's unit, came out in exponent notation (and a peak below a
hundredth of it, as the 0.00188 GiB of a tiny pipeline, was hard to read)."""

from __future__ import annotations

from rich.console import Console

from planner.render.tables import print_tables
from planner.report.compare import compare_report

from .test_tables import _row

KIB, MIB, GIB = 1024, 1024**2, 1024**3


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
