"""Numbers in specs: every quantity has a documented range (`planner.units.RANGES`),
checked where the spec is lowered, and whatever `check` accepts goes through every later
stage (each heuristic, the exact solvers, simulate, --json, --html) without a traceback.

Before: `output 9000000 TiB` was an OverflowError in the simulator, `memory 1.5e19 B` a
TypeError in cpsat, `bandwidth 1e-320 B/s` failed the LP, `speed 1e-320` passed `check`
and made every `solve` exit 3, and `time nan ms` said "unexpected `1 MB`".
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from planner.errors import SpecError
from planner.spec.load import load_text
from planner.units import RANGES, SPEED_RANGE

from .helpers import invoke


def _codes(text: str) -> list[tuple[str, int, int]]:
    with pytest.raises(SpecError) as info:
        load_text(text, "n.plan")
    return [(d.code, d.span.line, d.span.column) for d in info.value.diagnostics if d.span]


def _device(attrs: str) -> str:
    return f"cluster c {{\n  device d0 {{ memory 1 GiB  {attrs} }}\n}}\n"


def _op(attrs: str) -> str:
    return f"graph g {{\n  op a {{ {attrs} }}\n}}\n"


_LINK = "cluster c {{\n  device d[0..1] {{ memory 1 GiB }}\n  link d0 <-> d1 {{ {} }}\n}}"


@pytest.mark.parametrize("text, code, line", [
    (_op("time 9000000 TiB"), "E222", 2),             # a size for a time: a unit error
    (_op("time 1e7 s"), "E223", 2),                   # above 1e6 s
    (_op("time 1e-13 s"), "E260", 2),                 # below 1 ps (but not 0)
    (_op("time 1 ms  output 9000000 TiB"), "E223", 2),  # above 1 PiB
    (_op("flops 1e19 FLOP"), "E223", 2),
    (_device("flops 1e19 FLOPS"), "E223", 2),
    (_device("flops 1 KFLOPS"), "E260", 2),
    (_device("speed 1e-320"), "E260", 2),
    (_device("speed 1e7"), "E223", 2),
    (_device("memory 1.5e19 B").replace("memory 1 GiB  ", ""), "E223", 2),
    (_LINK.format("bandwidth 1e-320 B/s"), "E260", 3),
    (_LINK.format("bandwidth 2e15 B/s"), "E223", 3),
    (_LINK.format("bandwidth 1 GB/s  latency 1e308 s"), "E223", 3),
])
def test_a_quantity_out_of_its_range_is_a_located_error(text: str, code: str,
                                                         line: int) -> None:
    assert [(c, ln) for c, ln, _ in _codes(text)] == [(code, line)]


@pytest.mark.parametrize(("bound", "beyond", "code"), [
    ("time 1000000000000000 ns", "time 1000001000000000 ns", "E223"),
    ("time 1e15 ns", "time 1.000001e15 ns", "E223"),
    ("time 1e12 us", "time 1.000001e12 us", "E223"),
    ("time 0.001 ns", "time 0.000999 ns", "E260"),
    ("bandwidth 1 GB/s  latency 1e15 ns", "bandwidth 1 GB/s  latency 1.000001e15 ns", "E223")])
def test_a_bound_written_in_any_unit_is_in_range(bound: str, beyond: str, code: str) -> None:
    """Before: `time 1e15 ns` (the 1e6 s bound) was E223, "above the valid range", as
    1e15 x 1e-9 rounds to 1000000.0000000001 s; `1e6 s`, `1e9 ms` and `1e12 us` were not."""
    spec = _LINK.format if bound.startswith("bandwidth") else _op
    assert load_text(spec(bound), "n.plan") is not None
    assert [c for c, _, _ in _codes(spec(beyond))] == [code]  # just beyond it still is not


@pytest.mark.parametrize("text", [
    _op("time nan ms  output 1 MB"), _op("time nan ms"), _op("time inf")])
def test_nan_and_inf_are_said_not_to_be_numbers(text: str) -> None:
    with pytest.raises(SpecError) as info:
        load_text(text, "n.plan")
    (d,) = info.value.diagnostics
    assert d.code in ("E108", "E221") and "is not a number" in d.message, d
    assert d.span is not None and (d.span.line, d.span.column) == (2, 15)  # at `nan`/`inf`


def test_the_ranges_are_what_the_documentation_says() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "limits.md"
    section = page.read_text(encoding="utf-8").split("\n## Limits\n", 1)[1].split("\n## ", 1)[0]
    assert RANGES == {"time": (1e-12, 1e6), "size": (1.0, 2.0**50), "bandwidth": (1.0, 1e15),
                      "work": (1.0, 1e18), "rate": (1e6, 1e18)}
    assert SPEED_RANGE == (1e-6, 1e6)
    for text in ("1 ps", "1e6 s", "1 PiB", "1 B/s", "1 PB/s", "1e18 FLOP", "1 MFLOPS",
                 "1 EFLOPS", "1e-6", "1e6"):
        assert text in section, text


# Extreme but valid: each quantity at both ends of its range, in specs `check` accepts.
LARGEST = """
cluster c {
  device gpu[0..4] { memory 1024 TiB  flops 1 MFLOPS  speed 1e-6 }
  link gpu[*] <-> gpu[*] { bandwidth 1 B/s  latency 1e6 s }
}
graph g {
  op a { time 1e6 s  output 1024 TiB }
  op b { time 1e-12 s }
  op c { time 0 s  params 1024 TiB }
  op d { flops 1e18 FLOP }
  op e { time 1 ms  temp 1024 TiB }
  a -> b { bytes 1024 TiB }
  b -> d
  c -> d
  d -> e
}
plan p {
  graph g  cluster c
  place a on gpu0  place b on gpu1  place c on gpu2  place d on gpu3  place e on gpu4
}
"""
SMALLEST = """
cluster c {
  device gpu[0..2] { memory 1 KiB  flops 1e18 FLOPS  speed 1e6 }
  link gpu[*] <-> gpu[*] { bandwidth 1e15 B/s  latency 1e-12 s }
}
graph g {
  op a { time 1e-12 s  output 1 B  params 1 B  temp 1 B }
  op b { flops 1 FLOP  output 1 B }
  op c { time 1e6 s }
  op d { time 0 s }
  a -> b -> d { bytes 1 B }
  a -> c -> d
}
plan p { graph g  cluster c  memory liveness  place a, b on gpu0  place c on gpu1  place d on gpu2 }
"""
HEURISTICS = ["msct", "metf", "mtopo", "heft", "cpop", "single", "roundrobin", "random",
              "expert"]


@pytest.mark.slow
@pytest.mark.parametrize("spec", [LARGEST, SMALLEST], ids=["largest", "smallest"])
def test_extreme_valid_values_go_through_every_stage(spec: str, tmp_path: Path) -> None:
    (tmp_path / "x.plan").write_text(spec)
    code, _, err = invoke(["check", "x.plan"], tmp_path)
    assert code == 0, err
    code, out, err = invoke(["simulate", "x.plan", "--json"], tmp_path)
    assert code == 0, err
    assert json.loads(out, parse_constant=_reject)["result"]["makespan_s"] > 0
    for algo in HEURISTICS:
        code, out, err = invoke(["solve", "x.plan", "--algo", algo, "--json"], tmp_path)
        doc = json.loads(out, parse_constant=_reject)  # strict JSON: no Infinity, no NaN
        assert code in (0, 3), (algo, err)
        assert code == 0 or doc["diagnostics"][0]["code"] in ("E304", "E704", "E706"), doc
        if code == 0:
            code, _, err = invoke(["solve", "x.plan", "--algo", algo, "--html", "r.html",
                                   "--out", "r.json"], tmp_path)
            assert code == 0, (algo, err)
            assert "</html>" in (tmp_path / "r.html").read_text(encoding="utf-8")
            assert json.loads((tmp_path / "r.json").read_text(), parse_constant=_reject)


@pytest.mark.slow
@pytest.mark.parametrize("spec", [LARGEST, SMALLEST], ids=["largest", "smallest"])
@pytest.mark.parametrize("algo", ["cpsat", "ilp", "auto"])
def test_extreme_valid_values_go_through_the_exact_solvers(spec: str, algo: str,
                                                            tmp_path: Path) -> None:
    (tmp_path / "x.plan").write_text(spec)
    run = subprocess.run([sys.executable, "-m", "planner", "solve", "x.plan", "--algo", algo,
                          "--time-limit", "5", "--json", "--html", "r.html"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    doc = json.loads(run.stdout, parse_constant=_reject)
    assert run.returncode == 0, (run.stderr, doc["diagnostics"])
    assert "Traceback" not in run.stderr
    assert doc["result"]["feasible"] is True


def _reject(constant: str) -> None:
    raise AssertionError(f"non-standard JSON constant {constant}")


@pytest.mark.parametrize(("option", "value", "code"), [
    ("--gap", "nan", "E608"), ("--gap", "-0.5", "E608"), ("--gap", "inf", "E608"),
    ("--time-limit", "nan", "E603"), ("--time-limit", "inf", "E603"),
    ("--time-limit", "-1", "E603")])
def test_solve_options_outside_their_range_are_usage_errors(option: str, value: str,
                                                            code: str) -> None:
    # before: `--gap nan` was an internal error (E999, exit 4) and `--time-limit nan` ran
    root = Path(__file__).resolve().parents[2]
    status, _, err = invoke(["solve", "specs/resnet.plan", "--algo", "cpsat", option, value],
                            root)
    assert status == 2 and f"error[{code}]: {option}: `" in err, err
