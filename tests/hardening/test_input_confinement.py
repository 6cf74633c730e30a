"""Imports stay inside the root, and no line of a file that is not a spec is ever shown.

Before: `import "../secret/.git-credentials"` printed the token in the error excerpt (so
did /etc/shadow, /proc/self/environ, .netrc and a `*.plan` symlink given to `check`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from planner.errors import SpecError
from planner.roots import default_root
from planner.spec.load import load_path

from .helpers import invoke

TOKEN = "ghp_SECRETTOKEN1234"
GOOD = "graph g {\n  op a { time 1 ms }\n}\n"


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    """A repository with a spec folder, and a secret outside it."""
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / ".git-credentials").write_text(f"https://me:{TOKEN}@github.com\n")
    (tmp_path / "secret" / ".netrc").write_text(f"machine github.com login me password {TOKEN}\n")
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "specs").mkdir()
    return root


def _all_output(args: list[str], cwd: Path) -> tuple[int, str]:
    code, out, err = invoke(args, cwd)
    code_json, out_json, _ = invoke([*args, "--json"], cwd)
    assert code == code_json
    return code, out + err + out_json


@pytest.mark.parametrize("target", ["../../secret/.git-credentials", "../../secret/.netrc",
                                    "/etc/passwd", "/proc/self/environ"])
def test_an_import_out_of_the_root_is_refused_unread(repo: Path, target: str) -> None:
    (repo / "specs" / "a.plan").write_text(f'import "{target}"\n' + GOOD)
    code, text = _all_output(["check", "a.plan"], repo / "specs")
    assert code == 1 and "E008" in text and "leads outside the root" in text
    assert TOKEN not in text and "root:" not in text and "PATH=" not in text


def test_a_symlinked_spec_that_leads_out_is_refused(repo: Path) -> None:
    os.symlink(repo.parent / "secret" / ".git-credentials", repo / "specs" / "link.plan")
    (repo / "specs" / "ok.plan").write_text(GOOD)
    code, text = _all_output(["check", "."], repo / "specs")
    assert code == 1 and "E008" in text and TOKEN not in text


def test_a_file_inside_the_root_that_is_no_spec_is_named_not_shown(repo: Path) -> None:
    (repo / ".git" / "config").write_text(f"[remote]\n url = https://me:{TOKEN}@x\n")
    (repo / "specs" / ".netrc").write_text(f"machine github.com password {TOKEN}\n")
    (repo / "specs" / "a.plan").write_text('import "../.git/config"\nimport ".netrc"\n' + GOOD)
    code, text = _all_output(["check", "a.plan"], repo / "specs")
    assert code == 1 and text.count("E010") == 4  # two files, shown twice (text, JSON)
    assert "is not a planner spec (its content is not shown)" in text
    assert TOKEN not in text and "machine" not in text and "remote" not in text


def test_a_wider_root_lets_the_import_in_but_still_shows_nothing(repo: Path) -> None:
    (repo / "specs" / "a.plan").write_text('import "../../secret/.git-credentials"\n')
    code, text = _all_output(["check", "a.plan", "--root", str(repo.parent)], repo / "specs")
    assert code == 1 and "E010" in text and "E008" not in text and TOKEN not in text


def test_a_placement_file_that_is_no_placement_is_not_shown(repo: Path) -> None:
    (repo / "specs" / "s.plan").write_text(
        "cluster c { device d0 { memory 1 GiB } }\n" + GOOD + "plan p { graph g  cluster c }\n")
    (repo / "specs" / "creds.json").write_text(f'{{"token": "{TOKEN}"}}')
    code, text = _all_output(["simulate", "s.plan", "--placement", "creds.json"],
                             repo / "specs")
    assert code == 1 and "E501" in text and TOKEN not in text


def test_the_default_root_is_the_repository_else_the_folder(repo: Path, tmp_path: Path) -> None:
    (repo / "specs" / "a.plan").write_text(GOOD)
    assert default_root(repo / "specs" / "a.plan") == repo.resolve()
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "b.plan").write_text('import "../repo/specs/a.plan"\n')
    with pytest.raises(SpecError) as info:
        load_path(lone / "b.plan")
    assert [d.code for d in info.value.diagnostics] == ["E008"]
    assert "g" in load_path(lone / "b.plan", root=tmp_path).spec.graphs


def test_syntax_errors_after_the_first_header_still_show_their_line(tmp_path: Path) -> None:
    (tmp_path / "t.plan").write_text("graph g {\n  op a { time 1 ms }\n  op b { time 2 ms }\n"
                                     "  a -> $\n}\n")
    code, _, err = invoke(["check", "t.plan"], tmp_path)
    assert code == 1 and "E106" in err and "  a -> $" in err
    code, out, _ = invoke(["check", "t.plan", "--json"], tmp_path)
    assert json.loads(out)["diagnostics"][0]["line"] == 4


@pytest.mark.parametrize("text", ["cluster c {", "graph broken {\n", "plan p {  # todo"])
def test_a_file_that_ends_after_its_first_header_is_an_unclosed_block(tmp_path: Path,
                                                                      text: str) -> None:
    # the end of the file comes after the header; its caret points at the header's `{`,
    # which read as an error before it: E010 "not a planner spec (its content is not
    # shown)", above an excerpt of that content
    (tmp_path / "t.plan").write_text(text)
    code, _, err = invoke(["check", "t.plan"], tmp_path)
    assert code == 1 and "error[E102]: unexpected end of file" in err, err
    assert "E010" not in err and "= hint: missing `}` to close" in err


@pytest.mark.parametrize("header", ["graph g # the graph\n{", "graph # the graph\n  g {",
                                    '# a\ngraph "g"  # b\n# c\n{'])
def test_a_header_with_comments_is_a_spec(tmp_path: Path, header: str) -> None:
    # a comment may stand between any two tokens, in the first header too; before, a spec
    # with one there was "not a planner spec" (E010, "did you mean `graph`?") on a syntax
    # error, and its other diagnostics came without their line
    body = "\n  op a { time 1 ms junk }\n}\n"
    (tmp_path / "t.plan").write_text(header + body)
    code, _, err = invoke(["check", "t.plan"], tmp_path)
    line = header.count("\n") + 2
    assert code == 1 and f"t.plan:{line}:25: error[E101]" in err and "junk }" in err
    assert "E010" not in err
    (tmp_path / "t.plan").write_text(header + "\n  op a { time -1 ms }\n}\n")
    code, _, err = invoke(["check", "t.plan"], tmp_path)
    assert code == 1 and "time -1 ms" in err  # the caret line of a later diagnostic


def test_a_keyword_spelt_right_gets_no_did_you_mean(tmp_path: Path) -> None:
    (tmp_path / "t.plan").write_text("cluster {\n  device d0 { memory 1 GiB }\n}\n")
    code, _, err = invoke(["check", "t.plan"], tmp_path)
    assert code == 1 and "E010" in err and "did you mean" not in err
    (tmp_path / "t.plan").write_text("clustr c {\n}\n")
    assert "did you mean `cluster`?" in invoke(["check", "t.plan"], tmp_path)[2]
