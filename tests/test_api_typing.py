"""The API is typed for its users: mypy, run on a user's script as a user runs it, sees
precise types (no `Any`) and catches a misuse. Skipped without mypy (`pip install -e
'.[test]'` brings it)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = '''
import warnings

import networkx as nx  # type: ignore[import-untyped, unused-ignore]
import planner

b = planner.ProblemBuilder("p")
b.device("gpu0", memory="16 GiB")
b.op("a", time="1 ms")
problem = b.build()
result = planner.solve(problem, "metf")
reveal_type(result)
reveal_type(result.placement_by_name)
reveal_type(result.schedule[0])
reveal_type(result.plan.placement)
reveal_type(planner.lower_bound(problem))
reveal_type(planner.ProblemBuilder.from_networkx(nx.DiGraph()))
reveal_type(planner.read_plan(problem, result.to_json()))
reveal_type(result.replicas)
try:
    planner.load("x.plan")
except planner.SpecError as err:
    reveal_type(err.diagnostics)
with warnings.catch_warnings(record=True) as caught:
    planner.loads("graph g { op a { time 1 ms  params 1.5 B } }")
for w in caught:
    if isinstance(w.message, planner.PlannerWarning):
        reveal_type(w.message.diagnostic)
        reveal_type(w.message.code)
        reveal_type(w.message.span)
warnings.simplefilter("error", planner.PlannerWarning)
'''


def _mypy(tmp_path: Path, source: str) -> str:
    api = pytest.importorskip("mypy.api", reason="mypy is not installed (pip install mypy)")
    script = tmp_path / "user_script.py"
    script.write_text(source)
    out, err, _ = api.run([str(script), "--strict", "--no-error-summary", "--cache-dir",
                           str(tmp_path / "cache"), "--follow-imports", "silent"])
    return out + err


@pytest.mark.slow
def test_a_users_script_sees_precise_types(tmp_path: Path) -> None:
    out = _mypy(tmp_path, SCRIPT)
    revealed = [line.split("Revealed type is ", 1)[1].strip('"').replace("builtins.", "")
                for line in out.splitlines() if "Revealed type is" in line]
    assert revealed == [
        "planner.api.result.Result",
        "dict[str, str]",
        "tuple[str, str, float, float, fallback=planner.api.result.ScheduledOp]",
        "tuple[int, ...]",
        "planner.bounds.Bounds",
        "planner.api.builder.ProblemBuilder",
        "planner.api.result.Result",
        "dict[str, list[str]]",
        "tuple[planner.errors.Diagnostic, ...]",
        "planner.errors.Diagnostic",
        "str",
        "tuple[str, int, int, int, int, int, int, fallback=planner.errors.Span] | None",
    ], out
    assert ": error:" not in out, out


@pytest.mark.slow
def test_mypy_catches_a_misused_builder(tmp_path: Path) -> None:
    out = _mypy(tmp_path, 'import planner\nb = planner.ProblemBuilder("p")\n'
                          'b.op("a", time=["1 ms"])\nb.link("d0", "d1")\n')
    assert 'Argument "time" to "op" of "ProblemBuilder" has incompatible type' in out, out
    assert 'Missing named argument "bandwidth"' in out, out
