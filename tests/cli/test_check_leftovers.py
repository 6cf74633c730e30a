"""`check`, `fmt` and `compare` diagnostics: paths that hold no spec, one proof per plan,
small sizes printed once, the names the user gave."""

from __future__ import annotations

import json
from pathlib import Path

from .helpers import GOOD, invoke, valid_sarif

#: op `a` (4 B of params) on one device of 3 B (`3.5 B` reads as 3 B), under two memory models
TWO_PLANS = """
cluster c { device d { memory 3.5 B  flops 1 TFLOPS } }
graph g { op a { time 1 ms  params 4 B } }
plan s { graph g  cluster c  memory static }
plan l { graph g  cluster c  memory liveness }
"""


def test_small_sizes_are_printed_once(tmp_path: Path) -> None:
    (tmp_path / "t.plan").write_text(TWO_PLANS)
    code, _, err = invoke(["check", "t.plan"], tmp_path)
    assert code == 1
    assert "needs at least 4 B but the largest device, `d`, holds 3 B" in err
    assert "(4 B)" not in err and "(3 B)" not in err


def test_a_folder_without_specs_beside_one_with_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "ok.plan").write_text(GOOD)
    (tmp_path / "emptydir").mkdir()
    for command in (["check"], ["fmt"], ["fmt", "--check"]):
        code, _, err = invoke([*command, "specs", "emptydir"], tmp_path)
        assert code == 0, err
        assert "warning[W006]: no .plan files found in `emptydir`" in err
        assert "hint: check the path, or leave it out" in err
    code, out, _ = invoke(["check", "--json", "specs", "emptydir"], tmp_path)
    doc = json.loads(out)
    assert (code, doc["warnings"], [d["code"] for d in doc["diagnostics"]]) == (0, 1, ["W006"])
    code, out, _ = invoke(["fmt", "--json", "specs", "emptydir"], tmp_path)
    assert (code, [d["code"] for d in json.loads(out)["diagnostics"]]) == (0, ["W006"])


def test_compare_says_what_check_says_of_paths_that_hold_no_spec(tmp_path: Path) -> None:
    """Before: `compare emptydir` was E619 "nothing to compare: no plan found in the named
    specs" (exit 2), where `check emptydir` says E006; a folder holding none beside one
    that does was not mentioned."""
    (tmp_path / "emptydir").mkdir()
    said = {c: invoke([c, "emptydir"], tmp_path)[::2] for c in ("check", "compare")}
    assert said["compare"] == said["check"] == (
        1, "error[E006]: no .plan files found in `emptydir`\n"
        "  = hint: give files or folders that contain *.plan files\n")
    code, out, _ = invoke(["compare", "--json", "emptydir"], tmp_path)
    assert (code, [d["code"] for d in json.loads(out)["diagnostics"]]) == (1, ["E006"])
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "ok.plan").write_text(GOOD)
    code, out, _ = invoke(["compare", "--json", "--algos", "single", "--jobs", "1", "specs",
                           "emptydir"], tmp_path)
    doc = json.loads(out)
    assert (code, [d["code"] for d in doc["diagnostics"]]) == (0, ["W006"])
    assert [r["spec"] for r in doc["result"]] == ["specs/ok.plan"]


def test_a_symlink_is_named_as_given(tmp_path: Path) -> None:
    (tmp_path / "target.plan").write_text("graph g { op a { tiem 1 ms } }\n")
    (tmp_path / "link.plan").symlink_to("target.plan")
    code, _, err = invoke(["check", "link.plan"], tmp_path)
    assert code == 1
    assert err.startswith("link.plan:1:18: error[E210]") and "target.plan" not in err
    code, out, err = invoke(["fmt", "link.plan"], tmp_path)
    assert (code, out, err) == (0, "reformatted link.plan\n", "")
    assert (tmp_path / "link.plan").is_symlink()  # the target rewritten, the link kept
    assert (tmp_path / "target.plan").read_text() == "graph g {\n  op a { tiem 1 ms }\n}\n"


def test_sarif_of_standard_input_names_no_file_unless_given(tmp_path: Path) -> None:
    broken = b"graph g { op a { time 1 ms }\n"
    code, out, _ = invoke(["fmt", "--format", "sarif", "-"], tmp_path, stdin=broken)
    run = valid_sarif(out)["runs"][0]
    assert (code, run["results"], run["tool"]["driver"]["rules"]) == (1, [], [])
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert note["descriptor"] == {"id": "E102"}
    assert note["message"]["text"].startswith("<stdin>:1:28: unexpected end of file")
    assert "stdin" not in json.dumps(run["results"])  # was the artifact `stdin`
    code, out, _ = invoke(["fmt", "--format", "sarif", "--stdin-filename", "specs/x.plan", "-"],
                          tmp_path, stdin=broken)
    (result,) = valid_sarif(out)["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(
        "specs/x.plan")


def test_each_plan_keeps_its_own_explanation(tmp_path: Path) -> None:
    """Both plans fail E301 at op `a` with one message: it was printed once, with the
    static hint only, naming no plan."""
    (tmp_path / "t.plan").write_text(TWO_PLANS)
    code, out, _ = invoke(["check", "--json", "t.plan"], tmp_path)
    e301 = [d for d in json.loads(out)["diagnostics"] if d["code"] == "E301"]
    assert code == 1 and [d["message"][-10:] for d in e301] == ["(plan `s`)", "(plan `l`)"]
    assert [d["hints"][0].split(":")[0] for d in e301] == [
        "memory model `static`", "memory model `liveness`"]
    # plans that fail alike with the same explanation: one diagnostic naming them all
    same = TWO_PLANS + "".join(f"plan p{i} {{ graph g  cluster c }}\n" for i in range(4))
    (tmp_path / "t.plan").write_text(same)
    code, out, _ = invoke(["check", "--json", "t.plan"], tmp_path)
    e301 = [d["message"] for d in json.loads(out)["diagnostics"] if d["code"] == "E301"]
    assert e301[0].endswith("(plans `s`, `p0`, `p1` and 2 more)") and len(e301) == 2


def test_a_file_named_twice_through_a_link_is_reported_once(tmp_path: Path) -> None:
    # was the same E210 twice, under link.plan and under target.plan (a.plan's import)
    (tmp_path / "target.plan").write_text("graph g { op a { tiem 1 ms } }\n")
    (tmp_path / "link.plan").symlink_to("target.plan")
    (tmp_path / "a.plan").write_text('import "target.plan"\n')
    code, _, err = invoke(["check", "link.plan", "a.plan"], tmp_path)
    assert (code, err.count("error[E210]")) == (1, 1), err
    assert err.startswith("link.plan:1:18: error[E210]") and "target.plan" not in err
    assert "checked 2 file(s) (link.plan, a.plan): 1 error(s)" in err
    code, out, _ = invoke(["check", "--json", "a.plan", "link.plan"], tmp_path)
    doc = json.loads(out)
    assert (code, doc["errors"], [d["file"] for d in doc["diagnostics"]]) == (
        1, 1, ["target.plan"])
