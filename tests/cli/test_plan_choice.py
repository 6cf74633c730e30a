"""E602, a plan that cannot be chosen, points at the plans the spec declares: solve,
simulate, diff and compare give the same places (`Loaded.plan_places`), and so does
`export json`'s E925."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .helpers import invoke

CLUSTER = """
cluster c { device gpu[0..1] { memory 1 GiB } link gpu0 <-> gpu1 { bandwidth 1 GB/s } }
graph g { op a { time 1 ms  output 1 MiB } op b { time 2 ms } a -> b }
plan train { graph g  cluster c  place a, b on gpu0 }
"""
#: two plans, one imported: line 3 declares `serve`
SPEC = 'import "base.plan"\n\nplan serve { graph g  cluster c  place a, b on gpu1 }\n'


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "base.plan").write_text(CLUSTER)
    (tmp_path / "s.plan").write_text(SPEC)
    return tmp_path


def _e602(args: list[str], cwd: Path) -> dict:
    code, out, _ = invoke([*args, "--json"], cwd)
    assert code == 2
    (diag,) = json.loads(out)["diagnostics"]
    assert diag["code"] == "E602"
    return diag


def _places(diag: dict) -> list[tuple[str, str, int, int]]:
    return [(n["message"], n["file"], n["line"], n["column"]) for n in diag["notes"]]


@pytest.mark.parametrize("command", [["solve"], ["simulate"]])
def test_several_plans_point_at_the_first_and_note_the_others(folder: Path,
                                                                command: list[str]) -> None:
    diag = _e602([*command, "s.plan"], folder)
    assert "several plans" in diag["message"]
    # the imported file's plan comes first (imports are lowered first)
    assert (diag["file"], diag["line"], diag["column"]) == ("base.plan", 4, 6)
    assert (diag["end_line"], diag["end_column"]) == (4, 11)  # the name `train`
    assert _places(diag) == [("plan `serve` is declared here", "s.plan", 3, 6)]
    assert diag["hints"] == ["pick a plan with --plan NAME, e.g. `--plan train`"]


def test_an_unknown_name_is_the_command_lines_mistake_and_lists_where_plans_are(
        folder: Path) -> None:
    diag = _e602(["solve", "s.plan", "--plan", "serv"], folder)
    assert diag["file"] is None  # no line of the spec is wrong
    assert diag["message"] == "no plan named `serv`; the spec defines: train, serve"
    assert _places(diag) == [("plan `train` is declared here", "base.plan", 4, 6),
                             ("plan `serve` is declared here", "s.plan", 3, 6)]
    assert diag["hints"] == ["did you mean `serve`?"]
    far = _e602(["solve", "s.plan", "--plan", "zzzz"], folder)
    assert far["hints"] == ["pick a plan with --plan NAME, e.g. `--plan train`"]


def test_the_text_report_quotes_each_declaration(folder: Path) -> None:
    code, _, err = invoke(["solve", "s.plan"], folder)
    assert code == 2
    assert "base.plan:4:6: error[E602]: the spec defines several plans" in err
    assert "= note: plan `serve` is declared here at s.plan:3:6" in err
    assert " 3 | plan serve {" in err and "   |      ^^^^^" in err
    assert "1 | import" not in err  # not the file's first line, as before


def test_a_spec_without_plans_is_reported_at_its_start(folder: Path) -> None:
    (folder / "only.plan").write_text("cluster k { device d { memory 1 GiB } }\n")
    diag = _e602(["solve", "only.plan"], folder)
    assert (diag["message"], diag["file"], diag["line"]) == (
        "the spec defines no plan", "only.plan", 1)
    assert diag["hints"] == ["add a `plan NAME { graph G  cluster C }` block"]


def test_diff_and_compare_locate_the_same_plans(folder: Path) -> None:
    (folder / "p.json").write_text(json.dumps(
        {"format": "planner.plan", "version": 1, "placement": {"a": "gpu0", "b": "gpu0"}}))
    diag = _e602(["diff", "p.json", "p.json", "--spec", "s.plan", "--plan", "nope"], folder)
    assert diag["file"] is None and len(diag["notes"]) == 2
    assert _places(diag)[1][1:] == ("s.plan", 3, 6)
    code, out, _ = invoke(["compare", "s.plan", "--plan", "nope", "--algos", "msct",
                           "--json"], folder)
    assert code == 2
    (diag,) = json.loads(out)["diagnostics"]
    assert diag["message"] == "s.plan has no plan named `nope`; it defines: train, serve"
    assert _places(diag) == [("plan `train` is declared here", "base.plan", 4, 6),
                             ("plan `serve` is declared here", "s.plan", 3, 6)]


def test_export_json_places_its_plan_choice_too(folder: Path) -> None:
    code, out, err = invoke(["export", "json", "s.plan"], folder)
    assert code == 2 and out == ""
    assert "base.plan:4:6: error[E925]: the spec defines several plans or graphs" in err
    assert "= note: plan `serve` is declared here at s.plan:3:6" in err
    assert "= hint: --plan one of: train, serve; --graph one of: g" in err
    code, _, err = invoke(["export", "json", "s.plan", "--plan", "serv"], folder)
    assert code == 2 and "error[E925]: no plan named `serv`" in err
    assert err.count("is declared here") == 2 and "did you mean `serve`?" in err
    code, _, err = invoke(["export", "json", "s.plan", "--graph", "nope"], folder)
    assert code == 2 and "no graph named `nope`" in err and "declared here" not in err


def test_export_json_refuses_a_plan_and_a_graph_together(folder: Path) -> None:
    """`--plan serve --graph nope` exported plan `serve`, the graph ignored (even one that is
    not there): now E925, whichever the spec holds."""
    for graph in ("nope", "g"):
        code, out, err = invoke(["export", "json", "s.plan", "--plan", "serve", "--graph",
                                 graph], folder)
        assert code == 2 and out == ""
        assert (f"error[E925]: both a plan (`serve`) and a graph (`{graph}`) are chosen; "
                "choose one") in err and "= hint: --plan exports a plan" in err


def test_simulate_runs_the_plan_its_placement_file_names(folder: Path) -> None:
    """Before: E602 (which plan?) for `simulate s.plan --placement serve.json`, though the
    file names its plan, as `diff` reads it; a `--plan` it contradicts is still E516."""
    code, _, err = invoke(["solve", "s.plan", "--plan", "serve", "--algo", "single",
                           "--out", "serve.json"], folder)
    assert code == 0, err
    for placement in ("serve.json", "solved.json"):
        if placement == "solved.json":  # a `solve --json` report names its plan too
            code, out, err = invoke(["solve", "s.plan", "--plan", "serve", "--algo",
                                     "single", "--json"], folder)
            assert code == 0, err
            (folder / placement).write_text(out)
        code, out, err = invoke(["simulate", "s.plan", "--placement", placement, "--json"],
                                folder)
        assert code == 0, err
        assert json.loads(out)["result"]["plan"] == "serve"
    code, _, err = invoke(["simulate", "s.plan", "--plan", "train", "--placement",
                           "serve.json"], folder)
    assert code == 1 and "error[E516]: the placement file was made for plan `serve` of " \
        "the spec, not for plan `train`" in err and "pass --plan serve" in err
    # a file naming no plan of the spec leaves the choice to --plan, as before
    (folder / "bare.json").write_text(json.dumps({"placement": {"a": "gpu0", "b": "gpu0"}}))
    assert "several plans" in _e602(["simulate", "s.plan", "--placement", "bare.json"],
                                    folder)["message"]


PIPE = """
cluster c { device gpu[0..1] { memory 1 GiB } link gpu0 <-> gpu1 { bandwidth 1 GB/s } }
graph g { op a { time 1 ms  output 1 MiB } op b { time 2 ms } a -> b }
plan flat { graph g  cluster c }
plan piped { graph g  cluster c  objective pipeline  microbatches 4 }
"""


def test_simulate_runs_the_plan_its_stages_file_names(tmp_path: Path) -> None:
    """Before: E602 (which plan?) for `simulate s.plan --stages solved.json`, though the
    `solve --json` report it reads names its plan, as a `--placement` file's does."""
    (tmp_path / "s.plan").write_text(PIPE)
    code, out, err = invoke(["solve", "s.plan", "--plan", "piped", "--algo", "pipedp",
                             "--json"], tmp_path)
    assert code == 0, err
    (tmp_path / "solved.json").write_text(out)
    code, out, err = invoke(["simulate", "s.plan", "--stages", "solved.json", "--json"],
                            tmp_path)
    assert code == 0, err
    result = json.loads(out)["result"]
    assert result["plan"] == "piped" and result["pipeline"]["iteration_s"] > 0
    # a bare list of stages names no plan: the choice is --plan's, as before
    (tmp_path / "bare.json").write_text(json.dumps([{"ops": ["a", "b"], "devices": ["gpu0"]}]))
    assert "several plans" in _e602(["simulate", "s.plan", "--stages", "bare.json"],
                                    tmp_path)["message"]


def test_simulate_reads_the_file_that_names_its_plan_once(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: `simulate s.plan --placement serve.json` (no --plan) read and parsed the
    file twice: once for the plan it names (`given.plan_named`), once for its plan. So did
    `--stages`."""
    from planner.spec import load

    code, _, err = invoke(["solve", "s.plan", "--plan", "serve", "--algo", "single",
                           "--out", "serve.json"], folder)
    assert code == 0, err
    (folder / "p.plan").write_text(PIPE)
    (folder / "stages.json").write_text(json.dumps(
        {"plan": "piped", "stages": [{"ops": ["a", "b"], "devices": ["gpu1"]}]}))
    real, reads = load.read_source, []

    def counted(path: Path, shown: str, at: object = None, **kinds: str) -> str:
        reads.append(Path(path).name)
        return real(path, shown, at, **kinds)  # type: ignore[arg-type]

    monkeypatch.setattr(load, "read_source", counted)
    for spec, option, file, plan in (("s.plan", "--placement", "serve.json", "serve"),
                                     ("p.plan", "--stages", "stages.json", "piped")):
        reads.clear()
        code, out, err = invoke(["simulate", spec, option, file, "--json"], folder)
        assert code == 0 and json.loads(out)["result"]["plan"] == plan, (out, err)
        assert reads.count(file) == 1, reads

_STAGES_EXAMPLE = ('[{"ops": ["embed", "block0"], "devices": ["gpu0", "gpu1"]}, '
                   '{"ops": ["block1", "head"], "devices": ["gpu2"]}]')


@pytest.mark.parametrize("plans", ["one", "several"])
def test_a_stages_file_of_invalid_json_gets_its_own_hint(tmp_path: Path, plans: str) -> None:
    """Before: with several plans (no --plan), `simulate --stages bad.json` read the file for
    the plan it names as a placement file, so its E500 hint said to write it again with
    `planner solve SPEC --out FILE` (a placement file); with one plan, the stages hint."""
    spec = PIPE if plans == "several" else PIPE.replace("plan flat { graph g  cluster c }\n", "")
    (tmp_path / "s.plan").write_text(spec)
    (tmp_path / "bad.json").write_text('[{"ops": ["a", "b"], "devices": ["gpu0"]},')
    code, out, _ = invoke(["simulate", "s.plan", "--stages", "bad.json", "--json"], tmp_path)
    assert code == 1
    (diag,) = json.loads(out)["diagnostics"]
    assert diag["code"] == "E500" and diag["message"] == "invalid JSON: Expecting value"
    assert (diag["line"], diag["column"]) == (1, 43)  # at the end, after the comma
    assert diag["hints"] == [f"a stages file is JSON, for example {_STAGES_EXAMPLE}"]


def test_export_json_of_a_spec_with_nothing_to_export_says_so(tmp_path: Path) -> None:
    """A cluster-only spec said "the spec defines several plans or graphs; choose one" with
    the hint "--plan one of: none; --graph one of: none"."""
    (tmp_path / "c.plan").write_text("cluster c { device gpu0 { memory 1 GB } }\n")
    code, out, err = invoke(["export", "json", "c.plan"], tmp_path)
    assert code == 2 and out == ""
    assert "error[E925]: the spec defines no plan and no graph: nothing to export" in err
    assert "several" not in err and "one of: none" not in err
    code, _, err = invoke(["export", "json", "c.plan", "--graph", "g"], tmp_path)
    assert code == 2 and "no graph named `g`" in err and "the spec defines: no graph" in err
