"""`solve`'s progress line shows a time limit (`auto · 3.1/10 s`) only for the algorithms
that take one (`--time-limit`, declared by the registry's `options`); a heuristic's line
shows the elapsed time alone (`metf · 0.4 s`), never a limit it does not have."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from planner import algorithms
from planner.algorithms.base import Options, Solution
from planner.cli.applies import applicable_to
from planner.model import Problem

from .helpers import PLACED, invoke

TAKING = applicable_to("--time-limit")


def _first_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: list[str]) -> str:
    """The progress line `solve ARGS` shows as its algorithm starts (the algorithm itself
    replaced by m-ETF, which every registered name may stand in for here)."""
    lines: list[str] = []
    real = algorithms.run

    def run(name: str, problem: Problem, options: Options | None = None,
            **more: bool) -> Solution:
        if options is None or options.progress is None:  # a pipeline report's rows (its
            return real(name, problem, options, **more)  # module bound to this run, when
            # imported after the patch: run alone, the test failed on `one_pipeline`)
        lines.append(options.progress.__self__.line())  # type: ignore[attr-defined]
        return real("metf", problem, options)

    monkeypatch.setattr(algorithms, "run", run)
    algo = args[args.index("--algo") + 1]
    pipeline = not algorithms.get(algo).serves("makespan")  # pipedp, ...: E625 otherwise
    (tmp_path / "s.plan").write_text(
        PLACED.replace("cluster c  place", "cluster c  objective pipeline  place")
        if pipeline else PLACED)
    code, _, err = invoke(["solve", "s.plan", *args], tmp_path)
    assert code == 0, err
    (line,) = lines
    return line


def test_the_registry_has_both_kinds() -> None:
    assert "auto" in TAKING and "metf" not in TAKING
    assert set(algorithms.names()) - set(TAKING)


@pytest.mark.parametrize("algo", algorithms.names())
def test_a_limit_is_shown_only_where_the_algorithm_takes_one(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, algo: str) -> None:
    line = _first_line(monkeypatch, tmp_path, ["--algo", algo])
    if algo in TAKING:  # its default limit: 10 s for auto, 60 s for the others
        assert re.match(rf"{algo} · 0\.\d/{10 if algo == 'auto' else 60} s · ", line), line
    else:
        assert re.match(rf"{algo} · 0\.\d s · ", line), line
        assert "/" not in line.split(" · ")[1]


def test_a_given_limit_is_the_one_shown(monkeypatch: pytest.MonkeyPatch,
                                        tmp_path: Path) -> None:
    line = _first_line(monkeypatch, tmp_path, ["--algo", "auto", "--time-limit", "3"])
    assert line.startswith("auto · 0.") and " · ".join(line.split(" · ")[:2]).endswith("/3 s")
    # --time-limit 0: auto's best heuristic alone, no limit to count down
    line = _first_line(monkeypatch, tmp_path, ["--algo", "auto", "--time-limit", "0"])
    assert re.match(r"auto · 0\.\d s · ", line), line
