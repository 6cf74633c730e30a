"""`planner compare` through typer, registered the way `planner.cli` registers it."""

from __future__ import annotations

import json
import re
import shutil
import warnings
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from planner.cli.compare import compare_command
from planner.compare import FIELD_NAMES, plan_sweep, read_rows
from planner.compare.rows import PIPELINE_FIELDS, SETTING_DEFAULTS

from .helpers import FIXTURES, SPECS

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
app.command("compare")(compare_command)


@app.command("version")
def _version() -> None:
    """A second command, so `compare` is a sub-command as in the real CLI."""


runner = CliRunner()
ARGS = ["compare", *map(str, SPECS), "--algos", "msct,heft,single", "--bandwidth",
        "1GB/s,50GB/s", "--memory", "50%,100%", "--jobs", "2"]


def test_tables_summary_and_files(tmp_path: Path) -> None:
    out, html = tmp_path / "results.csv", tmp_path / "report.html"
    result = runner.invoke(app, [*ARGS, "--out", str(out), "--html", str(html)],
                           env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    text = result.stdout
    for spec, plan in (("fork.plan", "fork_on_quad"), ("chain.plan", "chain_on_quad")):
        for bw in ("1 GB/s", "50 GB/s"):
            for mem in ("50%", "100%"):
                assert f"{spec} · {plan} · bandwidth {bw} · memory {mem} · devices all" in text
    assert text.count("algorithm") >= 9  # 8 tables and the wins table
    assert "wins (shortest simulated makespan" in text
    assert "single: no single device holds all" in text  # reasons under the tables
    rows = read_rows(out)
    assert len(rows) == 2 * 2 * 2 * 3
    assert {r["status"] for r in rows} == {"feasible", "no_plan", "optimal"}  # single: E706
    assert all((r["status"] == "optimal") == (r["gap"] == 0) for r in rows
               if r["status"] in ("feasible", "optimal"))
    assert html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert f"wrote {out} (24 rows)" in result.stderr


@pytest.mark.parametrize(("option", "name", "why"), [
    ("--out", "rows.xlsx", "`.xlsx` is no rows format"),
    ("--out", "rows", "no suffix names its format"),
    ("--resume", "rows.txt", "`.txt` is no rows format"),
])
def test_a_rows_file_of_no_rows_format_is_refused_before_the_sweep(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str, name: str,
        why: str) -> None:
    """Before: `--out rows.xlsx` wrote JSON lines under a spreadsheet's name, after the
    whole sweep."""
    def no_sweep(*args: object, **kwargs: object) -> None:
        raise AssertionError("the sweep ran")

    monkeypatch.setattr("planner.compare.sweep.run_sweep", no_sweep)
    result = runner.invoke(app, [*ARGS, option, str(tmp_path / name)])
    assert result.exit_code == 2, result.output
    assert f"error[E614]: {option} {tmp_path / name}: {why}" in result.output
    assert ".csv, .json (one array) or .jsonl" in result.output
    assert not (tmp_path / name).exists()


def test_json_prints_only_rows_on_stdout() -> None:
    result = runner.invoke(app, [*ARGS, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)  # nothing else on stdout
    assert (doc["command"], doc["ok"], doc["exit_code"]) == ("compare", True, 0)
    rows = doc["result"]
    # a makespan-only sweep has the columns it had before `--objective` existed
    old = [k for k in FIELD_NAMES if k not in PIPELINE_FIELDS and k not in SETTING_DEFAULTS]
    assert len(rows) == 24 and all(list(r) == old for r in rows)
    best = [r for r in rows if r["ratio_to_best"] == 1.0]
    assert {(r["spec"], r["bandwidth"], r["memory"]) for r in best} == {
        (r["spec"], r["bandwidth"], r["memory"]) for r in rows if r["makespan_s"] is not None}


def test_resume_runs_nothing_twice(tmp_path: Path) -> None:
    log = tmp_path / "rows.jsonl"
    first = runner.invoke(app, [*ARGS, "--resume", str(log), "--json"])
    assert first.exit_code == 0, first.output
    assert "24 runs: 24 run now" in first.stderr
    second = runner.invoke(app, [*ARGS, "--algos", "msct,heft,single,mtopo", "--resume",
                                 str(log), "--json"])
    assert second.exit_code == 0, second.output
    assert "32 runs: 8 run now, 24 from the resume file" in second.stderr
    assert len(read_rows(log)) == 32


def test_no_spec_compares_every_plan_in_specs(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(FIXTURES, tmp_path / "specs")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["compare", "--algos", "heft", "--json", "--jobs", "1"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["result"]
    assert [(r["spec"], r["plan"]) for r in rows] == [
        ("specs/chain.plan", "chain_on_quad"), ("specs/fork.plan", "fork_on_quad")]


@pytest.mark.parametrize(("option", "value", "code"), [
    ("--bandwidth", "fast", "E611"), ("--memory", "-5%", "E611"), ("--devices", "0", "E611"),
    ("--algos", "msct,hfet", "E601"), ("--executor", "slurm", "E612"),
    ("--jobs", "0", "E620"), ("--time-limit", "-1", "E618"),
    # commas alone: before, an empty sweep reported as E619 "no plan found"
    ("--bandwidth", ",", "E611"), ("--memory", " , ", "E611"), ("--devices", ",,", "E611"),
    ("--objective", ",", "E611"), ("--microbatches", ",", "E611"),
])
def test_bad_option_values_are_usage_errors(option: str, value: str, code: str) -> None:
    result = runner.invoke(app, ["compare", str(SPECS[0]), option, value])
    assert result.exit_code == 2, result.output
    assert f"error[{code}]: {option}" in result.stderr and result.stdout == ""
    result = runner.invoke(app, ["compare", str(SPECS[0]), option, value, "--json"])
    doc = json.loads(result.stdout)
    assert (doc["command"], doc["ok"], doc["exit_code"], doc["result"]) == (
        "compare", False, 2, None)
    assert [d["code"] for d in doc["diagnostics"]] == [code]
    assert option in doc["diagnostics"][0]["message"]


def test_help_lists_the_options() -> None:
    result = runner.invoke(app, ["compare", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in ("--algos", "--plan", "--bandwidth", "--memory", "--devices", "--time-limit",
                   "--jobs", "--executor", "--out", "--html", "--json", "--resume",
                   "--objective", "--microbatches"):
        assert option in result.stdout


def test_time_limit_0_means_what_it_means_to_solve() -> None:
    """Before: `compare --time-limit 0` was E618 while `solve --time-limit 0` ran `auto`'s
    heuristics alone (and an exact solver's fallback); now compare runs the same."""
    from planner.cli import app as planner_app
    result = runner.invoke(app, ["compare", str(SPECS[0]), "--algos", "auto,cpsat",
                                 "--time-limit", "0", "--json", "--jobs", "1"])
    assert result.exit_code == 0, result.output
    rows = {r["algorithm"]: r for r in json.loads(result.stdout)["result"]}
    for algo in ("auto", "cpsat"):
        solved = runner.invoke(planner_app, ["solve", str(SPECS[0]), "--algo", algo,
                                             "--time-limit", "0", "--json"])
        assert solved.exit_code == 0, solved.output
        plan = json.loads(solved.stdout)["result"]
        assert rows[algo]["time_limit_s"] == 0.0
        assert (rows[algo]["status"], rows[algo]["makespan_s"]) == (
            plan["status"], plan["makespan_s"])
    assert rows["cpsat"]["status"] == "fallback"


@pytest.mark.parametrize(("specs", "objective", "code"), [
    ((), None, "W650"),  # specs/broken.plan, skipped
    ((SPECS[0],), "makespan,pipeline", "W625")])  # pipedp plans pipelines alone
def test_plan_sweep_warns_what_compare_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              specs: tuple[Path, ...], objective: str | None,
                                              code: str) -> None:
    """Before: `plan_sweep` kept them in `Sweep.warnings` alone, which no doc names: a spec
    skipped or an algorithm left out without a word. `compare` prints each once, as before."""
    shutil.copytree(FIXTURES, tmp_path / "specs")
    (tmp_path / "specs" / "broken.plan").write_text("plan p { graph nowhere }\n")
    monkeypatch.chdir(tmp_path)
    algos = "msct,pipedp" if objective else "msct"
    more = ["--objective", objective] if objective else []
    with warnings.catch_warnings(record=True) as during:  # none escapes the command
        warnings.simplefilter("always")
        result = runner.invoke(app, ["compare", *map(str, specs), "--algos", algos, *more,
                                     "--jobs", "1"])
    assert result.exit_code == 0, result.output
    printed = re.findall(r"warning\[(W\d+)\]", result.stderr)
    assert printed == [code] and during == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sweep = plan_sweep(list(specs), algos, objectives=objective)
    assert [w.message.code for w in caught] == printed  # type: ignore[union-attr]
    assert [d.code for d in sweep.warnings] == printed
    assert {w.filename for w in caught} == {__file__}


def test_compare_prints_each_specs_own_warnings_once(tmp_path: Path) -> None:
    """main: `compare` printed none of the warnings `check` and `solve` print for a spec
    (W266 here), so a user who ran only `compare` never saw them; now once per spec, not
    once per point, on stderr with the line they point at, and in `--json`'s diagnostics."""
    spec = tmp_path / "w.plan"
    spec.write_text(
        "cluster c {\n  device d[0..1] { memory 1 GB }\n"
        "  link d[0..1] <-> d[0..1] { bandwidth 100 GB/s }\n}\n"
        "graph g {\n  op a { time 4 ms; output 1 MB; temp 1.5 B }\n"
        "  op b { time 4 ms; output 1 MB }\n  a -> b\n}\nplan p { graph g; cluster c }\n")
    out = tmp_path / "rows.csv"
    result = runner.invoke(app, ["compare", str(spec), "--algos", "msct,heft", "--bandwidth",
                                 "1GB/s,10GB/s", "--jobs", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert re.findall(r"warning\[(W\d+)\]", result.stderr) == ["W266"]
    assert f"{spec}:6:39: warning[W266]: `temp` 1.5 B is not a whole number" in result.stderr
    assert "temp 1.5 B }" in result.stderr  # the line it points at, as `check` shows it
    assert "W266" not in result.stdout and len(read_rows(out)) == 4  # 2 algos x 2 points
    done = runner.invoke(app, ["compare", str(spec), "--algos", "msct,heft", "--bandwidth",
                               "1GB/s,10GB/s", "--jobs", "1", "--json"])
    document = json.loads(done.stdout)
    assert document["warnings"] == 1
    assert [d["code"] for d in document["diagnostics"]] == ["W266"]
    with warnings.catch_warnings(record=True) as caught:  # the Python API says it too
        warnings.simplefilter("always")
        plan_sweep([spec], "msct")
    assert [w.message.code for w in caught] == ["W266"]  # type: ignore[union-attr]
