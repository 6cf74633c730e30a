"""`--resume FILE` reruns the rows another version of planner computed.

Before: rows did not record the planner version, so a sweep resumed after an upgrade that
changed an algorithm silently reused the rows the older code had computed (`2 runs: 0 run
now, 2 from the resume file`), next to the rows of the new code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.compare import read_rows
from planner.compare.rows import columns
from planner.version import __version__

from .test_resume import _compare, _project, _sweep, drop_column


def _as_older_planner(monkeypatch: pytest.MonkeyPatch, version: str | None) -> None:
    """Rows computed from now on record `version` (what an older install wrote)."""
    monkeypatch.setattr("planner.compare.worker.__version__", version)


def test_rows_record_the_planner_version(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path / "a")
    monkeypatch.chdir(tmp_path / "a")
    out = tmp_path / "out.csv"
    result = _compare("chain.plan", "--out", str(out))
    assert [r["planner_version"] for r in json.loads(result.stdout)["result"]] == [
        __version__] * 2
    assert [r["planner_version"] for r in read_rows(out)] == [__version__] * 2


def test_rows_of_another_version_are_run_again_and_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path / "a")
    monkeypatch.chdir(tmp_path / "a")
    log = tmp_path / "rows.csv"
    with monkeypatch.context() as m:
        _as_older_planner(m, "0.0.9")
        _sweep("chain.plan", log)
    assert {r["planner_version"] for r in read_rows(log)} == {"0.0.9"}
    result = _compare("chain.plan", "--resume", str(log))
    assert (f"2 runs: 2 run now, 2 rows of another planner version run again "
            f"(0.0.9; this is {__version__})") in result.stderr
    # the file holds the new rows only, one a point, and the next resume reuses them
    assert [r["planner_version"] for r in read_rows(log)] == [__version__] * 2
    again = _sweep("chain.plan", log)
    assert (again.ran, again.reused, again.other_version) == (0, 2, 0)


def test_a_file_written_before_rows_carried_the_version_is_run_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An older file (no `planner_version` column) still reads; its rows run again."""
    _project(tmp_path / "a")
    monkeypatch.chdir(tmp_path / "a")
    log = tmp_path / "rows.csv"
    _sweep("chain.plan", log)
    drop_column(log, "planner_version")
    assert all(r["planner_version"] is None for r in read_rows(log))
    result = _compare("chain.plan", "--resume", str(log))
    assert ("2 runs: 2 run now, 2 rows of another planner version run again "
            f"(no version recorded; this is {__version__})") in result.stderr
    assert [r["planner_version"] for r in read_rows(log)] == [__version__] * 2


def test_the_docs_list_the_columns_in_order() -> None:
    """docs/compare.md's row list is what a makespan-only sweep writes, `planner_version`
    included (before: the list had no `planner_version`, and said nothing of where
    `objective` and `microbatches` go)."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "compare.md").read_text(
        encoding="utf-8")
    listed = docs.split("One row per run,", 1)[1].split("order: `", 1)[1].split("`", 1)[0]
    names = [n.strip() for n in listed.split(",")]
    row = {"objective": "spec", "microbatches": "spec"}
    assert names == list(columns([row]))
    assert "`objective, microbatches` come after `devices`" in " ".join(docs.split())
