"""HiGHS runs where the caller's `sys.stderr` has no file descriptor (click's CliRunner, an
IDE's console, a notebook's stream): pyomo asks `logging.lastResort.stream.fileno()` as
HiGHS takes a model (where no logging handler is set: pytest sets one, so the calls run in
a process of their own here), and the `UnsupportedOperation` it raised was "highs failed:
fileno", so `planner.solve(..., "ilp")` returned its fallback (ResNet-50's spec: status
`fallback`, HiGHS `error`, where the same call beside a real stderr is `feasible`), and
`pipeilp` its warm start. `quiet_stdout` now lends the stream a descriptor while the
solver runs (`exact.quiet`)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
SCRIPT = """
import contextlib, io, json, sys
sys.path[:0] = [{tests!r}, {pipe!r}]
import planner
from exact.instances import random_problem
from pipe_support import chain_text
out = {{}}
for name, problem in (("ilp", random_problem(3, 8, 2)), ("pipeilp", planner.loads(
        chain_text(6, 3, outputs_mb=[4.0] * 6, memory="144 MB")).plan("p"))):
    for way in ("plain", "captured"):
        with contextlib.redirect_stderr(io.StringIO()) if way == "captured" else \\
                contextlib.nullcontext():
            r = planner.solve(problem, name, time_limit_s=10)
        out[f"{{name}} {{way}}"] = [r.status, r.info.get("solver_status"),
                                    str(r.info.get("reason", ""))]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def runs() -> dict[str, list[str]]:
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(
        tests=str(TESTS), pipe=str(TESTS / "pipeline"))], capture_output=True, text=True,
        check=True, timeout=300)
    assert done.stdout.strip(), (done.stdout, done.stderr)
    result: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("algorithm", ["ilp", "pipeilp"])
def test_highs_solves_beside_a_stderr_without_a_descriptor(
        runs: dict[str, list[str]], algorithm: str) -> None:
    status, solver, reason = runs[f"{algorithm} captured"]
    assert solver != "error" and "failed" not in reason, runs
    assert [status, solver, reason] == runs[f"{algorithm} plain"]


def test_the_stream_lent_writes_through_and_is_put_back() -> None:
    from planner.algorithms.exact import quiet

    said = io.StringIO()
    with contextlib.redirect_stderr(said), quiet.quiet_stdout():
        assert sys.stderr.fileno() >= 0
        print("kept", file=sys.stderr)
        inside = sys.stderr
    assert said.getvalue() == "kept\n" and inside is not said and sys.stderr is not inside
    with pytest.raises(io.UnsupportedOperation):
        said.fileno()
