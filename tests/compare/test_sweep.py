"""Sweeps end to end: planning points, failure rows, the local executor, crashes, resume."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

import planner.algorithms
from planner.compare import (
    FIELD_NAMES,
    SweepResult,
    executors,
    plan_sweep,
    read_rows,
    run_sweep,
)
from planner.compare.executors import import_ray
from planner.compare.rows import row_key
from planner.compare.worker import Point
from planner.errors import SolverError, SpecError, UsageError

from .helpers import FIXTURES, SPECS, stable, standard_sweep
from .workers import VICTIM, always_crash, crash_on_heft_5gbs, hang_on_mtopo


def test_points_are_every_combination_in_a_fixed_order() -> None:
    sweep = standard_sweep()
    assert len(sweep.points) == 2 * 3 * 3 * 3
    assert [Path(s).name for s in sweep.specs] == ["fork.plan", "chain.plan"]
    first = sweep.points[0]
    assert (first.plan, first.algorithm, first.bandwidth, first.memory, first.devices) == (
        "fork_on_quad", "msct", "1 GB/s", "25%", "all")
    assert len({p.key() for p in sweep.points}) == len(sweep.points)
    assert standard_sweep().points == sweep.points


def test_bad_options_are_usage_errors_naming_the_option() -> None:
    with pytest.raises(UsageError, match="--algos: unknown algorithm `hfet`") as err:
        plan_sweep(list(SPECS), "msct,hfet")
    assert "did you mean `heft`?" in err.value.diagnostics[0].hints
    with pytest.raises(UsageError, match="--bandwidth: `fast`"):
        plan_sweep(list(SPECS), "msct", bandwidths="fast")
    with pytest.raises(UsageError, match="--time-limit"):
        plan_sweep(list(SPECS), "msct", time_limit_s=-1)
    with pytest.raises(UsageError, match="has no plan named `nope`"):
        plan_sweep(list(SPECS), "msct", plan="nope")
    with pytest.raises(UsageError, match="--jobs"):
        run_sweep(standard_sweep(), jobs=0)


def test_a_named_spec_that_does_not_load_is_a_spec_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.plan"
    bad.write_text("graph g { op a { time 1 parsec } }\n")
    with pytest.raises(SpecError):
        plan_sweep([bad], "msct")


def test_one_spec_alone_is_that_spec_not_its_letters(monkeypatch: pytest.MonkeyPatch) -> None:
    """plan_sweep("fork.plan") is plan_sweep(["fork.plan"]); before, each letter was a spec
    (SpecError for `f`, and a `/` in the path swept the whole disk), a Path a TypeError."""
    monkeypatch.chdir(FIXTURES)
    listed = plan_sweep(["fork.plan"], "msct").points
    assert len(listed) == 1
    assert plan_sweep("fork.plan", "msct").points == listed
    assert plan_sweep(Path("fork.plan"), "msct").points == listed


def test_a_spec_named_twice_is_compared_once(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """As `check` reads it once: before, `fork.plan ./fork.plan` (or a folder and a file in
    it) ran each point twice, each row in the table and `--out` and each win counted twice."""
    shutil.copytree(FIXTURES, tmp_path / "specs")
    monkeypatch.chdir(tmp_path / "specs")
    once = plan_sweep(["fork.plan"], "msct")
    twice = plan_sweep(["fork.plan", "./fork.plan", str(tmp_path / "specs" / "fork.plan")],
                       "msct")
    assert (twice.points, twice.specs) == (once.points, once.specs)
    folder = plan_sweep([".", "chain.plan"], "msct")
    assert sorted(Path(s).name for s in folder.specs) == ["chain.plan", "fork.plan"]
    assert len(folder.points) == len({p.key() for p in folder.points}) == 2
    Path("bad.plan").write_text("graph g { op a { time 1 parsec } }\n")
    with pytest.warns(Warning, match="W650"):  # found in a folder alone: skipped
        assert [w.code for w in plan_sweep(["."], "msct").warnings] == ["W650"]
    with pytest.raises(SpecError):  # named as well as found in the folder: it must load
        plan_sweep([".", "bad.plan"], "msct")


def test_default_folder_skips_broken_specs_and_cluster_libraries(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(FIXTURES, tmp_path / "specs")
    (tmp_path / "specs" / "broken.plan").write_text("plan p { graph nowhere }\n")
    monkeypatch.chdir(tmp_path)
    sweep = plan_sweep([], "msct")
    assert sweep.specs == ("specs/chain.plan", "specs/fork.plan")
    assert [w.code for w in sweep.warnings] == ["W650"]
    assert "specs/broken.plan" in sweep.warnings[0].message
    monkeypatch.chdir(tmp_path / "specs" / "clusters")
    with pytest.raises(UsageError, match="no SPEC given and there is no `specs` folder"):
        plan_sweep([], "msct")


def test_failures_become_rows_and_never_stop_the_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    real_run = planner.algorithms.run

    def flaky(name: str, problem: Any, options: Any = None) -> Any:
        if name == "heft":
            raise RuntimeError("boom")
        return real_run(name, problem, options)

    monkeypatch.setattr(planner.algorithms, "run", flaky)
    sweep = plan_sweep([SPECS[1]], "msct,heft", memories="1%,100%", devices="2,9")
    result = run_sweep(sweep, executor="inline")
    by = {(r["algorithm"], r["memory"], r["devices"]): r for r in result.rows}
    assert len(by) == 8
    assert by[("heft", "100%", "2")]["status"] == "error"
    assert by[("heft", "100%", "2")]["reason"].startswith("RuntimeError: boom")
    assert by[("msct", "1%", "2")]["status"] == "infeasible"
    assert by[("msct", "100%", "9")]["status"] == "invalid"
    assert "has only 4 devices" in by[("msct", "100%", "9")]["reason"]
    ok = by[("msct", "100%", "2")]
    assert ok["status"] == "feasible" and ok["ratio_to_best"] == 1.0
    assert "dropped 1 pin(s) to removed devices: head→gpu3" in ok["reason"]
    assert ok["devices_used"] <= ok["n_devices"] == 2
    assert ok["makespan_s"] >= ok["lower_bound_s"] > 0
    assert ok["peak_memory_bytes"] <= ok["memory_cap_bytes"]


def test_local_executor_gives_the_rows_of_the_reference(clean: SweepResult) -> None:
    assert {r["status"] for r in clean.rows} >= {"feasible", "infeasible"}
    local = run_sweep(standard_sweep(), executor="local", jobs=2)
    assert local.ran == 54 and local.reused == 0
    assert stable(local.rows) == stable(clean.rows)
    assert all(set(r) == set(FIELD_NAMES) for r in local.rows)


def test_a_crashing_worker_costs_one_row_and_resume_redoes_it(
        clean: SweepResult, tmp_path: Path) -> None:
    log = tmp_path / "rows.jsonl"
    result = run_sweep(standard_sweep(), executor="local", jobs=2, resume=log,
                       worker=crash_on_heft_5gbs)
    crashed = [r for r in result.rows if r["status"] == "crashed"]
    assert [(r["algorithm"], r["bandwidth"], r["memory"]) for r in crashed] == [VICTIM]
    assert "worker process died" in crashed[0]["reason"]
    others = [r for r in result.rows if r["status"] != "crashed"]
    reference = {row_key(r): r for r in stable(clean.rows)}
    # ratio_to_best may differ in the victim's group only
    for r in stable(others):
        want = dict(reference[row_key(r)])
        if (r["spec"], r["bandwidth"], r["memory"]) != (crashed[0]["spec"], *VICTIM[1:]):
            assert r == want
    again = run_sweep(standard_sweep(), executor="local", jobs=2, resume=log)
    assert (again.ran, again.reused) == (1, 53)
    assert stable(again.rows) == stable(clean.rows)
    assert stable(read_rows(log)) == stable(clean.rows)  # rewritten, sorted, complete


def test_interrupted_sweep_resumes_where_it_stopped(clean: SweepResult, tmp_path: Path) -> None:
    log = tmp_path / "rows.csv"
    seen: list[int] = []

    def stop_after_five(done: int, total: int, row: Any) -> None:
        seen.append(done)
        if done >= 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(standard_sweep(), executor="local", jobs=2, resume=log,
                  progress=stop_after_five)
    saved = read_rows(log)
    assert len(saved) >= 5
    again = run_sweep(standard_sweep(), executor="local", jobs=2, resume=log)
    assert again.reused == len(saved) and again.ran == 54 - len(saved)
    assert stable(again.rows) == stable(clean.rows)


def test_a_truncated_resume_file_loses_only_the_cut_rows(
        clean: SweepResult, tmp_path: Path) -> None:
    log = tmp_path / "rows.csv"
    run_sweep(standard_sweep(), executor="inline", resume=log)
    lines = log.read_text().splitlines(keepends=True)
    assert len(lines) == 55  # header + 54 rows
    log.write_text("".join(lines[:21]) + lines[21][:40])  # 20 rows and a torn one
    seen: list[Any] = []
    again = run_sweep(standard_sweep(), executor="inline", resume=log,
                      progress=lambda d, t, r: seen.append(r))
    assert (again.reused, again.ran) == (20, 34)
    assert seen[0] is None and len(seen) == 35
    assert stable(again.rows) == stable(clean.rows)


def test_workers_that_always_die_stop_the_sweep_with_a_diagnostic() -> None:
    sweep = plan_sweep([SPECS[0]], "msct,heft,mtopo,metf")
    with pytest.raises(SolverError) as err:
        run_sweep(sweep, executor="local", jobs=2, worker=always_crash)
    assert err.value.diagnostics[0].code == "E621"


#: the hard limit of the point that hangs (`hang_on_mtopo` sleeps an hour), and of the points
#: that finish in milliseconds: the deadline counts from submission, worker start-up
#: included, so a loaded machine must not push a finishing point past its limit
HANG_LIMIT_S, FINISH_LIMIT_S = 1.0, 120.0


@pytest.mark.slow
def test_a_point_past_its_hard_limit_becomes_a_timeout_row() -> None:
    sweep = plan_sweep([SPECS[0]], "msct,mtopo,heft", memories="50%,100%")
    t0 = time.monotonic()
    result = run_sweep(sweep, executor="local", jobs=2, worker=hang_on_mtopo,
                       deadline=lambda p: HANG_LIMIT_S if p.algorithm == "mtopo"
                       else FINISH_LIMIT_S)
    elapsed = time.monotonic() - t0
    # the hanging points are stopped at their limit: not before it, and long before their hour
    assert HANG_LIMIT_S <= elapsed < 30
    status = {(r["algorithm"], r["memory"]): r["status"] for r in result.rows}
    assert status == {("msct", "50%"): "feasible", ("mtopo", "50%"): "timeout",
                      ("heft", "50%"): "feasible", ("msct", "100%"): "feasible",
                      ("mtopo", "100%"): "timeout", ("heft", "100%"): "feasible"}
    reason = next(r["reason"] for r in result.rows if r["status"] == "timeout")
    assert reason.startswith("stopped after 1 s")


#: the forkserver's socket, `$TMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX`, adds 32 bytes to
#: TMPDIR; AF_UNIX takes 107 on Linux
SOCKET_SUFFIX, AF_UNIX_MAX = 32, 107


@pytest.mark.slow
def test_a_tmpdir_too_deep_for_the_forkserver_socket_still_runs_the_workers(
        tmp_path: Path) -> None:
    # before: `error[E999]: internal error: OSError: AF_UNIX path too long` (exit 4), as
    # under pytest-xdist or in a build sandbox; now the workers are spawned instead
    deep = tmp_path / ("t" * 90)
    deep.mkdir()
    assert len(str(deep)) + SOCKET_SUFFIX > AF_UNIX_MAX
    short = Path(tempfile.mkdtemp(prefix="sweep-", dir="/tmp"))  # the forkserver's way
    try:
        spawned, forked = (_compare_rows(t) for t in (deep, short))
    finally:
        shutil.rmtree(short, ignore_errors=True)
    assert sorted((r["algorithm"], r["status"]) for r in spawned) == [
        ("heft", "feasible"), ("msct", "feasible")]
    assert stable(spawned) == stable(forked)
    assert list(deep.iterdir()) == []  # nothing left behind


def _compare_rows(temp: Path) -> list[dict[str, Any]]:
    """The rows of `compare` on the fork spec (msct and heft, 2 workers), TMPDIR `temp`."""
    proc = subprocess.run(
        [sys.executable, "-m", "planner", "compare", str(SPECS[0]), "--algos", "msct,heft",
         "--jobs", "2", "--json"],
        env={**os.environ, "TMPDIR": str(temp)}, capture_output=True, text=True,
        timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    rows: list[dict[str, Any]] = json.loads(proc.stdout)["result"]
    return rows


def test_ray_missing_is_a_usage_error_with_an_install_hint(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(UsageError) as err:
        import_ray()
    assert "--executor ray" in err.value.diagnostics[0].message
    assert any("planner[ray]" in h for h in err.value.diagnostics[0].hints)


def test_the_lazy_facade_names_each_name_from_its_own_module() -> None:
    # `planner.compare` lists the names without importing the engine (start-up); each
    # resolves, on first use, to the object of the module that defines it
    import planner.compare as facade
    from planner.compare import executors, rows, settings, sweep, worker

    homes = (sweep, rows, settings, worker, executors)
    for name in facade.__all__:
        assert any(vars(m).get(name) is getattr(facade, name) for m in homes), name
    assert set(sweep.__all__) <= set(facade.__all__)
    with pytest.raises(AttributeError):
        facade.no_such_name  # noqa: B018


#: 200 MiB of weights, five ops, on two 100 MiB devices
_PACKING = ("cluster two {\n  device gpu[0..1] { memory 100 MiB  flops 1 TFLOPS }\n"
            "  link gpu[*] <-> gpu[*] { bandwidth 1 GB/s }\n}\ngraph packing {\n"
            + "".join(f"  op o{i} {{ time 1 ms  params {mib} MiB }}\n"
                      for i, mib in enumerate((45, 45, 40, 35, 35)))
            + "}\nplan p { graph packing  cluster two }\n")


def test_a_heuristic_that_found_no_plan_is_not_labelled_infeasible(tmp_path: Path) -> None:
    # 200 MiB on two 100 MiB devices, no subset making 100 MiB: nothing fits, but only the
    # exact model proves it (E813). m-ETF's E704 and `single`'s E706 prove nothing: their
    # rows said `infeasible` ("no plan fits the memory caps and pins"), as did a heuristic's
    # at 17% of transformer_big_dgx1's memory, where 18% has plans
    spec = tmp_path / "packing.plan"
    spec.write_text(_PACKING)
    sweep = plan_sweep([spec], "metf,single,cpsat", memories="1%,100%", time_limit_s=5)
    by = {(r["algorithm"], r["memory"]): r for r in run_sweep(sweep, executor="inline").rows}
    assert by[("metf", "100%")]["status"] == "no_plan"
    assert by[("metf", "100%")]["reason"].startswith("`metf` ran out of memory")
    assert by[("single", "100%")]["status"] == "no_plan"
    assert by[("cpsat", "100%")]["status"] == "infeasible"  # E813, a proof
    assert {by[(a, "1%")]["status"] for a in ("metf", "single", "cpsat")} == {"infeasible"}


def test_a_search_that_ended_at_its_limit_is_no_plan_not_a_solver_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # pipeilp's E709 and an exact solver's E811 (`SearchLimitError`, exit 6): no plan and
    # no proof, as a heuristic's E704; E709's row said `solver_error` ("an external solver
    # failed")
    from planner import algorithms
    from planner.errors import Diagnostic, SearchLimitError

    def out_of_time(*_: object, **__: object) -> None:
        raise SearchLimitError(Diagnostic("E811", "the exact solver found no plan either",
                                          None))

    monkeypatch.setattr(algorithms, "run", out_of_time)
    spec = tmp_path / "packing.plan"
    spec.write_text(_PACKING)
    (row,) = run_sweep(plan_sweep([spec], "cpsat", time_limit_s=0), executor="inline").rows
    assert row["status"] == "no_plan"
    assert "the exact solver found no plan either" in row["reason"]


#: a worker of the local executor's pool (its initializer) that logs what `cpsat` logs
#: when it falls back, as it would in a sweep
_WORKER_LOGS = """
import logging, multiprocessing, sys
from concurrent.futures import ProcessPoolExecutor
from planner.compare import executors

def falls_back():
    logging.getLogger("planner").warning("cpsat: falling back to the msct plan: no time")

if __name__ == "__main__":
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"),
                             initializer=executors._set_up_worker) as pool:
        pool.submit(falls_back).result()
    sys.stderr.write("done\\n")
"""


def test_workers_keep_their_log_lines_off_the_shared_stderr(tmp_path: Path) -> None:
    # before: each point that fell back printed `cpsat: falling back ...` from its worker,
    # naming no point and cutting into the progress bar; the reason is the row's
    script = tmp_path / "sweep.py"
    script.write_text(_WORKER_LOGS, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PLANNER_DEBUG"}
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "done\n"


def test_a_factor_out_of_the_specs_range_is_an_invalid_row_not_an_error() -> None:
    """`--memory 1e10x` gave `heft — error`, `OverflowError: cannot convert float infinity
    to integer` where the factor overflowed, and a 610-billion-MiB cap where it did not."""
    result = run_sweep(plan_sweep([SPECS[1]], "heft", memories="1e10x,100%"),
                       executor="inline")
    by = {r["memory"]: r for r in result.rows}
    assert by["1e+12%"]["status"] == "invalid"
    assert by["1e+12%"]["reason"].startswith("--memory 1e+12%: makes `gpu0`")
    assert by["100%"]["status"] == "feasible"


@pytest.mark.parametrize(("algorithm", "limit", "hard"), [
    ("cpop", 0.0, 3600.0), ("heft", 60.0, 3600.0), ("pipedp", 0.0, 3600.0),
    ("auto", 0.0, 30.0), ("search", 10.0, 50.0), ("cpsat", 60.0, 150.0)])
def test_an_algorithm_that_takes_no_limit_is_stopped_only_when_hung(
        algorithm: str, limit: float, hard: float) -> None:
    """compare.md: the heuristics and baselines, pipedp and hybrid "take no limit and run as
    `solve` runs them, whatever `--time-limit` says". Before, their worker was stopped at
    twice --time-limit plus 30 s too: at 0, cpop of a 106,000-op GNMT after 30 s, where
    `solve` plans it in 17.5 s (helper)."""
    point = Point("s", "s.plan", "p", algorithm, "spec", "spec", "spec", limit)
    assert executors.hard_limit(point) == hard
    reason = executors.timed_out(point, hard).row["reason"]
    assert reason.startswith(f"stopped after {hard:g} s (the hard limit: ")
    assert ("an hour" in reason) == (hard == 3600.0)
