"""Input hardening, round 3 (issue 29): numbers that underflow, JSON keys given twice,
integers too long to convert, and a byte order mark at a file's start.

Before: `time 1e-400 ms` (and `params 1e-400 B`, `latency 1e-400 s`, `time 0.<100,000
zeros>1 ms`) was accepted as 0 and `bandwidth 1e-400 B/s` said "must be positive";
`{"a": "gpu0", "a": "gpu1"}` placed `a` on `gpu1` without a word; a 4,301-digit integer in
a JSON input was E999 (`ValueError: Exceeds the limit (4300 digits)`); and a spec that
starts with a UTF-8 byte order mark was "not a planner spec" (E010).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from planner.errors import SpecError
from planner.spec.format import format_source
from planner.spec.load import load_text
from planner.spec.parse import parse
from planner.strictjson import loads as strict_loads

from .helpers import invoke
from .test_input_placement import SPEC as PLACEMENT_SPEC

PARSERS = ["fast", "lark"]
BOM = "\ufeff"


@pytest.fixture(params=PARSERS)
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test that takes it runs with the fast path and with Lark alone."""
    if request.param == "lark":
        monkeypatch.setenv("PLANNER_PARSER", "lark")
    else:
        monkeypatch.delenv("PLANNER_PARSER", raising=False)
    return str(request.param)


def _diagnostics(text: str) -> list[tuple[str, int, int, str]]:
    with pytest.raises(SpecError) as info:
        load_text(text, "n.plan")
    return [(d.code, d.span.line, d.span.column, d.message + " " + " ".join(d.hints))
            for d in info.value.diagnostics if d.span]


def _op(attrs: str) -> str:
    return f"graph g {{\n  op a {{ {attrs} }}\n}}\n"


def _cluster(device: str = "", link: str = "bandwidth 1 GB/s") -> str:
    return (f"cluster c {{\n  device d[0..1] {{ memory 1 GiB {device} }}\n"
            f"  link d0 <-> d1 {{ {link} }}\n}}\n")


ZEROS = "0." + "0" * 100_000 + "1"

# (spec, line, column of the value): each value is a number that is not 0 but reads as 0
UNDERFLOWS = {
    "time": (_op("time 1e-400 ms"), 2, 15),
    "time, a huge exponent": (_op("time 1e-99999999999999999999 ms"), 2, 15),
    "time, 100,000 zeros": (_op(f"time {ZEROS} ms"), 2, 15),
    "time, subnormal then 0 in seconds": (_op("time 1e-320 ns"), 2, 15),
    "time, the slow path (a type)": (_op("time 1e-400 ms  type Conv"), 2, 15),
    "time[kind]": (_op("time 1 ms  time[cpu] 1e-400 ms"), 2, 31),
    "params": (_op("time 1 ms  params 1e-400 B"), 2, 28),
    "flops of an op": (_op("flops 1e-400 GFLOP"), 2, 16),
    "edge bytes": ("graph g {\n  op a { time 1 ms }\n  op b { time 1 ms }\n"
                   "  a -> b { bytes 1e-400 B }\n}\n", 4, 18),
    "latency": (_cluster(link="bandwidth 1 GB/s  latency 1e-400 s"), 3, 46),
    "bandwidth": (_cluster(link="bandwidth 1e-400 B/s"), 3, 30),
    "speed": (_cluster(device="speed 1e-400"), 2, 39),
    "flops of a device": (_cluster(device="flops 1e-400 TFLOPS"), 2, 39),
    "memory": ("cluster c {\n  device d0 { memory 1e-400 GiB }\n}\n", 2, 22),
}


@pytest.mark.parametrize("text, line, column", UNDERFLOWS.values(), ids=UNDERFLOWS.keys())
def test_a_number_that_underflows_to_0_is_out_of_range(text: str, line: int, column: int,
                                                       parser: str) -> None:
    """A literal that is not zero but reads as 0.0 (or as a subnormal that is 0 once
    converted to its base unit) is E260 with the valid range, never the value 0 nor
    "must be positive", on the fast path and the slow one, with either parser."""
    ((code, ln, col, words),) = _diagnostics(text)
    assert (code, ln, col) == ("E260", line, column), words
    assert "is below the valid range" in words and " to " in words, words
    assert len(words) < 400  # a literal of 100,000 zeros is not printed whole


@pytest.mark.parametrize("literal", ["0", "0.0", "0e5", "0_000.000e-999", "0.0E+7"])
def test_a_literal_that_is_zero_stays_zero(literal: str, parser: str) -> None:
    spec = load_text(_op(f"time {literal} ms  params {literal} B  output {literal} KiB")
                     + _cluster(link=f"bandwidth 1 GB/s  latency {literal} s")).spec
    op = spec.graphs["g"].ops[0]
    assert (op.time_s, op.params_bytes, op.output_bytes) == (0.0, 0, 0)
    assert spec.clusters["c"].links[0].latency_s == 0.0
    # a zero where a positive value is needed is still said to be one (E241)
    ((code, _, _, words),) = _diagnostics(_cluster(link=f"bandwidth {literal} B/s"))
    assert code == "E241" and "must be positive" in words


def test_the_command_line_reports_an_underflow_without_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "u.plan").write_text(_op(f"time {ZEROS} ms"))
    code, out, err = invoke(["check", "u.plan", "--json"], tmp_path)
    doc = json.loads(out)
    assert code == 1 and "Traceback" not in out + err
    assert [(d["code"], d["line"], d["column"]) for d in doc["diagnostics"]] == [
        ("E260", 2, 15)]


# ---- a byte order mark --------------------------------------------------------------------

SPEC = format_source(PLACEMENT_SPEC)  # the canonical layout: `fmt` changes nothing but a mark


def test_a_spec_may_start_with_a_byte_order_mark(parser: str, tmp_path: Path) -> None:
    assert format_source(SPEC) == SPEC  # canonical, without the mark
    assert load_text(BOM + SPEC).spec.plans["p"].graph.ops[1].name == "b"
    assert parse(BOM + SPEC).items[0].name.span.column == 9  # columns after the mark
    (tmp_path / "s.plan").write_bytes((BOM + SPEC).encode())
    code, _, err = invoke(["check", "s.plan"], tmp_path)
    assert code == 0, err
    # columns on line 1 are those of the text after the mark, as editors show them
    (tmp_path / "e.plan").write_bytes((BOM + "graph g { op a { time 1e-400 ms } }\n").encode())
    code, out, _ = invoke(["check", "e.plan", "--json"], tmp_path)
    assert [(d["code"], d["line"], d["column"]) for d in json.loads(out)["diagnostics"]] == [
        ("E260", 1, 23)]


def test_fmt_drops_the_byte_order_mark(tmp_path: Path) -> None:
    """The canonical layout has no byte order mark: `fmt --check` reports a file that
    starts with one, `fmt` writes it without, and `fmt -` prints it without."""
    path = tmp_path / "s.plan"
    path.write_bytes((BOM + SPEC).encode())
    code, out, err = invoke(["fmt", "--check", "s.plan"], tmp_path)
    assert code == 5 and "would reformat s.plan" in out + err, (out, err)
    code, _, err = invoke(["fmt", "s.plan"], tmp_path)
    assert code == 0, err
    assert path.read_bytes() == SPEC.encode()
    code, _, _ = invoke(["fmt", "--check", "s.plan"], tmp_path)
    assert code == 0
    run = subprocess.run([sys.executable, "-m", "planner", "fmt", "-"], input=(BOM + SPEC).encode(),
                         capture_output=True, check=False, timeout=120)
    assert (run.returncode, run.stdout) == (0, SPEC.encode()), run.stderr


PLACEMENT = {"placement": {"a": "gpu0", "b": "gpu1"}}
GRAPH_JSON = {"format": "planner-graph", "version": 1, "name": "g",
              "ops": [{"name": "a", "time_s": 0.001}, {"name": "b", "time_s": 0.001}],
              "edges": [{"src": "a", "dst": "b", "bytes": 1000}]}


def test_json_inputs_may_start_with_a_byte_order_mark(tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SPEC)
    (tmp_path / "p.json").write_bytes((BOM + json.dumps(PLACEMENT)).encode())
    code, _, err = invoke(["simulate", "s.plan", "--placement", "p.json"], tmp_path)
    assert code == 0, err
    code, _, err = invoke(["diff", "p.json", "p.json"], tmp_path)
    assert code == 0, err
    (tmp_path / "g.json").write_bytes((BOM + json.dumps(GRAPH_JSON)).encode())
    code, _, err = invoke(["import", "json", "g.json", "-o", "g.plan"], tmp_path)
    assert code == 0, err
    assert "op a { time 1 ms }" in (tmp_path / "g.plan").read_text()


# ---- JSON: keys given twice, integers too long --------------------------------------------

LONG = "1" * 4301


@pytest.mark.parametrize("text, line, column, words", [
    ('{"placement": {"a": "gpu0", "a": "gpu1"}}', 1, 29, '"a"'),
    ('{"placement": {"a": "gpu0"},\n "order": {"gpu0": ["a"]},\n "order": {}}', 3, 2,
     '"order"'),
    ('[{"a": 1}, {"a": 2, "b": [1, {"x": null, "x": "y"}]}]', 1, 42, '"x"'),
])
def test_strict_loads_names_a_key_given_twice_and_both_places(
        text: str, line: int, column: int, words: str) -> None:
    with pytest.raises(json.JSONDecodeError) as info:
        strict_loads(text)
    err = info.value
    assert (err.lineno, err.colno) == (line, column)
    assert words in err.msg and "given twice" in err.msg, err.msg
    assert "first at line " in err.msg  # both places, no value (it may be a secret's)
    assert "gpu0" not in err.msg and "0.002" not in err.msg


@pytest.mark.parametrize("text, column", [
    (f'{{"start_s": {{"a": {LONG}}}}}', 19),
    (f'{{"s": "{LONG}", "x": 1.{LONG}, "n": -{LONG}}}', 8627),  # a string and a float are fine
])
def test_strict_loads_says_an_integer_is_too_long(text: str, column: int) -> None:
    with pytest.raises(json.JSONDecodeError) as info:
        strict_loads(text)
    assert info.value.colno == column
    assert "number too long" in info.value.msg and "4,301 digits" in info.value.msg


def test_strict_loads_reads_valid_json_as_json_loads_does() -> None:
    text = json.dumps({"placement": {"a": "gpu0"}, "x": [1, 2.5, None, True, "s", {"a": 1}],
                       "big": int("9" * 4300)})
    assert strict_loads(text) == {**json.loads(text), "big": math.inf}  # beyond a double
    assert strict_loads(BOM + text) == strict_loads(text)
    text = text.replace("9" * 4300, "9" * 308)  # a double holds it: read as json.loads does
    assert strict_loads(text) == json.loads(text)
    with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
        strict_loads("[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize("graph, words", [
    (json.dumps(GRAPH_JSON).replace('"name": "a",', '"name": "a", "time_s": 0.002,'),
     'key "time_s" is given twice in one object: first at line'),
    (json.dumps(GRAPH_JSON).replace('"bytes": 1000', f'"bytes": {LONG}'),
     "number too long: an integer of 4,301 digits"),
])
def test_import_json_reports_keys_given_twice_and_long_integers(
        graph: str, words: str, tmp_path: Path) -> None:
    (tmp_path / "g.json").write_text(graph)
    code, out, err = invoke(["import", "json", "g.json", "-o", "g.plan"], tmp_path)
    assert code == 1 and "Traceback" not in out + err
    assert "error[E920]" in err and "g.json:1:" in err and words in err, err
    assert not (tmp_path / "g.plan").exists()


# Placement and plan files are read with `planner.strictjson.loads` too
# (`planner/cli/runs.py` `read_placed`, `planner/cli/plandiff.py` `read_side`).

SMALL = PLACEMENT_SPEC
PLACED = '"placement": {"a": "gpu0", "b": "gpu1"}'


@pytest.mark.parametrize("text, words", [
    ('{"placement": {"a": "gpu0", "a": "gpu1", "b": "gpu1"}}',
     'key "a" is given twice in one object: first at line 1, column 16'),
    (f'{{{PLACED}, "order": {{"gpu0": ["a"], "gpu0": []}}}}', 'key "gpu0" is given twice'),
    (f'{{{PLACED}, "start_s": {{"a": 0, "b": 0.001}}, "start_s": {{}}}}',
     'key "start_s" is given twice'),
    (f'{{{PLACED}, "start_s": {{"a": {LONG}, "b": 0}}}}', "number too long"),
    (f'{{{PLACED}, "order": {{"gpu0": [{LONG}]}}}}', "number too long"),
    (f'{{"placement": {{"a": {LONG}, "b": "gpu1"}}}}', "number too long"),
])
def test_a_placement_file_with_a_key_twice_or_a_long_integer_is_e500(
        text: str, words: str, tmp_path: Path) -> None:
    (tmp_path / "s.plan").write_text(SMALL)
    (tmp_path / "p.json").write_text(text)
    code, out, err = invoke(["simulate", "s.plan", "--placement", "p.json", "--json"],
                            tmp_path)
    (d,) = json.loads(out)["diagnostics"]
    assert (code, d["code"], d["file"], d["line"]) == (1, "E500", "p.json", 1), d
    assert words in d["message"] and "Traceback" not in err, d


@pytest.mark.parametrize("text, words", [
    (f'{{{PLACED}, "makespan_s": {LONG}}}', "number too long"),
    ('{"placement": {"a": "gpu0", "a": "gpu1", "b": "gpu1"}}', 'key "a" is given twice'),
])
def test_a_plan_file_given_to_diff_with_a_key_twice_or_a_long_integer_is_e642(
        text: str, words: str, tmp_path: Path) -> None:
    (tmp_path / "old.json").write_text(json.dumps(PLACEMENT))
    (tmp_path / "new.json").write_text(text)
    code, out, err = invoke(["diff", "old.json", "new.json", "--json"], tmp_path)
    (d,) = json.loads(out)["diagnostics"]
    assert (code, d["code"], d["file"], d["line"]) == (1, "E642", "new.json", 1), d
    assert words in d["message"] and "Traceback" not in err, d
