"""`strictjson.Locator`: where the value at a JSON path is in the text that holds it.

Every diagnostic about a JSON input (a stages file, an imported graph) is placed with it,
so the property is checked on arbitrary documents and layouts: the span of each path's
value decodes to that value, and a path past what the document holds stops at the deepest
value it does hold.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner import strictjson
from planner.io.json_checks import path_steps
from planner.strictjson import Locator

KEYS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                                  allow_infinity=False) | KEYS
DOCUMENTS = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                         | st.dictionaries(KEYS, inner, max_size=4), max_leaves=20)


def _paths(value: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _at(value: Any, path: tuple[str | int, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


@settings(deadline=None, max_examples=300)
@given(DOCUMENTS, st.sampled_from([None, 1, 3]), st.booleans(), st.booleans())
def test_every_path_is_located_at_its_own_value(value: Any, indent: int | None,
                                                ascii_only: bool, bom: bool) -> None:
    text = ("\ufeff" if bom else "") + json.dumps(value, indent=indent,
                                                  ensure_ascii=ascii_only)
    doc = text.removeprefix("\ufeff")
    where = Locator(text)
    for path in _paths(value):
        start, end = where(path)
        found = _at(value, path)
        if isinstance(found, dict | list):
            assert doc[start] == ("{" if isinstance(found, dict) else "[") and end == start + 1
        else:
            assert json.loads(doc[start:end]) == found


@settings(deadline=None, max_examples=200)
@given(DOCUMENTS, st.lists(st.integers(0, 5) | KEYS, min_size=1, max_size=3))
def test_a_path_past_the_document_stops_at_the_deepest_value_it_holds(
        value: Any, extra: list[str | int]) -> None:
    text = json.dumps(value, indent=1)
    path: list[str | int] = []
    held = value
    for step in extra:  # the longest prefix of `extra` that the document holds
        ok = (isinstance(held, dict) and isinstance(step, str) and step in held) or (
            isinstance(held, list) and isinstance(step, int) and step < len(held))
        if not ok:
            break
        held = held[step]  # type: ignore[index]
        path.append(step)
    assert Locator(text)(extra) == Locator(text)(path)


def test_the_paths_messages_show_read_back_as_steps() -> None:
    assert path_steps("edges[2].bytes") == ["edges", 2, "bytes"]
    assert path_steps("cluster.devices[0].memory_bytes") == ["cluster", "devices", 0,
                                                            "memory_bytes"]
    assert path_steps("ops") == ["ops"] and path_steps("") == []
    assert path_steps(".maxFPGAs") == ["maxFPGAs"]


@pytest.mark.parametrize(("text", "at"), [
    ('{"a": "\\ud800"}', 7), ('{"a": "\\udc00"}', 7), ('{"\\ud800x": 1}', 2),
    ('{"a": "\\\\\\ud800"}', 9)])
def test_a_lone_surrogate_is_a_located_error(text: str, at: int) -> None:
    # half of a character: `json.loads` read it into a str no output can encode, and
    # `simulate --placement F --json` of a placement naming one ended in a
    # UnicodeEncodeError traceback (exit 1, empty stdout)
    with pytest.raises(json.JSONDecodeError, match="a lone surrogate") as err:
        strictjson.loads(text)
    assert err.value.pos == at


@pytest.mark.parametrize("text", ['{"a": "\\ud83d\\ude00"}', '{"a": "\\\\ud800"}'])
def test_a_pair_or_an_escaped_backslash_is_no_lone_surrogate(text: str) -> None:
    assert strictjson.loads(text) == json.loads(text)


@pytest.mark.parametrize(("text", "read"), [
    ("[" + "9" * 400 + "]", [float("inf")]),
    ('{"a": -' + "1" * 310 + "}", {"a": float("-inf")}),
    ("[1e400, " + "2" * 308 + "]", [float("inf"), int("2" * 308)]),  # 2.2e307 fits a double
    ('["' + "9" * 400 + '", 0e-999, -0.0, 1e-320]', ["9" * 400, 0.0, -0.0, 1e-320])])
def test_an_integer_beyond_a_double_reads_as_an_infinity_as_1e400_does(text: str,
                                                                        read: Any) -> None:
    """Before: an int of 310 digits, which every reader's `float()` or `math.isfinite`
    refused with an OverflowError (E999 in `diff`, `import json`, ...)."""
    assert strictjson.loads(text) == read


@pytest.mark.parametrize(("text", "column"), [
    ('{"time_s": 1e-400}', 12), ("[0.5,\n 0." + "0" * 400 + "1]", 2),
    ('["1e-400", -2.5E-999]', 12)])
def test_a_number_not_0_that_reads_as_0_is_a_located_error(text: str, column: int) -> None:
    """Before: read as 0 (a time of `1e-400` s, a size, a bandwidth: a reader could not
    tell it from 0), where 1e-320 reads as itself."""
    with pytest.raises(json.JSONDecodeError) as err:
        strictjson.loads(text)
    assert err.value.msg.startswith("number too small: `")
    assert err.value.colno == column and err.value.lineno == text[:err.value.pos].count("\n") + 1


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_lines_end_at_a_lone_cr_as_the_excerpts_split_them(end: str) -> None:
    """A JSON file of lone `\\r` line ends (old Mac editors) put every place on line 1,
    while its excerpt showed line 1 under it (helper)."""
    doc = end.join(['{', '  "a": 1,', '  "b": tru', '}'])
    at = doc.index("tru")
    assert strictjson.line_column(doc, at) == (3, 8)
    with pytest.raises(json.JSONDecodeError) as err:
        strictjson.loads(doc)
    from planner.errors import Span

    span = Span.at_json_error("f.json", err.value)
    assert (span.line, span.column) == (3, 8)
    key = end.join(['{', '  "a": 1,', '  "a": 2', '}'])
    with pytest.raises(json.JSONDecodeError, match="first at line 2, column 3"):
        strictjson.loads(key)
