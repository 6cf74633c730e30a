"""`compare` tables at 80 columns: every number whole (no `18.6…`, `×bou…`, `infeasib…`),
whatever the widths of the cells; columns that do not fit move to a second table."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from planner.algorithms import names
from planner.cli.compare import compare_command
from planner.compare.rows import empty_row
from planner.render.compare_html import compare_report_html
from planner.render.tables import WINS_TITLE, print_tables, short_seconds
from planner.report.compare import compare_report

from .helpers import SPECS

GIB = 1024**3


def _row(algorithm: str, status: str, makespan: float | None, **extra: Any) -> dict[str, Any]:
    return empty_row(spec="specs/transformer.plan", plan="transformer_big_dgx1",
                     bandwidth="1x", memory="100%", devices="all", algorithm=algorithm,
                     status=status, makespan_s=makespan, **extra)


def _wide_rows() -> list[dict[str, Any]]:
    """Every algorithm, with the widest figures a sweep prints."""
    rows = []
    for k, algo in enumerate(names()):
        ok = k % 3 != 2
        rows.append(_row(algo, "feasible" if ok else ("infeasible", "solver_error",
                                                      "interrupted")[k // 3 % 3],
                         1234.567 + k if ok else None,
                         ratio_to_best=18.603 + k if ok else None,
                         ratio_to_bound=1760.303 + k if ok else None,
                         planning_s=59.987 + k, devices_used=16, n_devices=16,
                         peak_memory_bytes=15.99 * GIB, memory_cap_bytes=16 * GIB))
    return rows


def _render(rows: list[dict[str, Any]], width: int = 80) -> str:
    out = io.StringIO()
    print_tables(Console(file=out, width=width, color_system=None, legacy_windows=False),
                 compare_report(rows))
    return out.getvalue()


def _widest(text: str) -> int:
    """The widest line but the settings titles (printed whole, for the terminal to wrap)."""
    return max(len(line) for line in text.splitlines() if " · " not in line)


def _whole(text: str, cell: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(cell)}(?![\w.])", text) is not None


def test_every_figure_is_whole_at_80_columns() -> None:
    rows = _wide_rows()
    text = _render(rows)
    assert "…" not in text
    assert _widest(text) <= 80
    for r in rows:
        cells = [r["algorithm"], r["status"], short_seconds(r["planning_s"], 3), "16/16",
                 "15.99/16 GiB"]
        if r["makespan_s"] is not None:
            cells += [short_seconds(r["makespan_s"]), f"{r['ratio_to_best']:.3f}",
                      f"{r['ratio_to_bound']:.3f}"]
        missing = [c for c in cells if not _whole(text, c)]
        assert not missing, (missing, text)
    assert _whole(text, "×bound") and _whole(text, "infeasible")


def test_every_column_is_kept_whole_at_40_columns() -> None:
    """Before: at `COLUMNS=40` the wins table dropped its `geo-mean × best` column and cut
    `algorithm` to `algor…`; now it is split as the settings tables are, each part led by
    the algorithm."""
    rows = _wide_rows()
    text = _render(rows, width=40)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()
               if " · " not in line and line != WINS_TITLE) <= 40, text
    wins = compare_report(rows).wins
    assert _whole(text, "geo-mean × best") and _whole(text, "valid plans")
    parts = text.split(WINS_TITLE)[1].splitlines()
    for w in wins:  # its row's cells, across the parts of the wins table
        cells = [c for line in parts if line.split()[:1] == [w.algorithm]
                 for c in line.split()[1:]]
        ratio = "—" if w.mean_ratio is None else f"{w.mean_ratio:.3f}"
        assert cells == [str(w.wins), str(w.groups), str(w.ok), str(w.failed), ratio], text
    for r in rows:
        if r["makespan_s"] is not None:
            assert _whole(text, f"{r['ratio_to_bound']:.3f}")


def test_a_table_that_fits_stays_one_table() -> None:
    rows = [_row("metf", "feasible", 0.0876, ratio_to_best=1.0, ratio_to_bound=1.129,
                 planning_s=0.0014, devices_used=2, n_devices=4,
                 peak_memory_bytes=7.99 * GIB, memory_cap_bytes=8 * GIB)]
    text = _render(rows)
    header = next(line for line in text.splitlines() if "makespan" in line)
    assert header.split() == ["algorithm", "makespan", "×best", "×bound", "status",
                              "planning", "devs", "peak/cap"]
    assert text.count("algorithm") == 2  # the settings table and the wins table


def test_a_real_sweep_prints_every_number_of_its_rows_at_80_columns(tmp_path: Path) -> None:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command("compare")(compare_command)
    app.command("version")(lambda: None)
    out = tmp_path / "rows.json"
    result = CliRunner().invoke(app, ["compare", *map(str, SPECS), "--algos",
                                      "msct,heft,roundrobin,single", "--memory", "25%,100%",
                                      "--jobs", "1", "--out", str(out)],
                                env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "…" not in text and _widest(text) <= 80
    rows = json.loads(out.read_text())
    assert any(r["status"] == "infeasible" for r in rows)
    for r in rows:
        assert _whole(text, r["algorithm"]) and _whole(text, r["status"])
        if r["makespan_s"] is not None and r["status"] == "feasible":
            assert _whole(text, short_seconds(r["makespan_s"])), (r, text)
            assert _whole(text, f"{r['ratio_to_bound']:.3f}"), (r, text)


def test_a_settings_title_names_each_schedule_its_rows_ran() -> None:
    """Before: `8 micro-batches, gpipe`, the first row's schedule, where msct and heft ran
    in gpipe's order (their devices are no chain of stages: 1f1b would deadlock) and
    pipedp and uniform ran 1f1b; the HTML report's heading said the same."""
    rows = [_row(algo, "feasible", 1e-3, objective="pipeline", microbatches="spec",
                 schedule=schedule, n_microbatches=8, iteration_s=9e-3)
            for algo, schedule in (("msct", "gpipe"), ("heft", "gpipe"), ("pipedp", "1f1b"),
                                   ("uniform", "1f1b"))]
    ran = "8 micro-batches, 1f1b (pipedp, uniform), gpipe (msct, heft)"
    assert f"objective pipeline · {ran}\n" in _render(rows, width=200)
    assert f"<h3>objective pipeline · {ran}</h3>" in compare_report_html(compare_report(rows))
    one = [{**r, "schedule": "1f1b"} for r in rows]  # one schedule: named alone, as before
    assert "objective pipeline · 8 micro-batches, 1f1b\n" in _render(one, width=200)


@pytest.mark.parametrize(("seconds", "shown"), [
    (999.96e-6, "1 ms"), (0.99996, "1 s"), (9.99996e-7, "1 us"), (12345.0, "12345 s"),
    (4.42e-3, "4.42 ms"), (0.0012345, "1.234 ms"), (0.0, "0 ns"),
])
def test_a_duration_rounded_up_to_the_next_unit_is_shown_in_it(seconds: float,
                                                               shown: str) -> None:
    """A duration that rounds to 1000 of its unit is shown in the next (before: `1000 us`
    for 999.96 µs), and a long one without exponent (before: `1.234e+04 s`)."""
    assert short_seconds(seconds) == shown
