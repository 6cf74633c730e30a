"""Line ends and names: what a spec says is what the person reading it sees.

Before: with CR-only line ends a leading `#` comment swallowed the whole file and `check`
said ok; `gpu0` and `gрu0` (Cyrillic `р`) were two silent devices; a name with a newline
printed a fake "checked 1 file(s): ok" line; `op "\\ud800"` was a UnicodeEncodeError.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.errors import SpecError
from planner.spec.load import load_text
from planner.spec.parse import parse

from .helpers import invoke

SPEC = ("# a comment\ncluster c {\n  device gpu0 { memory 1 GiB }\n}\n"
        "graph g {\n  op a { time 1 ms }\n  a -> nope\n}\n")


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_every_line_end_ends_a_line_and_a_comment(end: str, tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_bytes(SPEC.replace("\n", end).encode())
    code, out, _ = invoke(["check", "s.plan", "--json"], tmp_path)
    (d,) = json.loads(out)["diagnostics"]
    assert code == 1 and (d["code"], d["line"], d["column"]) == ("E203", 7, 8)
    code, _, err = invoke(["check", "s.plan"], tmp_path)
    assert " 7 |   a -> nope" in err  # the excerpt is the same line


def test_spans_agree_across_line_ends() -> None:
    spans = {end: [(i.name.span.line, i.name.span.column)
                   for i in parse(SPEC.replace("\n", end), "s.plan").items]
             for end in ("\n", "\r\n", "\r")}
    assert spans["\n"] == spans["\r\n"] == spans["\r"] == [(2, 9), (5, 7)]


def _codes(text: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_text(text, "n.plan")
    return [d.code for d in info.value.diagnostics]


CLUSTER = "cluster c {{\n  device gpu0 {{ memory 1 GiB }}\n  device {} {{ memory 1 GiB }}\n}}\n"


@pytest.mark.parametrize("name, code", [
    ('"gрu7"', "E262"),              # Latin with a Cyrillic er
    ('"gрu0"', "E263"),              # the same, beside the `gpu0` it looks like: E263 alone
    ('"gpu\\u0030\\u200b"', "E261"),   # zero-width space
    ('"x\\u202eevil"', "E261"),       # right-to-left override
    ('"a\\nchecked 1 file(s): ok"', "E261"),
    ('"tab\\there"', "E261"),
    ('"\\ud800"', "E261"),            # a lone surrogate
    ('"a\\u00a0b"', "E261"),          # a no-break space
    ('"ｇｐｕ1"', "E264"),             # full-width: not NFKC
    ('""', "E261"),                  # empty: an empty CSV cell, a blank row (the fuzzer's)
])
def test_names_with_hidden_or_look_alike_characters_are_errors(name: str, code: str) -> None:
    assert code in _codes(CLUSTER.format(name))


def test_a_whole_name_of_look_alikes_is_an_error_next_to_its_twin() -> None:
    text = "cluster c {\n  device ор { memory 1 GiB }\n}\ngraph op { op x { time 1 ms } }\n"
    text = text.replace("device ор", 'device "ор"')  # Cyrillic o and er
    assert _codes(text) == ["E263"]


def test_names_of_other_scripts_stay_valid() -> None:
    text = ('cluster c {\n  device gpu0 { memory 1 GiB }\n  device "gpu-é" { memory 1 GiB }\n'
            '  link gpu0 <-> "gpu-é" { bandwidth 1 GB/s }\n}\n'
            'graph "层" {\n  op "aé" { time 1 ms }\n}\n')
    assert set(load_text(text, "n.plan").spec.graphs) == {"层"}


def test_names_from_a_placement_file_reach_the_terminal_escaped(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(
        "cluster c { device d0 { memory 1 GiB } }\ngraph g { op a { time 1 ms } }\n"
        "plan p { graph g  cluster c }\n")
    evil = "x\nchecked 1 file(s): ok\x1b[31m\u202e"
    (tmp_path / "p.json").write_text(json.dumps({"placement": {evil: "d0", "a": "d0"}}))
    code, out, err = invoke(["simulate", "s.plan", "--placement", "p.json"], tmp_path)
    assert code == 1 and "E503" in err
    assert "\nchecked 1 file(s): ok" not in out + err
    assert "\x1b" not in out + err and "\u202e" not in out + err
    assert "\\u001b" in err or "\\u001B" in err


def test_table_cells_show_names_as_written(tmp_path: Path) -> None:
    from planner.render.terminal import _n

    assert _n("[red]gpu0\x1b") == "\\[red]gpu0\\u001b"


def test_a_look_alike_of_a_name_in_another_file_is_found(tmp_path: Path) -> None:
    from planner.spec.load import load_path

    (tmp_path / "a.plan").write_text("graph op {\n  op x { time 1 ms }\n}\n")  # plain ASCII
    (tmp_path / "b.plan").write_text(
        'import "a.plan"\ncluster "ор" {\n  device d0 { memory 1 GiB }\n}\n')  # Cyrillic
    with pytest.raises(SpecError) as info:
        load_path(tmp_path / "b.plan")
    (d,) = info.value.diagnostics
    assert d.code == "E263" and d.span is not None and d.span.file.endswith("b.plan")


def test_fmt_reads_cr_line_ends_like_lf() -> None:
    from planner.spec.format import format_source

    text = "# comment\n\ngraph g {\n  op a { time 1 ms }  # c2\n\n  op b { time 1 ms }\n}\n"
    assert format_source(text.replace("\n", "\r")) == format_source(text)
    assert "# comment\n\ngraph g" in format_source(text.replace("\n", "\r"))


def test_a_file_name_cannot_fake_a_line(tmp_path: Path) -> None:
    """File names come from the pull request too: a newline in one is written `\\n`."""
    name = "x\nchecked 1 file(s): ok\x1b[2K\n.plan"
    (tmp_path / name).write_text("graph g { op a { tiem 1 ms } }\n")
    for args, status in ((["check", "."], 1), (["fmt", "--check", "."], 5)):
        code, out, err = invoke(args, tmp_path)
        assert code == status, err
        assert not [line for line in (out + err).splitlines()
                    if line.startswith("checked 1 file(s): ok")], (out, err)
        assert "\x1b" not in out + err and "x\\nchecked 1 file(s): ok" in out + err


def test_an_empty_name_is_an_error_in_a_plain_ascii_file_too() -> None:
    """The plain-ASCII fast path skips the walk over names; an empty one must not pass."""
    assert _codes('graph g {\n  op "" { time 2 ms }\n}\n') == ["E261"]
