"""A comment that holds a control, bidi or zero-width character is W265 at that character,
once per line ("Trojan Source": such a character makes a line read differently in review
than the parser reads it); letters of any script and tabs stay quiet, a BOM is no comment,
and the same characters in a name stay E261 (issue 29, finding 8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import invoke

GOOD = "graph g {\n  op a { time 1 ms }\n}\n"


@pytest.mark.parametrize(("comment", "column", "what"), [
    ("# is admin \u202e nimda si", 12, "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
    ("# a\u200bb", 4, "U+200B (ZERO WIDTH SPACE)"),
    ("# red \x1b[31m text", 7, "U+001B"),
    ("# nul \x00 here \x00 twice", 7, "U+0000"),
    ("# \u2066isolate\u2069", 3, "U+2066 (LEFT-TO-RIGHT ISOLATE)"),
])
def test_a_hidden_character_in_a_comment_is_w265(tmp_path: Path, comment: str, column: int,
                                                 what: str) -> None:
    (tmp_path / "s.plan").write_text(f"{comment}\n{GOOD}", encoding="utf-8")
    code, out, err = invoke(["check", "s.plan"], tmp_path)
    text = out + err
    assert code == 0 and text.count("W265") == 1 and f"s.plan:1:{column}:" in text, text
    assert what in text and "\x1b" not in text and "\u202e" not in text


def test_plain_comments_names_and_a_bom_stay_quiet(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text("\ufeff# réseau, 层1, tab\there\n" + GOOD.replace(
        "1 ms }", "1 ms }  # trailing é"), encoding="utf-8")
    code, out, err = invoke(["check", "s.plan"], tmp_path)
    assert code == 0 and "W265" not in out + err, out + err
    (tmp_path / "s.plan").write_text('graph g {\n  op "a\u202eb" { time 1 ms }\n}\n',
                                     encoding="utf-8")
    code, out, err = invoke(["check", "s.plan"], tmp_path)
    assert code == 1 and "E261" in out + err and "W265" not in out + err, out + err


def test_a_hidden_character_is_w265_beside_a_syntax_error_too(tmp_path: Path) -> None:
    """Where the comment may be hiding the mistake, as here, it matters most (before: a file
    that did not parse said its E101 alone), in a file read and in text given to `loads`,
    an imported file's too."""
    import planner

    broken = ("cluster c { device d0 { memory 1 GiB } }\n"
              "graph g { op a { time 1 ms } # \u202e }\n op b { time 1 ms }\n}\n"
              "plan p { graph g cluster c pin a to }\n")
    (tmp_path / "s.plan").write_text(broken, encoding="utf-8")
    code, out, err = invoke(["check", "s.plan"], tmp_path)
    assert code == 1 and "s.plan:5:37: error[E101]" in err, err
    assert "s.plan:2:32: warning[W265]: a comment holds U+202E" in err, err
    with pytest.raises(planner.SpecError) as info:
        planner.loads(broken)
    assert [d.code for d in info.value.diagnostics] == ["E101", "W265"]
    (tmp_path / "main.plan").write_text('import "s.plan"\n', encoding="utf-8")
    with pytest.raises(planner.SpecError) as info:
        planner.load(tmp_path / "main.plan")
    assert [d.code for d in info.value.diagnostics] == ["E101", "W265"]


def test_a_hash_in_a_quoted_name_starts_no_comment(tmp_path: Path) -> None:
    """A form feed (whitespace) after `op "a#b"` was W265, "a comment holds U+000C", on a
    line with no comment (helper); after a real `#` it still is."""
    (tmp_path / "s.plan").write_text('graph g {\n  op "a#b" {\x0c time 1 ms }\n}\n',
                                     encoding="utf-8")
    code, out, err = invoke(["check", "s.plan"], tmp_path)
    assert code == 0 and "W265" not in out + err, out + err
    (tmp_path / "s.plan").write_text('graph g {\n  op "a#b" { time 1 ms }  # \x0c\n}\n',
                                     encoding="utf-8")
    code, out, err = invoke(["check", "s.plan"], tmp_path)
    assert code == 0 and "s.plan:2:29: warning[W265]" in err, err
