"""`emit` writes the ILP as readable .lp and .mps files that another solver can solve."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import highspy
import pytest

from planner.algorithms import Options, run
from planner.errors import UsageError

from .instances import random_problem


@pytest.mark.parametrize("ext", [".lp", ".mps"])
def test_emitted_model_is_readable_and_has_the_same_optimum(tmp_path: Path, ext: str) -> None:
    problem = random_problem(2, 6, 3)
    path = tmp_path / f"model{ext}"
    sol = run("ilp", problem, Options(emit=str(path), time_limit_s=30.0, gap=1e-7))
    assert sol.status == "optimal"
    text = path.read_text()
    mark = "\\" if ext == ".lp" else "*"
    assert text.startswith(f"{mark} planner ILP of plan `{problem.name}`")
    assert f"{mark} unit 0: 0=op0" in text  # the legend names units and devices
    assert "dev0" in text
    assert ("c_l_precedence(" in text) if ext == ".lp" else ("ROWS" in text and "COLUMNS" in text)
    unit = float(re.search(r"times in units of (\S+) s", text).group(1))  # type: ignore[union-attr]

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    assert h.getInfo().objective_function_value * unit == pytest.approx(
        sol.info["objective_s"], rel=1e-6)


def test_emit_rejects_an_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        run("ilp", random_problem(2, 5, 2), Options(emit=str(tmp_path / "model.txt")))
    assert ".lp or .mps" in err.value.diagnostics[0].hints[0]
    assert not (tmp_path / "model.txt").exists()


def test_cpsat_emits_its_model_as_text_proto(tmp_path: Path) -> None:
    path = tmp_path / "model.pbtxt"
    run("cpsat", random_problem(2, 5, 2), Options(emit=str(path), time_limit_s=10.0))
    text = path.read_text()
    assert "variables" in text and "no_overlap" in text
    with pytest.raises(UsageError):
        run("cpsat", random_problem(2, 5, 2), Options(emit=str(tmp_path / "m.lp")))


def test_a_name_cannot_end_its_legend_line(tmp_path: Path) -> None:
    # a name built in Python (specs reject control characters: E261) once ended its
    # comment and injected an LP row
    problem = random_problem(2, 5, 2)
    graph = problem.graph
    bad = dataclasses.replace(graph.ops[0], name="a\nc_e_x: +1 C >= 1000000\r\u2028")
    problem = dataclasses.replace(problem, graph=dataclasses.replace(
        graph, ops=(bad, *graph.ops[1:])))
    path = tmp_path / "model.lp"
    run("ilp", problem, Options(emit=str(path), time_limit_s=30.0))
    text = path.read_text()
    assert "0=a\\x0ac_e_x: +1 C >= 1000000\\x0d\\u2028" in text
    legend = text.split("\\* Source Pyomo", 1)[0].splitlines()  # planner's lines
    assert len(legend) == 12 and all(line.startswith("\\ ") for line in legend)
