"""Command-line contracts checked before any work: output paths (E604), options that do
not apply to the chosen algorithm (E605) and unknown solver names (E820)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import planner.algorithms
import planner.compare.sweep
from planner.algorithms.exact import backends, solver_names
from planner.cli.applies import applicable_to

from .helpers import PLACED, invoke, missing_solver


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if an algorithm or a sweep starts."""

    def boom(*_: Any, **__: Any) -> Any:
        raise AssertionError("work started before the usage error")

    monkeypatch.setattr(planner.algorithms, "run", boom)
    monkeypatch.setattr(planner.compare.sweep, "run_sweep", boom)


@pytest.mark.parametrize(("args", "named", "why"), [
    (["solve", "s.plan", "--algo", "heft", "--out", "missing/p.json"], "--out `missing/p.json`",
     "folder `missing` does not exist"),
    (["solve", "s.plan", "--algo", "heft", "--html", "sub"], "--html `sub`", "it is a folder"),
    (["solve", "s.plan", "--algo", "cpsat", "--emit", "/dev/null"], "--emit `/dev/null`",
     "it is not a regular file"),
    (["solve", "s.plan", "--out", "s.plan/p.json"], "--out `s.plan/p.json`",
     "`s.plan` is not a folder"),
    (["compare", "s.plan", "--algos", "heft", "--out", "missing/rows.csv"],
     "--out `missing/rows.csv`", "folder `missing` does not exist"),
    (["compare", "s.plan", "--algos", "heft", "--html", "sub"], "--html `sub`",
     "it is a folder"),
    (["compare", "s.plan", "--algos", "heft", "--resume", "missing/r.jsonl"],
     "--resume `missing/r.jsonl`", "folder `missing` does not exist"),
    (["export", "json", "s.plan", "-o", "missing/g.json"], "-o/--output `missing/g.json`",
     "folder `missing` does not exist"),
    (["generate", "gnmt", "--layers", "1", "--seq", "2", "-o", "missing/g.plan"],
     "-o/--output `missing/g.plan`", "folder `missing` does not exist"),
    # before: the option parser's own "Error: Invalid value for '-o' / '--output': File
    # 'sub' is a directory.", with no code and no hint
    (["generate", "gnmt", "--layers", "1", "--seq", "2", "-o", "sub"], "-o/--output `sub`",
     "it is a folder"),
    (["generate", "transformer", "--layers", "1", "-o", "sub"], "-o/--output `sub`",
     "it is a folder"),
    (["import", "json", "s.plan", "-o", "sub"], "-o/--output `sub`", "it is a folder"),
])
def test_unwritable_output_is_a_usage_error_before_any_work(
        tmp_path: Path, no_work: None, args: list[str], named: str, why: str) -> None:
    (tmp_path / "s.plan").write_text(PLACED)
    (tmp_path / "sub").mkdir()
    code, out, err = invoke(args, tmp_path)
    assert code == 2, err
    assert f"error[E604]: {named}: {why}" in err and "  = hint: " in err
    assert out == "" and "E999" not in err
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize(("args", "said"), [
    (["solve", "s.plan", "--algo", "heft", "--out", "p.json", "--trace", "./p.json"],
     "--out and --trace name the same file `p.json`"),
    (["compare", "s.plan", "--algos", "heft", "--out", "x.json", "--html", "x.json"],
     "--out and --html name the same file `x.json`"),
])
def test_two_outputs_in_one_file_are_e640_before_any_work(
        tmp_path: Path, no_work: None, args: list[str], said: str) -> None:
    """Before: the second write replaced the first, silently (rows gone under the HTML)."""
    (tmp_path / "s.plan").write_text(PLACED)
    code, out, err = invoke(args, tmp_path)
    assert (code, out) == (2, "") and f"error[E640]: {said}" in err, err
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "p.json").exists()


@pytest.mark.parametrize(("args", "said"), [
    (["solve", "s.plan", "--algo", "heft", "--html", "s.plan"],
     "--html `s.plan` would overwrite the input SPEC `s.plan`"),
    (["solve", "s.plan", "--algo", "heft", "--out", "./s.plan"],
     "--out `s.plan` would overwrite the input SPEC `s.plan`"),
    (["solve", "s.plan", "--algo", "heft", "--out", "spec-link.plan"],
     "--out `spec-link.plan` would overwrite the input SPEC `s.plan`"),
    (["simulate", "s.plan", "--trace", "s.plan"],
     "--trace `s.plan` would overwrite the input SPEC `s.plan`"),
    (["simulate", "s.plan", "--placement", "in.json", "--trace", "in.json"],
     "--trace `in.json` would overwrite the input --placement `in.json`"),
    (["import", "json", "in.json", "-o", "in.json"],
     "-o/--output `in.json` would overwrite the input FILE `in.json`"),
    (["generate", "gnmt", "--layers", "1", "--seq", "2", "--cluster", "s.plan", "-o", "s.plan"],
     "-o/--output `s.plan` would overwrite the input --cluster `s.plan`"),
    (["export", "json", "s.plan", "-o", "s.plan"],
     "-o/--output `s.plan` would overwrite the input SPEC `s.plan`"),
    (["compare", "s.plan", "--algos", "heft", "--html", "s.plan"],
     "--html `s.plan` would overwrite the input SPEC `s.plan`"),
])
def test_an_output_onto_an_input_is_e640_before_any_work(
        tmp_path: Path, no_work: None, args: list[str], said: str) -> None:
    """Before: exit 0, and the spec (or the placement, the JSON imported) was replaced by
    the output (`solve s.plan --html s.plan` left an HTML page where the spec was)."""
    (tmp_path / "s.plan").write_text(PLACED)
    (tmp_path / "in.json").write_text('{"placement": {"a": "gpu0", "b": "gpu0"}}')
    (tmp_path / "spec-link.plan").symlink_to("s.plan")
    code, out, err = invoke(args, tmp_path)
    assert (code, out) == (2, "") and f"error[E640]: {said}" in err, err
    assert "  = hint: give " in err
    assert (tmp_path / "s.plan").read_text() == PLACED
    assert (tmp_path / "in.json").read_text().startswith('{"placement"')


@pytest.mark.parametrize("command", [["solve", "s.plan", "--algo", "heft", "--out"],
                                     ["simulate", "s.plan", "--trace"],
                                     ["export", "json", "s.plan", "-o/--output"],
                                     ["compare", "s.plan", "--algos", "heft", "--html"]])
def test_an_output_onto_a_file_the_spec_imports_is_e640_before_any_work(
        tmp_path: Path, no_work: None, command: list[str]) -> None:
    """Before: exit 0, and the cluster file the spec imports was replaced by the plan."""
    cluster = "cluster c { device gpu[0..1] { memory 1 GiB }  link gpu0 <-> gpu1 { " \
              "bandwidth 1 GB/s } }\n"
    (tmp_path / "cluster.plan").write_text(cluster)
    (tmp_path / "s.plan").write_text(
        'import "cluster.plan"\ngraph g { op a { time 1 ms } }\n'
        "plan p { graph g  cluster c  place a on gpu0 }\n")
    option = command[-1].split("/")[0]
    code, out, err = invoke([*command[:-1], option, "cluster.plan"], tmp_path)
    assert (code, out) == (2, ""), err
    assert (f"error[E640]: {command[-1]} `cluster.plan` would overwrite the input SPEC's "
            "import `cluster.plan`") in err
    assert (tmp_path / "cluster.plan").read_text() == cluster


@pytest.mark.parametrize(("args", "target", "said"), [
    (["compare", ".", "--html"], "s.plan", "SPEC `s.plan`"),
    (["compare", "--html"], "specs/s.plan", "SPEC `specs/s.plan`"),  # no SPEC: ./specs
    (["compare", ".", "--html"], "clusters/c.plan", "SPEC's import `clusters/c.plan`"),
    (["compare", ".", "--html"], "clusters/lib.plan", "SPEC `clusters/lib.plan`"),
    (["compare", ".", "--html"], "broken.plan", "SPEC `broken.plan`"),
])
def test_compare_keeps_the_specs_it_finds_in_folders_and_their_imports(
        tmp_path: Path, no_work: None, args: list[str], target: str, said: str) -> None:
    """Before: `planner compare . --html s.plan` ran the sweep and replaced the spec it had
    found in `.` with the HTML report (exit 0); so for a file such a spec imports, a
    cluster library or a spec that does not load, found there too."""
    folder = tmp_path / ("specs" if target.startswith("specs/") else "")
    (folder / "clusters").mkdir(parents=True)
    texts = {"clusters/c.plan": "cluster c { device gpu[0..1] { memory 1 GiB }  link gpu0 "
             "<-> gpu1 { bandwidth 1 GB/s } }\n",
             "clusters/lib.plan": "cluster d { device x { memory 1 GiB } }\n",
             "s.plan": 'import "clusters/c.plan"\ngraph g { op a { time 1 ms } }\n'
             "plan p { graph g  cluster c }\n", "broken.plan": "graph g {\n"}
    for name, text in texts.items():
        (folder / name).write_text(text)
    code, out, err = invoke([*args, target, "--algos", "heft"], tmp_path)
    assert (code, out) == (2, ""), err
    assert f"error[E640]: --html `{target}` would overwrite the input {said}" in err
    assert {n: (folder / n).read_text() for n in texts} == texts


@pytest.mark.parametrize("command", [["generate", "gnmt", "--layers", "2", "--seq", "2"],
                                     ["import", "json", "in.json"]])
def test_an_output_onto_a_file_a_cluster_file_imports_is_e640_before_any_work(
        tmp_path: Path, command: list[str]) -> None:
    """Before: `generate gnmt --cluster top.plan -o base.plan`, top.plan importing
    base.plan, replaced base.plan with the spec (exit 0), which then imported itself."""
    base = "cluster c { device gpu[0..1] { memory 1 GiB }  link gpu0 <-> gpu1 { " \
           "bandwidth 1 GB/s } }\n"
    (tmp_path / "base.plan").write_text(base)
    (tmp_path / "top.plan").write_text('import "base.plan"\n')
    (tmp_path / "in.json").write_text(json.dumps({
        "format": "planner-graph", "version": 1, "name": "g",
        "ops": [{"name": "a", "time_s": 0.001}], "edges": []}))
    code, out, err = invoke([*command, "--cluster", "top.plan", "-o", "base.plan"], tmp_path)
    assert (code, out) == (2, ""), err
    assert ("error[E640]: -o/--output `base.plan` would overwrite the input --cluster's "
            "import `base.plan`") in err
    assert (tmp_path / "base.plan").read_text() == base


def test_two_outputs_through_a_symlink_are_e640(tmp_path: Path, no_work: None) -> None:
    """Before: exit 0, and the trace replaced the plan through the link (the check keyed
    on the paths' text, the write followed the link)."""
    (tmp_path / "s.plan").write_text(PLACED)
    (tmp_path / "a.json").write_text("old\n")
    (tmp_path / "link.json").symlink_to("a.json")
    code, out, err = invoke(["solve", "s.plan", "--algo", "heft", "--out", "a.json",
                             "--trace", "link.json"], tmp_path)
    assert (code, out) == (2, ""), err
    assert "error[E640]: --out `a.json` and --trace `link.json` reach the same file" in err
    assert (tmp_path / "a.json").read_text() == "old\n"


@pytest.mark.parametrize("args", [
    ["solve", "s.plan", "--algo", "heft", "--out", "plans/"],
    ["solve", "s.plan", "--algo", "heft", "--html", "plans/"],
    ["solve", "s.plan", "--algo", "heft", "--trace", "plans/"],
    ["solve", "s.plan", "--algo", "ilp", "--emit", "plans/"],
    ["simulate", "s.plan", "--trace", "plans/"],
    ["compare", "s.plan", "--algos", "heft", "--out", "plans/"],
    ["compare", "s.plan", "--algos", "heft", "--html", "plans/"],
    ["compare", "s.plan", "--algos", "heft", "--resume", "plans/"],
    ["export", "json", "s.plan", "-o", "plans/"],
    ["generate", "gnmt", "--layers", "1", "--seq", "2", "-o", "plans/"],
    ["import", "json", "s.plan", "-o", "plans/"],
])
def test_an_output_ending_in_a_slash_names_a_folder_and_is_e604(
        tmp_path: Path, no_work: None, args: list[str]) -> None:
    """Before: the option parser dropped the `/` and the command wrote a file named
    `plans` (exit 0), where the user named a folder."""
    (tmp_path / "s.plan").write_text(PLACED)
    code, out, err = invoke(args, tmp_path)
    assert (code, out) == (2, ""), err
    option = args[-2] if args[-2] != "-o" else "-o/--output"
    assert (f"error[E604]: {option} `plans/`: it ends in `/`, so it names a folder, not a "
            "file") in err, err
    assert "= hint: give a file name, e.g. `plans/out`" in err
    assert not (tmp_path / "plans").exists()


def test_an_existing_folder_named_with_a_slash_is_a_folder(
        tmp_path: Path, no_work: None) -> None:
    (tmp_path / "s.plan").write_text(PLACED)
    (tmp_path / "plans").mkdir()
    code, _, err = invoke(["solve", "s.plan", "--algo", "heft", "--out", "plans/"], tmp_path)
    assert code == 2 and "error[E604]: --out `plans/`: it is a folder" in err, err


@pytest.mark.parametrize(("args", "named", "instead"), [
    (["solve", "s.plan", "--algo", "heft", "--trace", "-"], "--trace", "--json prints"),
    (["simulate", "s.plan", "--trace", "-"], "--trace", "--json prints"),
    (["generate", "gnmt", "--layers", "1", "--seq", "2", "-o", "-"], "-o/--output", None),
    (["export", "json", "s.plan", "-o", "-"], "-o/--output", "leave out -o"),
    (["compare", "s.plan", "--algos", "heft", "--out", "-"], "--out", "--json prints"),
])
def test_dash_as_an_output_is_e604_before_any_work(
        tmp_path: Path, no_work: None, args: list[str], named: str, instead: str | None
        ) -> None:
    """Before: a file named `-` was written (and replaced on the next run), exit 0;
    `compare --out -` alone refused it, as a file of no rows format (E614)."""
    (tmp_path / "s.plan").write_text(PLACED)
    code, out, err = invoke(args, tmp_path)
    assert (code, out) == (2, ""), err
    assert f"error[E604]: {named} `-`: `-` is not standard output here" in err, err
    hint = err.split("  = hint: ", 1)[1]
    assert hint.startswith("give a file path (`./-` for a file named `-`)")
    assert (instead in hint) if instead else ";" not in hint
    assert not (tmp_path / "-").exists()


def test_unwritable_output_under_json_is_an_envelope(tmp_path: Path, no_work: None) -> None:
    (tmp_path / "s.plan").write_text(PLACED)
    code, out, _ = invoke(["solve", "s.plan", "--json", "--out", "missing/p.json", "--html",
                           "missing/r.html"], tmp_path)
    doc = json.loads(out)
    assert code == 2 and doc["exit_code"] == 2
    assert [d["message"] for d in doc["diagnostics"]] == [
        "--out `missing/p.json`: folder `missing` does not exist",
        "--html `missing/r.html`: folder `missing` does not exist"]


def test_options_for_other_algorithms_are_named_with_where_they_apply(
        tmp_path: Path, no_work: None) -> None:
    (tmp_path / "s.plan").write_text(PLACED)
    code, out, err = invoke(["solve", "s.plan", "--algo", "heft", "--emit", "m.lp",
                             "--solver", "cbc", "--gap", "0.5"], tmp_path)
    assert code == 2 and out == ""
    assert "error[E605]: --gap, --solver and --emit do not apply to --algo heft" in err
    assert "= hint: --gap applies to: auto, pipeilp, cpsat, ilp" in err
    assert "= hint: --solver applies to: pipeilp, ilp" in err
    assert "= hint: --emit applies to: pipeilp, cpsat, ilp" in err
    assert not (tmp_path / "m.lp").exists()


@pytest.mark.parametrize(("algo", "args", "bad"), [
    ("cpsat", ["--solver", "highs"], "--solver"),  # the default value, given: still counts
    ("auto", ["--emit", "m.lp"], "--emit"),  # auto's CP-SAT phase does not emit
    ("mtopo", ["--time-limit", "5"], "--time-limit"),
])
def test_one_inapplicable_option(tmp_path: Path, no_work: None, algo: str, args: list[str],
                                 bad: str) -> None:
    (tmp_path / "s.plan").write_text(PLACED)
    code, _, err = invoke(["solve", "s.plan", "--algo", algo, *args], tmp_path)
    assert code == 2
    assert f"error[E605]: {bad} does not apply to --algo {algo}" in err


def test_applicable_options_pass_through(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    def fake_run(name: str, problem: Any, options: Any) -> Any:
        seen.append((name, options))
        return real_run("heft", problem)

    real_run = planner.algorithms.run
    monkeypatch.setattr(planner.algorithms, "run", fake_run)
    (tmp_path / "s.plan").write_text(PLACED)
    code, _, err = invoke(["solve", "s.plan", "--algo", "ilp", "--solver", "cbc", "--gap",
                           "0.5", "--time-limit", "7", "--emit", "m.lp"], tmp_path)
    assert code == 0, err
    (name, options), = seen
    assert (name, options.solver, options.gap, options.time_limit_s, options.emit) == (
        "ilp", "cbc", 0.5, 7.0, "m.lp")


def test_the_table_follows_the_registry_capabilities() -> None:
    assert applicable_to("--emit") == ["pipeilp", "cpsat", "ilp"]  # exact
    assert applicable_to("--solver") == ["pipeilp", "ilp"]  # needs an external solver
    assert applicable_to("--gap") == ["auto", "pipeilp", "cpsat", "ilp"]
    assert applicable_to("--time-limit") == [  # + anytime
        "auto", "search", "pipeilp", "cpsat", "ilp"]


#: PLACED on devices of 20 MB: `expert` gives it as placed, and gpu0 holds 32 MB, over its
#: cap (exit 3, E401)
OVER_MEMORY = PLACED.replace("memory 64 MB", "memory 20 MB")


def test_an_infeasible_plan_leaves_out_as_it_was_and_the_reports_show_it(
        tmp_path: Path) -> None:
    """Before: exit 3 (E401) replaced `--out` with the infeasible plan, a normal-looking plan
    file that nothing marked (a script regenerating a committed plan replaced a good one).
    Now `--out` keeps its content and E401 says so; `--html` and `--trace`, reports of the
    plan, are written (the page says infeasible, with the violations), and `--json` gives the
    plan marked infeasible, which `simulate --placement` reads back to the same verdict."""
    (tmp_path / "s.plan").write_text(OVER_MEMORY)
    (tmp_path / "p.json").write_text("OLD\n")
    args = ["solve", "s.plan", "--algo", "expert", "--out", "p.json"]
    code, _, err = invoke([*args, "--html", "p.html", "--trace", "p.trace.json"], tmp_path)
    assert code == 3 and "error[E401]" in err, err
    assert (tmp_path / "p.json").read_text() == "OLD\n"
    assert "--out p.json was left as it was" in err
    assert "infeasible: 1 violation(s)" in (tmp_path / "p.html").read_text()
    assert json.loads((tmp_path / "p.trace.json").read_text())["traceEvents"]
    code, out, _ = invoke([*args, "--json"], tmp_path)
    doc = json.loads(out)
    assert code == 3 and doc["result"]["feasible"] is False and doc["result"]["violations"]
    assert "--out p.json was left as it was" in doc["diagnostics"][0]["hints"][0]
    assert (tmp_path / "p.json").read_text() == "OLD\n"
    (tmp_path / "doc.json").write_text(out)
    code, _, err = invoke(["simulate", "s.plan", "--placement", "doc.json"], tmp_path)
    assert code == 3 and "error[E401]" in err and "left as it was" not in err


@pytest.mark.parametrize(("name", "near"), [("nosuch", None), ("hihgs", "highs"),
                                            ("cbcc", "cbc"), ("asl:nosuch", None),
                                            ("highs:foo", None)])
def test_an_unknown_solver_is_a_usage_error_before_any_work(
        tmp_path: Path, no_work: None, name: str, near: str | None) -> None:
    """Before: a warning, the heuristics' plan as a `fallback` and exit 0, so a misspelt
    solver in CI gave another algorithm's plan."""
    (tmp_path / "s.plan").write_text(PLACED)
    for algo in ("ilp", "pipeilp"):
        code, out, err = invoke(["solve", "s.plan", "--algo", algo, "--solver", name,
                                 "--out", "p.json"], tmp_path)
        assert code == 2 and out == "", err
        assert f"error[E820]: --solver: `{name}` is not a solver planner knows" in err
        assert ("did you mean" in err) == (near is not None)
        if near:
            assert f"= hint: did you mean `{near}`?" in err
        assert not (tmp_path / "p.json").exists()


def test_a_known_solver_not_installed_still_falls_back(tmp_path: Path) -> None:
    """A Pyomo solver planner has no profile for, not installed here: the documented
    fallback (its reason; the plan is shown `optimal` here, as it meets its bound), not the
    unknown name's usage error."""
    (tmp_path / "s.plan").write_text(PLACED)
    code, out, err = invoke(["solve", "s.plan", "--algo", "ilp", "--solver", missing_solver(),
                             "--json"], tmp_path)
    assert code == 0, err
    result = json.loads(out)["result"]
    assert "is not available here" in result["reason"]


def test_asl_names_a_program_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pyomo runs `asl:NAME` as the program NAME. Before, `--solver asl:nosuch` warned
    "falling back to the msct plan: solver `asl:nosuch` is not available here", exit 0."""
    (tmp_path / "s.plan").write_text(PLACED)
    code, out, err = invoke(["solve", "s.plan", "--algo", "ilp", "--solver", "asl:nosuch"],
                            tmp_path)
    assert code == 2 and out == "", err
    assert ("(Pyomo runs `asl:NAME` as the program NAME, and there is no program `nosuch` on "
            "PATH)") in err
    assert "= hint: install the AMPL solver program `nosuch`, or put its folder on PATH" in err
    code, _, err = invoke(["solve", "s.plan", "--algo", "ilp", "--solver", "asl:"], tmp_path)
    assert code == 2 and "`asl:` names no program: give `asl:NAME`" in err
    program = tmp_path / "bin" / "fake-ampl-solver"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\nexit 1\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{program.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    code, out, err = invoke(["solve", "s.plan", "--algo", "ilp", "--solver",
                             "asl:fake-ampl-solver", "--time-limit", "0", "--json"], tmp_path)
    assert code == 0, err  # known (no solver runs at a zero limit)
    assert json.loads(out)["result"]["solver"] == "asl:fake-ampl-solver"


def test_name_colon_subsolver_is_known_for_asl_and_gams_alone(tmp_path: Path) -> None:
    """Pyomo passes `solver=X` to NAME for `NAME:X`. Before, `--solver highs:foo` was known
    by its first part and ran HiGHS without its profile's options (time limit, gap,
    threads), or fell back with exit 0. `gams:X` runs GAMS's solver X: known (X is GAMS's
    to check), falling back where GAMS is not installed."""
    (tmp_path / "s.plan").write_text(PLACED)
    code, _, err = invoke(["solve", "s.plan", "--algo", "ilp", "--solver", "highs:foo"],
                          tmp_path)
    assert code == 2 and "(Pyomo's `NAME:SUBSOLVER` form is for `asl:` and `gams:` alone; " \
        "planner gives `highs` its profile's options" in " ".join(err.split()), err
    assert "= hint: give `highs` alone" in err
    code, _, err = invoke(["solve", "s.plan", "--algo", "ilp", "--solver", "gams:"], tmp_path)
    assert code == 2 and "`gams:` names no GAMS solver: give `gams:NAME`" in err
    if solver_names.unusable("gams:cplex") is not None:  # GAMS is not installed here
        code, out, err = invoke(["solve", "s.plan", "--algo", "ilp", "--solver", "gams:cplex",
                                 "--json"], tmp_path)
        assert code == 0, err
        assert "is not available here" in json.loads(out)["result"]["reason"]


def test_solve_judges_the_solver_name_once(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, `solve --solver NAME` checked the name twice on the way to the ILP, by two
    rules: E820's (profiles, Pyomo's names, PATH) on the command line, then the back-ends'
    availability before and again inside the solve. Now one judgement gives the words of
    both E820 and the fallback."""
    name = missing_solver()
    looks: list[str] = []
    available = backends.available
    monkeypatch.setattr(backends, "available", lambda n: looks.append(n) or available(n))
    judged = getattr(solver_names, "_judged", None)  # judged before, by another test?
    if judged is not None:
        judged.cache_clear()
    (tmp_path / "s.plan").write_text(PLACED)
    code, out, err = invoke(["solve", "s.plan", "--algo", "ilp", "--solver", name, "--json"],
                            tmp_path)
    assert code == 0, err
    assert looks == [name]
    reason = json.loads(out)["result"]["reason"]
    assert reason == solver_names.judged(name).unusable and f"`{name}` is not available" in reason
