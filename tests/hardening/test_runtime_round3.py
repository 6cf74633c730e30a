"""Runtime hardening, round 3 (issue 29): numeric options out of range, stdout that cannot
be written, `--limit` values its own hints suggest, and `compare` stopped by Ctrl-C.

Before: `solve --seed 2147483648` (`auto`, `cpsat`) was E999 (OR-Tools' seed is a 32-bit
integer) and `compare --jobs 99999999999999999999` too (the pool's semaphore);
`compare --time-limit 1e10` was E999 (`OverflowError: timestamp out of range`) and
`solve --time-limit 1e10` was accepted; `solve --json > /dev/full` (and `simulate --json`)
printed a traceback and exited 1, and `solve`, `export json`, `fmt -` exited 4 with E999;
`--limit ops=1e30` said "a whole number of at least 1", and E246's hint suggested
`--limit devices=100000000000000000000`, which `--limit` refused; `compare`'s
"interrupted: nothing was saved" carried no code.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from planner import limits
from planner.compare import sweep

from .runtime_support import SMALL, invoke, planner_argv

#: a seed one past the range every solver takes (CP-SAT's `random_seed` is an int32)
SEED_PAST = str(2**31)


@pytest.fixture()
def spec_dir(tmp_path: Path) -> Path:
    (tmp_path / "s.plan").write_text(SMALL)
    return tmp_path


# -- 13: seeds (and --jobs) --------------------------------------------------------------


@pytest.mark.parametrize("seed", [SEED_PAST, "-1", "99999999999999999999"])
@pytest.mark.parametrize("algo", ["auto", "cpsat"])
def test_a_seed_out_of_the_solvers_range_is_a_usage_error_naming_it(
        spec_dir: Path, algo: str, seed: str) -> None:
    code, out, err = invoke(["solve", "s.plan", "--algo", algo, "--seed", seed], spec_dir)
    assert code == 2, err
    assert "0<=x<=2147483647" in err and "E999" not in err and "Traceback" not in err
    code, out, _ = invoke(["solve", "s.plan", "--algo", algo, "--seed", seed, "--json"],
                          spec_dir)
    doc = json.loads(out)
    assert code == 2 and doc["exit_code"] == 2
    assert [d["code"] for d in doc["diagnostics"]] == ["E606"]
    assert "0<=x<=2147483647" in doc["diagnostics"][0]["message"]


def test_the_largest_seed_reaches_the_solver_as_it_is(spec_dir: Path) -> None:
    code, _, err = invoke(["solve", "s.plan", "--algo", "cpsat", "--seed", str(2**31 - 1)],
                          spec_dir)
    assert code == 0, err


def test_more_jobs_than_points_are_as_many_workers_as_points(spec_dir: Path) -> None:
    code, _, err = invoke(["compare", "s.plan", "--algos", "heft", "--jobs",
                           "99999999999999999999"], spec_dir)
    assert code == 0, err
    assert "E999" not in err and "1 runs: 1 run now" in err


# -- 14: time limits ---------------------------------------------------------------------


BAD_LIMITS = ["1e10", "1000001", "nan", "inf", "-inf", "-1"]


@pytest.mark.parametrize("value", BAD_LIMITS)
@pytest.mark.parametrize("algo", ["auto", "cpsat", "ilp", "search"])
def test_a_solve_time_limit_out_of_range_is_e603_naming_the_range(
        spec_dir: Path, algo: str, value: str) -> None:
    code, _, err = invoke(["solve", "s.plan", "--algo", algo, "--time-limit", value],
                          spec_dir)
    assert code == 2, err
    assert "error[E603]" in err and "from 0 to 1000000" in err and "Traceback" not in err


@pytest.mark.parametrize("value", BAD_LIMITS)
def test_a_compare_time_limit_out_of_range_is_e618_naming_the_range(
        spec_dir: Path, value: str) -> None:
    # the range is solve's (0 included: `tests/compare/test_cli.py`)
    code, _, err = invoke(["compare", "s.plan", "--algos", "cpsat", "--time-limit", value],
                          spec_dir)
    assert code == 2, err
    assert "error[E618]" in err and "from 0 to 1000000" in err and "Traceback" not in err


def test_the_largest_time_limit_is_accepted(spec_dir: Path) -> None:
    code, _, err = invoke(["solve", "s.plan", "--algo", "cpsat", "--time-limit", "1e6"],
                          spec_dir)
    assert code == 0, err
    code, _, err = invoke(["compare", "s.plan", "--algos", "heft", "--executor", "inline",
                           "--time-limit", "1e6"], spec_dir)
    assert code == 0, err


# -- 15: stdout that cannot be written ---------------------------------------------------


#: commands that write to stdout: tables, JSON envelopes, a parser error's envelope,
#: a filter, plain text, and the root's own `--version`
STDOUT_WRITERS = [
    ["solve", "s.plan", "--algo", "heft", "--json"],
    ["simulate", "s.plan", "--json"],
    ["solve", "s.plan", "--algo", "heft"],
    ["export", "json", "s.plan"],
    ["fmt", "-"],
    ["check", "--json", "--no-such-option"],
    ["explain", "E623"],
    ["--version"],
]
_IDS = [" ".join(a) for a in STDOUT_WRITERS]


def _run(args: list[str], cwd: Path, stdout: int,
         preexec_fn: Callable[[], object] | None = None) -> subprocess.CompletedProcess[str]:
    """`planner ARGS` with `s.plan` on its stdin (for `fmt -`) and `stdout` as its stdout."""
    with open(cwd / "s.plan", encoding="utf-8") as stdin:
        return subprocess.run(planner_argv(*args), cwd=cwd, stdin=stdin, stdout=stdout,
                              stderr=subprocess.PIPE, text=True, timeout=120, check=False,
                              preexec_fn=preexec_fn)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("args", STDOUT_WRITERS, ids=_IDS)
def test_a_full_stdout_is_e623_exit_4_without_a_traceback(spec_dir: Path,
                                                          args: list[str]) -> None:
    with open("/dev/full", "w", encoding="utf-8") as full:
        proc = _run(args, spec_dir, full.fileno())
    assert proc.returncode == 4, proc.stderr
    assert "error[E623]: cannot write to standard output: the disk is full" in proc.stderr
    assert "Traceback" not in proc.stderr and "E999" not in proc.stderr


@pytest.mark.parametrize("args", STDOUT_WRITERS, ids=_IDS)
def test_a_stdout_whose_reader_is_gone_is_a_quiet_exit_141(spec_dir: Path,
                                                            args: list[str]) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes anything
    try:
        proc = _run(args, spec_dir, write)
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (141, "")


@pytest.mark.parametrize(("args", "files"), [
    (["solve", "s.plan", "--algo", "heft", "--out", "p.json", "--html", "p.html", "--trace",
      "t.json"], ("p.json", "p.html", "t.json")),
    (["compare", "s.plan", "--algos", "heft,msct", "--executor", "inline", "--out", "r.csv",
      "--html", "r.html"], ("r.csv", "r.html"))], ids=["solve", "compare"])
def test_a_reader_gone_still_gets_the_files_asked_for(spec_dir: Path, args: list[str],
                                                      files: tuple[str, ...]) -> None:
    """`compare ... --out r.csv | head -5` exited 141 with no r.csv and no r.html, the
    sweep lost; `solve ... --out --html --trace | true` wrote none of the three: the first
    failed write to stdout ended the command before them."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = _run(args, spec_dir, write)
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr.count("Traceback")) == (141, 0)
    for name in files:
        assert (spec_dir / name).stat().st_size > 0, name
    if "r.csv" in files:
        assert len((spec_dir / "r.csv").read_text().splitlines()) == 3  # header, 2 rows


@pytest.mark.parametrize("args", [["solve", "s.plan", "--algo", "heft", "--json"],
                                  ["explain", "E623"]], ids=["solve --json", "explain"])
def test_a_closed_stdout_is_e623_exit_4(spec_dir: Path, args: list[str]) -> None:
    proc = _run(args, spec_dir, subprocess.DEVNULL, preexec_fn=lambda: os.close(1))
    assert proc.returncode == 4, proc.stderr
    assert "error[E623]: cannot write to standard output: it is closed" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- 17: --limit values, and the values hints suggest ------------------------------------


@pytest.mark.parametrize("value", ["1e30", "1000000000000001", "0", "1.5", "nan", "x"])
def test_a_limit_out_of_range_says_the_range(spec_dir: Path, value: str) -> None:
    code, _, err = invoke(["check", "s.plan", "--limit", f"ops={value}"], spec_dir)
    assert code == 2, err
    assert "a whole number from 1 to 1_000_000_000_000_000 (1e15)" in err


@pytest.mark.parametrize("value", ["1e15", "1000000000000000", "1_000_000"])
def test_a_limit_up_to_1e15_is_accepted_in_either_form(spec_dir: Path, value: str) -> None:
    code, _, err = invoke(["check", "s.plan", "--limit", f"ops={value}"], spec_dir)
    assert code == 0, err


_SUGGESTED = re.compile(r"--limit ([a-z_]+=[^`\s]+)")


def _accepted(hint: str) -> None:
    """Every `--limit NAME=VALUE` that `hint` suggests is one `--limit` takes."""
    for item in _SUGGESTED.findall(hint):
        limits.parse_overrides([item])


#: the largest value `--limit` takes
MAX = 10**15


@pytest.mark.parametrize(("need", "suggest"), [
    (3, 4), (501, 1000), (MAX, 2 * MAX), (MAX + 1, None), (10**20, None)])
def test_a_limit_hint_suggests_only_values_limit_accepts(need: int,
                                                         suggest: int | None) -> None:
    assert limits.MAX_VALUE == MAX
    hint = limits.raise_hint("devices", need, suggest)
    _accepted(hint)
    if need > MAX:
        assert "takes at most 1_000_000_000_000_000" in hint and "=" not in hint
    else:
        assert f"--limit devices={min(max(need, suggest or 0), MAX)}`" in hint


@pytest.mark.parametrize("hi", ["99999999999999999999", "1000000000000000"])
def test_e246_suggests_no_devices_value_that_limit_refuses(spec_dir: Path, hi: str) -> None:
    (spec_dir / "big.plan").write_text(
        f"cluster c {{ device gpu[0..{hi}] {{ memory 1 GB }} }}\n")
    code, out, _ = invoke(["check", "big.plan", "--json"], spec_dir)
    doc = json.loads(out)
    assert code == 1
    found = [d for d in doc["diagnostics"] if d["code"] == "E246"]
    assert found, doc["diagnostics"]
    for d in found:
        for hint in d["hints"]:
            _accepted(hint)


# -- 18: compare stopped by Ctrl-C -------------------------------------------------------


def _stopped(*_: object, **__: object) -> object:
    raise KeyboardInterrupt


@pytest.mark.parametrize("resume", [False, True])
def test_compare_interrupted_is_e607_exit_130(spec_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                              resume: bool) -> None:
    monkeypatch.setattr(sweep, "run_sweep", _stopped)
    args = ["compare", "s.plan", "--algos", "heft"]
    args += ["--resume", "rows.jsonl"] if resume else []
    code, _, err = invoke(args, spec_dir)
    assert code == 130, err
    said = ("finished rows are in rows.jsonl" if resume
            else "nothing was saved; use --resume FILE to keep finished rows")
    assert f"error[E607]: interrupted: {said}" in err and "Traceback" not in err
    code, out, _ = invoke([*args, "--json"], spec_dir)
    doc = json.loads(out)
    assert code == 130 and doc["exit_code"] == 130
    assert [d["code"] for d in doc["diagnostics"]] == ["E607"]
