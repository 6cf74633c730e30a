"""Result rows: files (CSV, JSON, JSONL), ratios, wins, and the append-only resume log."""

from __future__ import annotations

import csv
import errno
import io
import json
import math
import os
import shutil
from pathlib import Path

import pytest
from cli.helpers import invoke

from planner.compare.resume import ResumeLog
from planner.compare.rows import (
    FIELD_NAMES,
    columns,
    empty_row,
    finalize,
    read_rows,
    wins,
    write_rows,
)
from planner.errors import OutputError, UsageError

from .helpers import FIXTURES


def _row(algo: str, makespan: float | None, status: str = "feasible", bw: str = "1x",
         **extra: object) -> dict[str, object]:
    return empty_row(spec="a.plan", plan="p", algorithm=algo, bandwidth=bw, memory="100%",
                     devices="all", time_limit_s=2.0, status=status, makespan_s=makespan,
                     feasible=status != "infeasible", n_ops=3, peak_memory_bytes=10,
                     **extra)


ROWS = [
    _row("heft", 2.0), _row("msct", 1.0), _row("mtopo", None, "infeasible", reason="too big"),
    _row("heft", 3.0, bw="2x"), _row("msct", 3.0, bw="2x"),
]


def test_finalize_sorts_and_fills_ratio_to_best_per_group() -> None:
    rows = finalize(ROWS)
    assert [(r["bandwidth"], r["algorithm"]) for r in rows] == [
        ("1x", "msct"), ("1x", "mtopo"), ("1x", "heft"), ("2x", "msct"), ("2x", "heft")]
    assert [r["ratio_to_best"] for r in rows] == [1.0, None, 2.0, 1.0, 1.0]
    assert ROWS[0]["ratio_to_best"] is None  # inputs are not changed


def test_a_plan_slower_than_a_best_of_zero_has_no_ratio_to_best() -> None:
    # ops of no time on one device take 0 s; spread over two, the copies between them take
    # time: that row's ×best was 1.000 (and its HTML row marked best) beside a win of 0
    rows = finalize([_row("heft", 0.0), _row("roundrobin", 1.05e-3)])
    assert [(r["algorithm"], r["ratio_to_best"]) for r in rows] == [
        ("heft", 1.0), ("roundrobin", None)]
    assert wins(rows)["roundrobin"]["wins"] == 0


def test_wins_count_ties_for_each_and_failures_separately() -> None:
    stats = wins(finalize(ROWS))
    assert stats["msct"] == {"wins": 2, "groups": 2, "ok": 2, "failed": 0}
    assert stats["heft"] == {"wins": 1, "groups": 2, "ok": 2, "failed": 0}
    assert stats["mtopo"] == {"wins": 0, "groups": 1, "ok": 0, "failed": 1}
    assert list(stats) == ["msct", "mtopo", "heft"]  # registry order


@pytest.mark.parametrize("suffix", [".csv", ".json", ".jsonl"])
def test_files_round_trip_with_types(tmp_path: Path, suffix: str) -> None:
    rows = finalize(ROWS)
    rows[0]["reason"] = 'a "quoted", multi\nline reason'
    path = tmp_path / f"rows{suffix}"
    write_rows(path, rows)
    back = read_rows(path)
    assert len(back) == len(rows)
    assert list(back[0]) == list(FIELD_NAMES)
    assert back[0]["makespan_s"] == 1.0 and isinstance(back[0]["makespan_s"], float)
    assert back[0]["n_ops"] == 3 and isinstance(back[0]["n_ops"], int)
    assert back[0]["feasible"] is True and back[1]["feasible"] is False
    assert back[1]["makespan_s"] is None and back[1]["reason"] == "too big"
    assert back[0]["reason"].startswith('a "quoted", multi')
    if suffix == ".csv":
        assert path.read_text().splitlines()[0] == ",".join(columns(rows))


def test_non_finite_values_become_empty(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    write_rows(path, [_row("msct", math.inf)])
    assert read_rows(path)[0]["makespan_s"] is None


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_resume_log_cuts_a_partial_last_line_and_appends(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"log{suffix}"
    log = ResumeLog(path)
    assert log.open() == []
    for r in ROWS[:3]:
        log.append(r)
    log.close()
    whole = path.read_bytes()
    path.write_bytes(whole[:-25])  # killed in the middle of writing the third row
    log = ResumeLog(path)
    assert [r["algorithm"] for r in log.open()] == ["heft", "msct"]
    log.append(ROWS[3])
    log.close()
    assert [(r["algorithm"], r["bandwidth"]) for r in read_rows(path)] == [
        ("heft", "1x"), ("msct", "1x"), ("heft", "2x")]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_resume_cuts_at_the_right_byte_after_an_invalid_one(tmp_path: Path, suffix: str) -> None:
    """A byte that is not UTF-8 in a row (U+FFFD once read: 3 bytes re-encoded) moved the
    cut 2 bytes late: the torn line's start stayed, and the next row joined it."""
    path = tmp_path / f"log{suffix}"
    log = ResumeLog(path)
    log.open()
    for r in ROWS[:3]:
        log.append(r)
    log.close()
    whole = path.read_bytes().replace(b"heft", b"h\xffft", 1)  # the first row's algorithm
    path.write_bytes(whole[:-25])  # and a torn last row
    log = ResumeLog(path)
    assert [r["algorithm"] for r in log.open()] == ["h\ufffdft", "msct"]
    log.append(ROWS[3])
    log.close()
    assert path.read_bytes().endswith(b"\n") and b"\xff" in path.read_bytes()
    assert [(r["algorithm"], r["bandwidth"]) for r in read_rows(path)] == [
        ("h\ufffdft", "1x"), ("msct", "1x"), ("heft", "2x")]


def test_resume_log_refuses_a_file_that_is_not_ours(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text("my notes\nmore notes\n")
    with pytest.raises(UsageError) as err:
        ResumeLog(path).open()
    assert err.value.diagnostics[0].code == "E615"
    assert path.read_text() == "my notes\nmore notes\n"  # untouched


@pytest.mark.parametrize(("name", "text"), [
    ("notes.jsonl", "my precious notes"), ("scores.csv", "name,score"),
    ("config.jsonl", '{"lr": 0.1}'), ("x.csv", "spec,status,extra")])
def test_resume_log_refuses_a_lone_line_that_is_not_ours(tmp_path: Path, name: str,
                                                         text: str) -> None:
    """A file of one line without a line break was taken for a row torn by a killed
    writer and cut to nothing: `--resume notes.jsonl` deleted the notes."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(UsageError) as err:
        ResumeLog(path).open()
    assert err.value.diagnostics[0].code == "E615"
    assert "line 1 of" in err.value.diagnostics[0].message
    assert path.read_text() == text  # untouched


@pytest.mark.parametrize(("name", "text"), [
    ("log.jsonl", '{"sp'), ("log.jsonl", '{"spec": "a.plan", "pl'),
    ("log.csv", "spec,plan,algo"), ("log.csv", "  ")])
def test_resume_log_cuts_a_first_row_or_header_torn_by_a_kill(tmp_path: Path, name: str,
                                                              text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    log = ResumeLog(path)
    assert log.open() == []
    log.append(ROWS[0])
    log.close()
    assert [r["algorithm"] for r in read_rows(path)] == ["heft"]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_row_the_disk_cannot_take_is_e623_and_cut_back_off(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    """A full disk while appending a row was an OSError (E999, "a bug in planner"), raised
    again by `close`, and left the torn row in the file."""
    path = tmp_path / f"log{suffix}"
    log = ResumeLog(path)
    log.open()
    log.append(ROWS[0])
    before = path.read_bytes()
    real = os.write

    def full(fd: int, data: bytes) -> int:  # half the row fits, then the disk is full
        if len(data) > 20:
            return real(fd, bytes(data)[:20])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OutputError) as err:
        log.append(ROWS[1])
    monkeypatch.undo()
    log.close()  # nothing left to write: no second error
    diag = err.value.diagnostics[0]
    assert diag.code == "E623" and err.value.exit_code == 4
    assert diag.message == (f"cannot append to `{path}`: the disk is full; it holds the 1 "
                            "row finished before")
    assert "run the same command again" in diag.hints[0]
    assert path.read_bytes() == before  # the torn row is cut back off
    assert [r["algorithm"] for r in ResumeLog(path).open()] == ["heft"]


def test_a_resume_file_the_disk_cannot_take_is_e623_not_an_internal_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(FIXTURES / "chain.plan", tmp_path / "chain.plan")
    shutil.copytree(FIXTURES / "clusters", tmp_path / "clusters")
    real, calls = os.fsync, []

    def full(fd: int) -> None:  # the first row is synced, the second finds the disk full
        calls.append(fd)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)

    monkeypatch.setattr(os, "fsync", full)
    code, _, err = invoke(["compare", "chain.plan", "--algos", "msct,heft", "--executor",
                           "inline", "--resume", "rows.jsonl"], tmp_path)
    assert code == 4, err
    assert "error[E623]: cannot append to `rows.jsonl`: the disk is full" in err
    assert "E999" not in err and "Traceback" not in err


def test_resume_to_a_json_array_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        ResumeLog(tmp_path / "rows.json")
    assert "--resume" in err.value.diagnostics[0].message


def _tampered(path: Path, line: int, column: str, value: object) -> None:
    """Write ROWS[:3] to `path` as the resume log does, then set `column` of data row
    `line` (1-based) to `value`: in CSV the cell's text, in JSONL the JSON value."""
    log = ResumeLog(path)
    log.open()
    for r in ROWS[:3]:
        log.append(r)
    log.close()
    lines = path.read_text().splitlines(keepends=True)
    if path.suffix == ".csv":
        at = lines[0].rstrip("\n").split(",").index(column)
        cells = next(csv.reader([lines[line]]))
        cells[at] = str(value)
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(cells)
        lines[line] = buf.getvalue()
    else:
        obj = json.loads(lines[line - 1])
        obj[column] = value
        lines[line - 1] = json.dumps(obj) + "\n"
    path.write_text("".join(lines))


# (suffix, column, value, what the message says), for a row in the middle of the file
_BAD_CELLS = [
    (".csv", "makespan_s", "fast", "text where a number is expected"),
    (".csv", "n_ops", "three", "text where a whole number is expected"),
    (".csv", "n_ops", "2.5", "a number that is not whole where a whole number is expected"),
    (".csv", "feasible", "maybe", "text where true or false is expected"),
    (".csv", "time_limit_s", "soon", "text where a number is expected"),
    (".jsonl", "makespan_s", "fast", "text where a number is expected"),
    (".jsonl", "time_limit_s", "soon", "text where a number is expected"),
    (".jsonl", "plan", 5, "a number where text is expected"),
    (".jsonl", "algorithm", 1.5, "a number where text is expected"),
    (".jsonl", "status", True, "true or false where text is expected"),
    (".jsonl", "n_ops", [3], "a list where a whole number is expected"),
    (".jsonl", "feasible", "maybe", "text where true or false is expected"),
    (".jsonl", "peak_memory_bytes", 10**400, "a number too large for a 64-bit float"),
    # the fields a resumed sweep matches and sorts by: before, E999 after the whole sweep
    (".jsonl", "spec", None, "missing, and every result row names it"),
    (".jsonl", "status", "", "missing, and every result row names it"),
    (".csv", "plan", "", "missing, and every result row names it"),
    (".jsonl", "devices", "three", "not a setting `compare` writes"),
    (".csv", "memory", "lots", "not a setting `compare` writes"),
]


@pytest.mark.parametrize(("suffix", "column", "value", "why"), _BAD_CELLS,
                         ids=[f"{s[1:]}-{c}-{n}" for n, (s, c, _, _) in enumerate(_BAD_CELLS)])
def test_resume_names_the_line_and_column_of_a_value_of_the_wrong_type(
        tmp_path: Path, suffix: str, column: str, value: object, why: str) -> None:
    # issue 40, finding 5: such a row was E999 (ValueError, or a TypeError comparing a
    # number with text when the sweep sorted its points)
    path = tmp_path / f"log{suffix}"
    _tampered(path, 2, column, value)
    before = path.read_bytes()
    with pytest.raises(UsageError) as err:
        ResumeLog(path).open()
    diag = err.value.diagnostics[0]
    line = 3 if suffix == ".csv" else 2  # the CSV header is line 1
    assert diag.code == "E615"
    assert diag.span is not None and (diag.span.file, diag.span.line) == (str(path), line)
    assert f"line {line} of {path}" in diag.message
    assert f"`{column}`" in diag.message and why in diag.message
    assert f"correct or delete line {line}" in diag.hints[0]
    assert path.read_bytes() == before  # not touched


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_resume_refuses_a_bad_value_in_the_last_line_too(tmp_path: Path, suffix: str) -> None:
    # a complete last line is not one a killed writer cut short: it is not dropped silently
    path = tmp_path / f"log{suffix}"
    _tampered(path, 3, "makespan_s", "fast")
    with pytest.raises(UsageError) as err:
        ResumeLog(path).open()
    assert "column `makespan_s`" in err.value.diagnostics[0].message


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_resume_reads_every_type_it_writes(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"log{suffix}"
    _tampered(path, 1, "reason", "-5")  # text that looks like a number stays text
    rows = ResumeLog(path).open()
    assert rows[0]["reason"] == "-5" and rows[0]["n_ops"] == 3
    assert rows[0]["feasible"] is True and rows[2]["feasible"] is False
