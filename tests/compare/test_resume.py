"""`--resume FILE` reuses a row only when it was computed from the spec's current content.

Before: a row was matched by the spec's name as given (relative to the working directory):
an edited spec (or an edited file it imports) got its old rows back as current results, the
same spec named from another folder ran again, and another file under the same relative name
got the first file's rows."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from planner.cli.compare import compare_command
from planner.compare import plan_sweep, read_rows, run_sweep
from planner.spec.load import load_path

from .helpers import FIXTURES

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
app.command("compare")(compare_command)


@app.command("version")
def _version() -> None:
    """A second command, so `compare` is a sub-command as in the real CLI."""


runner = CliRunner()
ALGOS = "msct,heft"
EMBED = "embed { time 0.2 ms"


def _project(folder: Path) -> Path:
    """chain.plan and the cluster it imports, copied into `folder`."""
    folder.mkdir(parents=True)
    shutil.copy(FIXTURES / "chain.plan", folder / "chain.plan")
    shutil.copytree(FIXTURES / "clusters", folder / "clusters")
    return folder / "chain.plan"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def drop_column(log: Path, column: str) -> None:
    """Rewrite the CSV file `log` without `column` (as a file written before it existed)."""
    with log.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    fields = [k for k in rows[0] if k != column]
    with log.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fields, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def _figures(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((r["spec"], r["algorithm"], r["status"], r["makespan_s"],
                   r["memory_cap_bytes"]) for r in rows)


def _sweep(spec: str | Path, log: Path) -> Any:
    return run_sweep(plan_sweep([spec], ALGOS), executor="inline", resume=log)


def _fresh(spec: str | Path) -> list[tuple[Any, ...]]:
    return _figures(run_sweep(plan_sweep([spec], ALGOS), executor="inline").rows)


def _compare(*args: str) -> Any:
    result = runner.invoke(app, ["compare", *args, "--algos", ALGOS, "--executor", "inline",
                                 "--json"])
    assert result.exit_code == 0, result.output
    return result


def test_an_edited_spec_is_run_again_and_reported(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: `2 runs: 0 run now, 2 from the resume file` and the old 5.368 ms."""
    spec = _project(tmp_path / "a")
    monkeypatch.chdir(tmp_path / "a")
    log, out = tmp_path / "rows.csv", tmp_path / "out.csv"
    first = _compare("chain.plan", "--resume", str(log))
    old = _figures(json.loads(first.stdout)["result"])
    _edit(spec, EMBED, "embed { time 20 ms")
    second = _compare("chain.plan", "--resume", str(log), "--out", str(out))
    assert "2 runs: 2 run now, 2 stale rows run again" in second.stderr
    new = _figures(json.loads(second.stdout)["result"])
    assert new == _fresh("chain.plan") != old
    # one row a point, the new one, in the resume file and in --out
    assert _figures(read_rows(log)) == _figures(read_rows(out)) == new


def test_an_edit_of_an_imported_file_is_run_again(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path / "a")
    monkeypatch.chdir(tmp_path / "a")
    log = tmp_path / "rows.jsonl"
    old = _figures(_sweep("chain.plan", log).rows)
    _edit(tmp_path / "a" / "clusters" / "quad.plan", "memory 128 MiB", "memory 100 MiB")
    again = _sweep("chain.plan", log)
    assert (again.ran, again.reused) == (2, 0)
    assert again.stale == 2
    assert _figures(again.rows) == _fresh("chain.plan") != old
    assert {r["memory_cap_bytes"] for r in again.rows} == {100 * 2**20}
    assert _figures(read_rows(log)) == _figures(again.rows)


def test_an_unchanged_spec_is_reused_with_its_digest(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _project(tmp_path / "a")
    monkeypatch.chdir(tmp_path / "a")
    log = tmp_path / "rows.csv"
    from planner.compare.resume import spec_digest  # here: the old code had none

    first = _sweep("chain.plan", log)
    digest = spec_digest(load_path(spec).sources)
    assert {r["spec_sha256"] for r in read_rows(log)} == {digest}
    again = _sweep("chain.plan", log)
    assert (again.ran, again.reused) == (0, 2)
    assert again.stale == 0
    assert _figures(again.rows) == _figures(first.rows)


def test_another_working_directory_finds_the_rows(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: `a/chain.plan` from the parent ran again (its rows were `chain.plan`'s)."""
    _project(tmp_path / "a")
    log = tmp_path / "rows.csv"
    monkeypatch.chdir(tmp_path / "a")
    first = _sweep("chain.plan", log)
    monkeypatch.chdir(tmp_path)
    again = _sweep("a/chain.plan", log)
    assert (again.ran, again.reused) == (0, 2)
    assert again.stale == 0
    assert {r["spec"] for r in again.rows} == {"a/chain.plan"}  # named as in this sweep
    assert [f[1:] for f in _figures(again.rows)] == [f[1:] for f in _figures(first.rows)]
    assert _figures(read_rows(log)) == _figures(again.rows)  # not both names


def test_another_file_under_the_same_name_is_not_reused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: b/chain.plan, run from b/, got a/chain.plan's rows (5.368 ms, not 25.17)."""
    _project(tmp_path / "a")
    _edit(_project(tmp_path / "b"), EMBED, "embed { time 20 ms")
    log = tmp_path / "rows.csv"
    monkeypatch.chdir(tmp_path / "a")
    first = _sweep("chain.plan", log)
    monkeypatch.chdir(tmp_path / "b")
    again = _sweep("chain.plan", log)
    assert (again.ran, again.reused) == (2, 0)
    assert _figures(again.rows) == _fresh("chain.plan") != _figures(first.rows)


def test_an_old_file_without_digests_is_run_again(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A file written before rows carried `spec_sha256`: its rows cannot be trusted, so
    their points run again (no traceback), and the file gets the column."""
    _project(tmp_path / "a")
    monkeypatch.chdir(tmp_path / "a")
    log = tmp_path / "rows.csv"
    _sweep("chain.plan", log)
    drop_column(log, "spec_sha256")
    result = _compare("chain.plan", "--resume", str(log))
    assert "2 runs: 2 run now, 2 stale rows run again" in result.stderr
    assert all(r["spec_sha256"] for r in read_rows(log)) and len(read_rows(log)) == 2
    again = _sweep("chain.plan", log)
    assert (again.ran, again.reused) == (0, 2)
    assert again.stale == 0


def test_of_two_rows_of_a_point_the_later_wins(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A file holding a stale row and its rerun (a sweep stopped before the rewrite)."""
    spec = _project(tmp_path / "a")
    monkeypatch.chdir(tmp_path / "a")
    log = tmp_path / "rows.jsonl"
    _sweep("chain.plan", log)
    stale = log.read_text(encoding="utf-8")
    _edit(spec, EMBED, "embed { time 20 ms")
    _sweep("chain.plan", log)
    log.write_text(stale + log.read_text(encoding="utf-8"), encoding="utf-8")
    again = _sweep("chain.plan", log)
    assert (again.ran, again.reused) == (0, 2)
    assert again.stale == 0
    assert _figures(again.rows) == _fresh("chain.plan")
    assert _figures(read_rows(log)) == _figures(again.rows)
