"""`emit` writes the ILP as readable .lp and .mps files that another solver can solve."""

from __future__ import annotations

import dataclasses
import importlib
import re
import shutil
import subprocess
from pathlib import Path

import highspy
import pytest

from planner import algorithms
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


@pytest.mark.skipif(shutil.which("glpsol") is None,
                    reason="GLPK's glpsol is not installed (run solvers/install.sh)")
@pytest.mark.parametrize(("ext", "reader"), [(".mps", "--freemps"), (".lp", "--lp")])
def test_glpk_reads_the_emitted_model_and_finds_the_same_optimum(
        tmp_path: Path, ext: str, reader: str) -> None:
    # Pyomo's free MPS opened with an OBJSENSE section: glpsol --freemps stopped at it,
    # "invalid indicator record"
    problem = random_problem(2, 6, 3)
    path = tmp_path / f"model{ext}"
    sol = run("ilp", problem, Options(emit=str(path), time_limit_s=30.0, gap=1e-7))
    assert sol.status == "optimal"
    out = tmp_path / "glpk.txt"
    proc = subprocess.run(["glpsol", reader, str(path), "-o", str(out)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0 and "INTEGER OPTIMAL SOLUTION FOUND" in proc.stdout, proc.stdout
    unit = float(re.search(r"times in units of (\S+) s", path.read_text()).group(1))  # type: ignore[union-attr]
    objective = float(re.search(r"Objective:\s+\S+ = (\S+)", out.read_text()).group(1))  # type: ignore[union-attr]
    assert objective * unit == pytest.approx(sol.info["objective_s"], rel=1e-6)


@pytest.mark.parametrize(("algo", "name", "message", "hint"), [
    ("ilp", "model.txt", "ILP cannot write its model as `.txt`",
     "use a path ending in .lp or .mps (or --algo cpsat, which writes .txt)"),
    ("ilp", "model", "ILP cannot write its model as `", "use a path ending in .lp or .mps"),
    ("cpsat", "model.LP", "CP-SAT cannot write its model as `.lp`",
     "use a path ending in .pbtxt or .txt (or --algo ilp, which writes .lp)"),
    ("cpsat", "model.mps.gz", "CP-SAT cannot write its model as `.gz`",
     "use a path ending in .pbtxt or .txt"),
])
def test_emit_refuses_a_format_the_model_has_not_before_any_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, algo: str, name: str, message: str,
        hint: str) -> None:
    # the ILP once built its whole model first: 2 min 42 s on gnmt8_small4, then E814
    module = importlib.import_module(algorithms.get(algo).module)

    def never(*_: object) -> None:
        raise AssertionError("the algorithm ran")

    monkeypatch.setattr(module, "place", never)
    with pytest.raises(UsageError) as err:
        run(algo, random_problem(2, 5, 2), Options(emit=str(tmp_path / name)))
    diag = err.value.diagnostics[0]
    assert (diag.code, diag.hints) == ("E814", (hint,))
    assert diag.message.startswith(message)
    assert list(tmp_path.iterdir()) == []


def test_every_emitted_format_is_one_its_writer_writes(tmp_path: Path) -> None:
    # the registry's endings (`AlgorithmInfo.emits`) are what the writers take
    problem = random_problem(2, 5, 2)
    for algo in ("ilp", "cpsat"):
        for ending in algorithms.get(algo).emits:
            path = tmp_path / f"{algo}{ending}"
            run(algo, problem, Options(emit=str(path), time_limit_s=10.0))
            text = path.read_text()
            assert ("variables {" in text) if algo == "cpsat" else ("planner ILP" in text)


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
