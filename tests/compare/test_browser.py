"""The HTML report in a real browser (headless Chromium): it renders, its script runs
without errors, the page has the expected number of chart elements, and in screenshots of
a 177-op and a 10,000-op report every chart's box holds a drawn chart, not a blank.

Skipped when Chromium is absent (`.ci/install-extras.sh` installs Debian's `chromium`) or
Pillow is (the `test` extra installs it).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from planner.compare import SweepResult, best_plans
from planner.render.compare_html import write_compare_html
from planner.report.compare import compare_report

from .browser import (
    Box,
    chart_boxes,
    console_errors,
    distinct_colours,
    dump_dom,
    find_chromium,
    ink_fraction,
    pixels,
)
from .browser import screenshot as take_screenshot
from .helpers import expected_marks

CHROMIUM = find_chromium()
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None,
                       reason="Chromium not found (/usr/bin/chromium); run .ci/install-extras.sh"),
    pytest.mark.skipif(importlib.util.find_spec("PIL") is None,
                       reason="Pillow not installed (pip install -e '.[test]')"),
]
WINDOW = (1200, 900)


@pytest.fixture(scope="module")
def report(clean: SweepResult, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The standard sweep's report, written to a file."""
    path = tmp_path_factory.mktemp("html") / "report.html"
    write_compare_html(str(path), compare_report(clean.rows, best_plans(clean)))
    return path


def _body_attrs(dom: str) -> dict[str, str]:
    body = re.search(r"<body([^>]*)>", dom)
    assert body is not None, "no <body> in the dumped DOM"
    return dict(re.findall(r'([\w-]+)="([^"]*)"', body.group(1)))


def test_script_runs_and_counts_the_chart_elements(report: Path, clean: SweepResult) -> None:
    assert CHROMIUM is not None
    run = dump_dom(CHROMIUM, report.as_uri())
    attrs = _body_attrs(run.stdout)
    assert attrs.get("data-ready") == "1", "the report's script did not finish"
    assert "data-js-error" not in attrs
    assert console_errors(run.stderr) == []
    pts, _ = expected_marks(clean.rows)
    views = best_plans(clean)
    assert int(attrs["data-charts"]) == 8  # per spec: 2 line charts, a Gantt, a memory view
    assert int(attrs["data-points"]) == pts
    assert int(attrs["data-ops"]) == 18
    assert int(attrs["data-transfers"]) == sum(len(v.result.transfers) for v in views)


def test_screenshot_is_not_blank(report: Path, tmp_path: Path) -> None:
    assert CHROMIUM is not None
    png = tmp_path / "report.png"
    take_screenshot(CHROMIUM, report.as_uri(), png, size=(900, 1100))
    assert png.exists(), "Chromium wrote no screenshot"
    assert ink_fraction(png) > 0.03
    assert distinct_colours(png) >= 16  # text, grid, several line and bar colours


def test_the_checks_catch_a_broken_page(tmp_path: Path) -> None:
    # the same checks on a page whose script fails: they must notice
    assert CHROMIUM is not None
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><p>x</p><script>notDefined();</script>"
                    "</body></html>")
    run = dump_dom(CHROMIUM, page.as_uri())
    assert "data-ready" not in _body_attrs(run.stdout)
    assert any("notDefined" in e for e in console_errors(run.stderr))
    blank = tmp_path / "blank.png"
    empty = tmp_path / "empty.html"
    empty.write_text("<!DOCTYPE html><html><body></body></html>")
    take_screenshot(CHROMIUM, empty.as_uri(), blank, size=(300, 200))
    assert ink_fraction(blank) == 0.0


def shoot_charts(page: Path, tmp_path: Path) -> tuple[dict[str, str], list[Box], Path]:
    """Lay the page out, read where its charts are, and screenshot the whole page."""
    assert CHROMIUM is not None
    run = dump_dom(CHROMIUM, page.as_uri(), size=WINDOW)
    attrs = _body_attrs(run.stdout)
    assert attrs.get("data-ready") == "1" and "data-js-error" not in attrs
    assert console_errors(run.stderr) == []
    png = tmp_path / f"{page.stem}.png"
    take_screenshot(CHROMIUM, page.as_uri(), png, size=(WINDOW[0], int(attrs["data-height"])))
    assert png.exists(), "Chromium wrote no screenshot"
    return attrs, chart_boxes(attrs["data-boxes"]), png


@pytest.mark.parametrize("report_fixture, bars", [("resnet_html", True), ("big_html", False)])
def test_every_chart_in_the_screenshot_is_drawn(report_fixture: str, bars: bool,
                                                request: pytest.FixtureRequest,
                                                tmp_path: Path) -> None:
    page: Path = request.getfixturevalue(report_fixture)
    attrs, boxes, png = shoot_charts(page, tmp_path)
    assert [b.kind for b in boxes] == ["gantt", "memory"]
    assert (int(attrs["data-ops"]) > 0) == bars and (int(attrs["data-bins"]) > 0) != bars
    for box in boxes:
        px = pixels(png, box)
        assert px.stddev > 20, f"{box.kind}: flat ({px})"
        assert px.ink > 0.05, f"{box.kind}: mostly blank ({px})"
        assert px.colours >= 8, f"{box.kind}: too few colours ({px})"
    gantt = pixels(png, boxes[0])
    assert gantt.colours >= 24  # op types in their own colours, not one or two


def test_the_chart_check_catches_a_blank_chart(resnet_html: Path,
                                               tmp_path: Path) -> None:
    # the same report with the Gantt chart's marks removed: its box must read as blank
    text = resnet_html.read_text(encoding="utf-8")
    blank = re.sub(r'(<svg class="chart" data-chart="gantt"[^>]*>).*?</svg>', r"\1</svg>",
                   text, count=1, flags=re.DOTALL)
    page = tmp_path / "blank-gantt.html"
    page.write_text(blank, encoding="utf-8")
    _, boxes, png = shoot_charts(page, tmp_path)
    gantt, memory = (pixels(png, b) for b in boxes)
    assert gantt.stddev < 1 and gantt.ink == 0.0
    assert memory.stddev > 20
