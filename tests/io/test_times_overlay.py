"""`--times FILE` on every importer: CSV, JSON and Chrome traces; errors; 4-digit numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import planner
from planner.cli import app
from planner.errors import JsonSpans, SpecError
from planner.io.onnx_import import zoo_dir
from planner.io.pipedream import parse_pipedream
from planner.io.times import overlay_times, read_times

FIXTURES = Path(__file__).parent / "fixtures"
PROFILE = FIXTURES / "pipedream_small.txt"


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def _import_profile(tmp_path: Path, times_csv: str) -> tuple[int, str, Path, Path]:
    """`import pipedream` of the small profile with `times_csv` as its `--times` file
    (t.csv), written to p.plan: (exit code, output, the times file, the spec)."""
    times, out = tmp_path / "t.csv", tmp_path / "p.plan"
    times.write_text(times_csv)
    code, output = _run("import", "pipedream", str(PROFILE), "--times", str(times), "-o",
                        str(out))
    return code, output, times, out


def _times_of(path: Path) -> dict[str, float | None]:
    (graph,) = planner.load(path).graphs.values()
    return {op.name: op.time_s for op in graph.ops}


def test_csv_with_a_header_and_comments(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text('name,seconds\n# measured\nnode2,0.0012345678\n"a,b",1e-3\n')
    assert read_times(f) == {"node2": 0.0012345678, "a,b": 1e-3}


def test_json_object(tmp_path: Path) -> None:
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"node2": 2e-3, "node5": 0}))
    assert read_times(f) == {"node2": 2e-3, "node5": 0.0}


def test_chrome_trace_prefers_annotations_and_takes_the_median(tmp_path: Path) -> None:
    events = [{"ph": "X", "cat": "user_annotation", "name": "node2", "dur": d}
              for d in (10.0, 30.0, 20.0)]
    events += [{"ph": "X", "cat": "cpu_op", "name": "node2", "dur": 999.0},
               {"ph": "X", "cat": "gpu_user_annotation", "name": "node5", "dur": 4.0},
               {"ph": "X", "cat": "user_annotation", "name": "node5", "dur": 8.0},
               {"ph": "i", "name": "node3", "ts": 1}]
    f = tmp_path / "trace.json"
    f.write_text(json.dumps({"traceEvents": events}))
    times = read_times(f)
    assert times["node2"] == pytest.approx(20e-6)
    assert times["node5"] == pytest.approx(4e-6)  # the GPU's timeline wins
    assert "node3" not in times


@pytest.mark.parametrize(("text", "code", "line"), [
    ("name,seconds\nnode2,fast\n", "E934", 2),
    ("node2,1,2\n", "E935", None),  # no times file: nothing of it is quoted or shown
    ("node2,-1\n", "E935", None),
    ("name,seconds\nnode2,1,2\n", "E934", 2),
    ("a,1\nnode2,-1\n", "E934", 2),
    ("node2,0.5\n# again\nnode2,0.7\n", "E934", 3),  # was 0.7 ms, the first dropped
    ('{"node2": "x", "node3": 1}', "E934", 1),
    ('{\n  "node3": 1,\n  "node2": "x"\n}', "E934", 3),  # at the op's value, not line 1
    ("name,seconds\n", "E935", None),
    ('{"node2": "x"}', "E935", None),
    # every value a JSON number: a times file, its bad time located (was E935 "no op time",
    # where the same value beside a valid one was E934 at it)
    ('{"node2": -1}', "E934", 1),
    ('{"node2": -1,\n "node3": -2}', "E934", 1),
    ('{"node2": -1, "token": "x"}', "E935", None),  # not all numbers: nothing quoted
    ('{"node2": ', "E935", None),
    ("[]", "E935", 1),
    # a time the spec cannot hold: was E223 or E260 at the model file, "correct them there"
    ("name,seconds\nnode2,2e6\n", "E934", 2),
    ("node2,1e-13\n", "E934", 1),
    ('{"node3": 1,\n "node2": 1e7}', "E934", 2),
    ('[{"ph": "X", "name": "node2", "dur": 2e12}]', "E934", 1),
])
def test_bad_files_are_located_diagnostics(tmp_path: Path, text: str, code: str,
                                           line: int | None) -> None:
    f = tmp_path / "t.csv"
    f.write_text(text)
    with pytest.raises(SpecError) as err:
        read_times(f)
    d = err.value.diagnostics[0]
    assert (d.code, d.span.file if d.span else None, d.span.line if d.span else None) == (
        code, str(f) if line else None, line)
    assert str(f) in d.message or d.span is not None  # a span-less one names the file


def test_a_time_out_of_range_is_the_times_files_mistake(tmp_path: Path) -> None:
    """Microseconds in a CSV of seconds: before, E223 at the PipeDream profile's first line,
    whose hint said to correct its values, which hold no such time."""
    code, output, times, out = _import_profile(tmp_path, "node2,1500000\n")
    assert (code, out.exists()) == (1, False), output
    assert output.startswith(f"{times}:1:1: error[E934]: the time of `node2`, 1500000 s, is "
                             "above the valid range of a time"), output
    assert "times are in seconds" in output and str(PROFILE) not in output


def test_overlay_sets_time_or_time_of_a_kind_and_warns_on_strays() -> None:
    w = parse_pipedream(PROFILE.read_text()).workload
    hit, warnings = overlay_times(w, {"node2": 5e-3, "nodee5": 1.0}, "t.csv")
    assert hit == 1 and w.ops[1].time_s == 5e-3
    assert [d.code for d in warnings] == ["W937"] and "did you mean `node5`?" in warnings[0].hints
    overlay_times(w, {"node5": 7e-3}, "t.csv", kind="v100")
    assert w.ops[4].time_by_kind == {"v100": 7e-3}
    with pytest.raises(SpecError) as err:
        overlay_times(w, {"conv1": 1.0}, "t.csv")
    assert err.value.diagnostics[0].code == "E936"


def test_every_importer_takes_times(tmp_path: Path) -> None:
    code, output, times, out = _import_profile(tmp_path, "node2,0.0016734999917389\n")
    assert code == 0, output
    text = out.read_text()
    assert "time 1.673 ms" in text and "--times" in text.splitlines()[1]
    assert _times_of(out)["node2"] == pytest.approx(1.673e-3)
    exported = tmp_path / "g.json"
    assert _run("export", "json", str(out), "-o", str(exported))[0] == 0
    times.write_text("node5,2e-6\n")
    again = tmp_path / "j.plan"
    code, output = _run("import", "json", str(exported), "--times", str(times),
                        "--times-kind", "gpu", "-o", str(again))
    assert code == 0, output
    (graph,) = planner.load(again).graphs.values()
    assert graph.ops[graph.op_index["node5"]].time_by_kind == {"gpu": 2e-6}


def test_onnx_import_takes_times(tmp_path: Path) -> None:
    model = zoo_dir() / "light_resnet50.onnx"
    if not model.is_file():
        pytest.skip("the onnx package ships no light_resnet50.onnx")
    out = tmp_path / "r.plan"
    first = tmp_path / "first.plan"
    assert _run("import", "onnx", str(model), "-o", str(first))[0] == 0
    name = next(iter(_times_of(first)))
    times = tmp_path / "t.json"
    times.write_text(json.dumps({name: 0.25}))
    code, output = _run("import", "onnx", str(model), "--times", str(times), "-o", str(out))
    assert code == 0, output
    assert _times_of(out)[name] == 0.25


def test_a_times_file_naming_no_op_fails_without_writing(tmp_path: Path) -> None:
    code, output, _, out = _import_profile(tmp_path, "conv1,0.001\n")
    assert code == 1 and "E936" in output and not out.exists()


def test_baechi_graphs_take_times(tmp_path: Path) -> None:
    from planner.io.baechi import load_baechi

    f = tmp_path / "g.json"
    f.write_text(json.dumps({"name": "g", "ops": [
        {"name": "a", "time_us": 5.0}, {"name": "b", "time_us": 7.0}],
        "edges": [{"src": "a", "dst": "b", "bytes": 4}]}))
    times = tmp_path / "t.csv"
    times.write_text("b,0.25\n")
    graph = load_baechi(f, times=read_times(times)).graph
    assert [op.time_s for op in graph.ops] == [5.0 * 1e-6, 0.25]


@pytest.mark.parametrize(("dur", "hint"), [
    ('"500"', ("write it as a JSON number, without quotes: 500.0",)),  # was 500 us, silently
    ("-1", ()), ("true", ()), ("null", ())])
def test_a_trace_duration_that_is_no_number_is_located(tmp_path: Path, dur: str,
                                                       hint: tuple[str, ...]) -> None:
    f = tmp_path / "trace.json"
    f.write_text('{"traceEvents": [\n  {"ph": "X", "name": "node2", "dur": 10},\n'
                 f'  {{"ph": "X", "name": "node2", "dur": {dur}}}\n]}}\n')
    with pytest.raises(SpecError) as err:
        read_times(f)
    (d,) = err.value.diagnostics
    assert (d.code, d.span.file if d.span else None, d.span.line if d.span else None,
            d.span.column if d.span else None, d.hints) == ("E934", str(f), 3, 39, hint)
    assert d.message.endswith(f"microseconds (finite, >= 0): {dur}")
    f.write_text(f'[{{"ph": "X", "name": "node2", "dur": {dur}}}]')  # a bare list of events
    with pytest.raises(SpecError) as err:
        read_times(f)
    assert err.value.diagnostics[0].span == JsonSpans(str(f), f.read_text())(0, "dur")


def test_a_complete_trace_event_without_duration_is_located(tmp_path: Path) -> None:
    f = tmp_path / "trace.json"
    f.write_text('[{"ph": "X", "name": "node3", "dur": 10},\n {"ph": "X", "name": "node2"}]\n')
    with pytest.raises(SpecError) as err:  # was read as node3's time alone, without a word
        read_times(f)
    (d,) = err.value.diagnostics
    assert (d.code, d.message) == ("E934", "complete event `node2` has no `dur`")
    assert d.span == JsonSpans(str(f), f.read_text())(1)
    assert (d.span.line, d.span.column) == (2, 2)


@pytest.mark.parametrize(("text", "quoted"), [
    ('{"node2": 1e400}', ": 1e400"),  # was `Infinity`
    ('{"node2": -1E400}', ": -1E400"),  # was `-Infinity`
    ('{"node2": 2.50e7}', ", 2.50e7 s, is above"),  # was `25000000.0 s`
    ('[{"ph": "X", "name": "node2", "dur": 1e999}]', ": 1e999")])
def test_a_time_is_quoted_as_the_file_writes_it(tmp_path: Path, text: str,
                                                quoted: str) -> None:
    f = tmp_path / "t.json"
    f.write_text(text)
    with pytest.raises(SpecError) as err:
        read_times(f)
    (d,) = err.value.diagnostics
    assert d.code == "E934" and quoted in d.message, d.message


@pytest.mark.parametrize("written", ["1_000", "١٢", "１"])
def test_a_csv_time_is_written_in_ascii_digits(tmp_path: Path, written: str) -> None:
    """Python's `float` reads `1_000` as 1000 and Arabic-Indic or full-width digits as
    theirs: before, `a,1_000` set a's time to 1000 s and `a,١٢` to 12 s without a word."""
    f = tmp_path / "t.csv"
    f.write_text(f"node3,1\nnode2,{written}\n")
    with pytest.raises(SpecError) as err:
        read_times(f)
    (d,) = err.value.diagnostics
    assert (d.code, d.message) == ("E934", f"`{written}` is not a number of seconds "
                                           "(finite, >= 0)")
    assert d.span is not None and d.span.line == 2


def test_a_negative_zero_time_is_zero(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("node3,-0.0\nnode2,-0e5\n")
    times = read_times(f)
    assert times == {"node3": 0.0, "node2": 0.0}
    assert all(str(t) == "0.0" for t in times.values())  # not -0.0, written `time -0 ms`
