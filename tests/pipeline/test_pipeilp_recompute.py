"""pipeilp with recomputation that finds the plans that exist (issue 38 item 3, issue 40
finding 6), on the pipeline cost model every solver shares (`split.resource_loads`,
`split.stage_bytes`).

- A GPT-like training graph where only recomputing splits fit: pipeilp returns one that
  fits by the shared memory rule, with T no more than the best recomputing contiguous
  split's (enumerated here, independently of pipeilp's DP).
- Exit codes by cause: a spec nothing fits is exit 3 (E708, the solver's proof); a time
  limit that found nothing is E709, exit 6, and says so (never "it was optimal"); a solver
  that failed is E711, exit 4; a time limit with a warm start returns the warm start,
  labelled `fallback` with the reason.
- Brute force on tiny chains (<= 6 units, 3 devices): pipeilp's optimum equals the least
  period over every placement and every choice of recomputing devices, under GPipe (the
  model covers every placement); under 1F1B, over the placements with one stage per device.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest
from pipe_support import chain_text, tight_text, two_device_text

from planner import load, loads
from planner.algorithms import Options, run
from planner.algorithms.exact import backends
from planner.algorithms.pipeilp import contiguous_splits, evaluate
from planner.algorithms.pipeilp import solve as pipeilp_solve
from planner.algorithms.pipeilp import warm as pipeilp_warm
from planner.codes import CODES
from planner.errors import Diagnostic, InfeasibleError, PlannerError, SearchLimitError, SolverError
from planner.model import Pipeline, Problem
from planner.pipeline import schedule as pipeline_schedule
from planner.pipeline.split import Split, resource_loads, split_of, stage_bytes
from planner.pipeline.units import units

pytestmark = pytest.mark.skipif(not backends.available("highs"),
                                reason="HiGHS (highspy) is not installed")

ROOT = Path(__file__).resolve().parents[2]
#: `tight_text`'s memory where only [f0 f1 | f2 f3] fits, d0 recomputing: d0 18 MB once +
#: 2 in flight x 3 MB sent + 4 receive buffers x 1 MB gradient = 28 MB, d1 18 MB + 3 MB
#: received + 4 receive buffers x 3 MB input = 33 MB; without recomputing d0 needs 40 MB,
#: the whole model on one device 36 MB (25 MB before 2026-12-07's receive buffers)
FITS = "34 MB"


def fits_by_the_shared_rule(problem: Problem, placement: tuple[int, ...],
                            recompute: list[str]) -> bool:
    """The plan fits by `stage_bytes` with the devices it says recompute."""
    index = problem.cluster.device_index
    pipe = problem.pipeline or Pipeline()
    held = stage_bytes(problem, split_of(problem, placement), pipe,
                       [index[n] for n in recompute])
    return all(h <= d.memory_bytes for h, d in zip(held, problem.cluster.devices, strict=True))


def best_split(problem: Problem, split: Split) -> float:
    """The least period of `split`, each device recomputing or not (INF: nothing fits)."""
    pipe = problem.pipeline or Pipeline()
    caps = [d.memory_bytes for d in problem.cluster.devices]
    used = sorted(set(split.devices))
    best = math.inf
    for n in range(len(used) + 1):
        for redo in itertools.combinations(used, n):
            held = stage_bytes(problem, split, pipe, redo)
            if all(held[d] <= caps[d] for d in used):
                best = min(best, resource_loads(problem, split, redo).period_s)
    return best


def best_contiguous(problem: Problem, devices: int) -> tuple[float, bool]:
    """Over every contiguous split into at most `devices` stages on alike devices (one
    stage each, in index order): the least period recomputing where chosen, and whether
    any split fits without recomputing."""
    n = units(problem).count
    pipe = problem.pipeline or Pipeline()
    caps = [d.memory_bytes for d in problem.cluster.devices]
    best, plain = math.inf, False
    for s in range(1, devices + 1):
        for cuts in itertools.combinations(range(1, n), s - 1):
            split = Split((0, *cuts, n), tuple(range(s)))
            held = stage_bytes(problem, split, pipe)
            plain |= all(held[d] <= caps[d] for d in range(s))
            best = min(best, best_split(problem, split))
    return best, plain


@pytest.fixture(scope="module")
def tiny_gpt(tmp_path_factory: pytest.TempPathFactory) -> Problem:
    """A 2-layer GPT training step (the generator's, as for GPT-24) under GPipe, 8
    micro-batches, on four alike devices with room for it only when recomputing."""
    out = tmp_path_factory.mktemp("gpt") / "tiny.plan"
    subprocess.run([sys.executable, "-m", "planner", "generate", "transformer", "--layers",
                    "2", "--hidden", "64", "--heads", "2", "--seq", "64", "--batch", "2",
                    "--vocab", "100", "--training", "--name", "tiny", "--cluster",
                    str(ROOT / "specs" / "clusters" / "small4.plan"), "-o", str(out)],
                   check=True, capture_output=True, cwd=ROOT)
    roomy = load(str(out), root=str(out.parent)).plans["tiny_small4"]
    roomy = dataclasses.replace(roomy, pipeline=Pipeline(microbatches=8, schedule="gpipe"))
    # the cap: what the best recomputing 4-stage split needs, plus a little; every split
    # without recomputation needs more (GPipe keeps 8 micro-batches' activations)
    n = units(roomy).count
    need = min(max(stage_bytes(roomy, Split((0, *cuts, n), (0, 1, 2, 3)), roomy.pipeline,
                               (0, 1, 2, 3)))
               for cuts in itertools.combinations(range(1, n), 3))
    cap = int(need * 1.15)
    cluster = dataclasses.replace(roomy.cluster, devices=tuple(
        dataclasses.replace(d, memory_bytes=cap) for d in roomy.cluster.devices))
    return dataclasses.replace(roomy, cluster=cluster)


@pytest.mark.slow
def test_only_recomputing_splits_fit_and_pipeilp_finds_the_best(tiny_gpt: Problem) -> None:
    p = tiny_gpt
    contiguous, plain = best_contiguous(p, 4)
    assert math.isfinite(contiguous) and not plain  # only recomputing splits fit
    with pytest.raises(InfeasibleError) as err:
        run("pipedp", p)
    assert [d.code for d in err.value.diagnostics] == ["E707"]
    s = run("pipeilp", p, Options(time_limit_s=5.0))
    assert s.status in ("optimal", "feasible")
    assert s.info["recompute"], s.info
    assert fits_by_the_shared_rule(p, s.plan.placement, s.info["recompute"])
    index = p.cluster.device_index
    period = resource_loads(p, split_of(p, s.plan.placement),
                            [index[n] for n in s.info["recompute"]]).period_s
    assert s.info["period_s"] == pytest.approx(period, rel=1e-12)
    assert period <= contiguous * (1 + 1e-9)
    # the DP's warm start is that best recomputing contiguous split
    dp = min(best_split(p, split) for split in contiguous_splits(p).values())
    assert dp == pytest.approx(contiguous, rel=1e-9)


@pytest.mark.slow
def test_a_spec_nothing_fits_is_exit_3_with_the_solvers_proof(tmp_path: Path) -> None:
    spec = tmp_path / "tight.plan"
    spec.write_text(tight_text("19 MB"))
    proc = subprocess.run([sys.executable, "-m", "planner", "solve", str(spec), "--algo",
                           "pipeilp", "--root", str(tmp_path)],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 3, proc.stderr
    assert "error[E708]" in proc.stderr and "even recomputing" in proc.stderr
    assert "a bug" not in proc.stderr


def _no_solution(monkeypatch: pytest.MonkeyPatch, message: str, *,
                 warm_start: bool = True) -> Problem:
    """`tight_text(FITS)`'s plan, pipeilp's solver made to end with no solution and
    `message`; without `warm_start`, no contiguous split fits either (none to fall back to)."""
    def solver(*_: object, **__: object) -> backends.Outcome:
        return backends.Outcome("nosolution", message)

    if not warm_start:
        monkeypatch.setattr(pipeilp_warm, "contiguous_splits", lambda *_: {})
    monkeypatch.setattr(pipeilp_solve, "_run_solver", solver)
    return loads(tight_text(FITS)).plan("p")


def _no_plan(monkeypatch: pytest.MonkeyPatch, message: str,
             raises: type[PlannerError]) -> tuple[PlannerError, Diagnostic]:
    """What pipeilp raises (`raises`) when its solver ends with `message` and no solution,
    with nothing to fall back to; and its one diagnostic."""
    p = _no_solution(monkeypatch, message, warm_start=False)
    with pytest.raises(raises) as err:
        run("pipeilp", p)
    (diag,) = err.value.diagnostics
    return err.value, diag


def test_a_time_limit_that_found_nothing_is_e709_exit_6_and_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    err, e709 = _no_plan(monkeypatch, "highs gave no solution (its time limit was reached)",
                         SearchLimitError)
    assert err.exit_code == 6
    assert e709.code == "E709"
    assert "time limit" in e709.message and "not a proof" in e709.message
    assert "it was optimal" not in str(err)
    assert "a longer --time-limit may find one" in e709.hints
    assert CODES["E709"].exit == 6


def test_a_solver_that_said_optimal_without_a_solution_is_a_failure_not_a_time_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    err, diag = _no_plan(monkeypatch, "highs said it was optimal but gave no solution",
                         SolverError)
    assert diag.code == "E711" and err.exit_code == 4
    assert "--time-limit" not in str(err)


def test_a_time_limit_with_a_warm_start_returns_it_labelled_fallback(
        monkeypatch: pytest.MonkeyPatch) -> None:
    p = _no_solution(monkeypatch, "highs gave no solution (its time limit was reached)")
    s = run("pipeilp", p)
    assert s.status == "fallback"
    assert s.info["warm_start"] == "recomputing contiguous split"
    assert s.info["reason"] == "highs gave no solution (its time limit was reached)"
    assert s.info["recompute"] == ["d0"]
    assert fits_by_the_shared_rule(p, s.plan.placement, ["d0"])
    dev = [s.plan.placement[ops[0]] for ops in units(p).members]
    assert dev == [0, 0, 1, 1]


@pytest.mark.slow
def test_solve_exits_0_with_a_recomputing_plan_where_pipedp_finds_none(tmp_path: Path) -> None:
    spec = tmp_path / "tight.plan"
    spec.write_text(tight_text(FITS))
    proc = subprocess.run([sys.executable, "-m", "planner", "solve", str(spec), "--algo",
                           "pipeilp", "--json", "--root", str(tmp_path)],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)["result"]
    assert result["recompute"] == ["d0"] and result["pipeline"]["fits"]
    assert result["pipeline"]["period_s"] == pytest.approx(result["period_s"], rel=1e-12)


def _cli(*args: str, cwd: Path = ROOT) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "planner", *args], capture_output=True,
                          text=True, check=False, cwd=cwd)
    return proc.returncode, proc.stdout + proc.stderr


def test_a_recomputing_plan_reads_back_as_it_was_solved(tmp_path: Path) -> None:
    """Before: the plan file held no `recompute`, so `simulate --placement` of it (and
    `--stages` of `solve --json`) ran it without recomputation: E401, exit 3, where
    `solve` had said it fits."""
    spec = tmp_path / "tight.plan"
    spec.write_text(tight_text(FITS))
    out, doc = tmp_path / "plan.json", tmp_path / "solve.json"
    code, text = _cli("solve", str(spec), "--algo", "pipeilp", "--json", "--out", str(out))
    assert code == 0, text
    doc.write_text(text)
    solved = json.loads(text)["result"]["pipeline"]
    assert json.loads(out.read_text())["recompute"] == ["d0"]
    for given in (("--placement", str(out)), ("--stages", str(doc)),
                  ("--placement", str(doc))):
        code, text = _cli("simulate", str(spec), *given, "--json")
        assert code == 0, (given, text)
        again = json.loads(text)["result"]["pipeline"]
        assert again["iteration_s"] == solved["iteration_s"]
        assert [d["memory_bytes"] for d in again["devices"]] == [
            d["memory_bytes"] for d in solved["devices"]]
    # a device no cluster holds, and no list: located, with the codes of a plan file
    for value, code_, words in ((["d9"], "E504", "unknown device `d9` in recompute"),
                                ("d0", "E515", "`recompute` must be a list of device names")):
        bad = {**json.loads(out.read_text()), "recompute": value}
        out.write_text(json.dumps(bad, indent=2))
        code, text = _cli("simulate", str(spec), "--placement", str(out))
        assert code == 1 and f"error[{code_}]: {words}" in text
        assert f"{out.name}:" in text.split(f"error[{code_}]")[0].splitlines()[-1]


# -- brute force on tiny chains ---------------------------------------------------------------


def tiny(seed: int, n: int, schedule: str, contention: str) -> Problem:
    """A random chain with skip edges of `n` training units on 3 devices of different
    speeds and memories, links of different bandwidths (one pair unlinked one way); for an
    odd seed, the first unit reads a data input (no backward op: the model's input, which
    a recomputing stage holds per micro-batch in flight, as its last op's output)."""
    rng = random.Random(seed)
    lines = ["cluster c {"]
    for d in range(3):
        lines.append(f"  device d{d} {{ memory {rng.choice([30, 45, 60, 80])} MB; speed "
                     f"{rng.choice([0.5, 1.0, 2.0])} }}")
    for a, b in itertools.permutations(range(3), 2):
        lines.append(f"  link d{a} -> d{b} {{ bandwidth {rng.choice([1, 5, 20])} GB/s "
                     f"latency {rng.choice([0, 10])} us }}")
    lines += ["}", "graph g {"]
    for k in range(n):
        lines += [f"  op u{k} {{ time {rng.randint(1, 9)} ms; output {rng.randint(1, 8)} MB;"
                  f" params {rng.randint(0, 4)} MB }}",
                  f"  op u{k}.bwd {{ time {rng.randint(1, 18)} ms; output "
                  f"{rng.randint(0, 3)} MB; backward_of u{k} }}",
                  f"  u{k} -> u{k}.bwd", f"  colocate u{k}, u{k}.bwd"]
    for k in range(1, n):
        for j in {k - 1, rng.randrange(k)}:
            lines += [f"  u{j} -> u{k}",
                      f"  u{k}.bwd -> u{j}.bwd {{ bytes {rng.randint(1, 8)} MB }}"]
    if seed % 2:
        lines += [f"  op x {{ time 0 ms; output {rng.randint(1, 8)} MB }}", "  x -> u0",
                  "  x -> u0.bwd", "  colocate x, u0"]
    lines.append("}")
    lines.append(f"plan p {{ graph g; cluster c; objective pipeline; microbatches 4; "
                 f"schedule {schedule}; contention {contention} }}")
    return loads("\n".join(lines)).plan("p")


def brute_force(problem: Problem, one_stage_each: bool) -> float:
    """The least period over every placement of the units and every set of recomputing
    devices that fits by `stage_bytes` (with `one_stage_each`, placements whose devices
    each hold one run of units)."""
    u = units(problem)
    best = math.inf
    for dev in itertools.product(range(len(problem.cluster.devices)), repeat=u.count):
        split = split_of(problem, tuple(dev[k] for k in u.unit_of))
        if one_stage_each and len(set(split.devices)) < split.stages:
            continue
        best = min(best, best_split(problem, split))
    return best


#: 4 to 6 units; GPipe and 1F1B (one stage per device, as torch's schedules run them);
#: every contention model; recomputation on 0 to 3 devices among the optima
CASES = [(seed, 4 + seed % 3, "gpipe" if seed < 10 else "1f1b",
          ("link", "device", "none")[seed % 3]) for seed in range(14)]


@pytest.mark.parametrize(("seed", "n", "schedule", "contention"), CASES)
def test_pipeilp_equals_brute_force_on_tiny_chains(seed: int, n: int, schedule: str,
                                                   contention: str) -> None:
    p = tiny(seed, n, schedule, contention)
    covered = brute_force(p, one_stage_each=True)
    try:
        s = run("pipeilp", p)
    except InfeasibleError:
        assert covered == math.inf
        return
    period = s.info["period_s"]
    assert period == pytest.approx(evaluate(p, s.plan.placement).period_s, rel=1e-12)
    assert fits_by_the_shared_rule(p, s.plan.placement, s.info["recompute"])
    assert period >= brute_force(p, one_stage_each=False) * (1 - 1e-9)
    assert period == pytest.approx(covered, rel=1e-6)
    if schedule == "gpipe":  # proved among the placements torch's schedules run
        assert s.info.get("proved_in_order") is True or s.info["proved"] is True


def test_a_given_warm_start_outside_the_1f1b_model_neither_bounds_it_nor_is_misdescribed(
        ) -> None:
    from planner.plan import Plan

    p = loads(tight_text("64 MB")).plan("p")
    looped = tuple((0, 1, 0, 1)[k] for k in units(p).unit_of)  # two stages on each device
    s = run("pipeilp", p, Options(warm_start=Plan(looped, algorithm="given")))
    assert s.status in ("optimal", "feasible")
    split = split_of(p, s.plan.placement)
    assert len(split.devices) == len(set(split.devices))  # one stage per device
    assert s.info["period_s"] <= evaluate(p, looped).period_s
    assert "satisfies it" not in s.info.get("reason", "")


@pytest.mark.parametrize("training", [True, False])
def test_under_1f1b_no_more_stages_than_micro_batches(training: bool) -> None:
    # six alike units on three devices: three stages would be best, but 1F1B with two
    # micro-batches runs two stages at most (torch's Schedule1F1B; pipedp's cap too)
    p = loads(chain_text(6, 3, training=training, microbatches=2, bandwidth="100 GB/s",
                         latency="1 us")).plan("p")
    s = run("pipeilp", p)
    assert split_of(p, s.plan.placement).stages <= 2
    assert s.info["period_s"] == pytest.approx(evaluate(p, s.plan.placement).period_s)


def test_auto_under_data_parallel_auto_replicates_where_no_split_fits() -> None:
    """Before: under `data_parallel auto`, where no split fits without recomputing, `auto`
    kept the recomputing split (397.1 ms here; 281.1 ms before a recomputing stage held the
    model's 10 MB output per micro-batch in flight) without trying the hybrid layouts, whose
    replicas hold fewer micro-batches each: `--algo hybrid` runs 192 ms (AlexNet's
    PipeDream profile, 4 GPUs of 12 GiB, GPipe, 32 micro-batches: 683.2 ms, against
    1.261 s recomputing; docs/pipelines.md).
    The devices: 170 MB before 2026-12-07's receive buffers, 240 MB since. That split,
    [f0 f1 f2 | f3] with d0 recomputing, holds 110 + 8 x 1 MB (gradient buffers) = 118 MB
    on d0 and 160 + 8 x 10 MB (input buffers) = 240 MB on d1; without recomputing every
    split needs 248 MB or more (that one: 240 + 8 x 1 MB on d0)."""
    p = loads(two_device_text("240 MB", [10, 10, 10, 10], "microbatches 8; schedule gpipe; "
                              "data_parallel auto")).plan("p")
    with pytest.raises(InfeasibleError):
        run("pipedp", p)
    s = run("auto", p, Options(time_limit_s=1.0))
    assert s.info["chosen"] == "hybrid"
    assert s.info["iteration_s"] == run("hybrid", p).info["iteration_s"] == pytest.approx(0.192)
    assert s.info["candidates"]["recomputing contiguous split"] == pytest.approx(0.39712)


def test_auto_recomputes_where_the_caps_shaped_pipedps_split_and_that_runs_faster() -> None:
    """Before: `auto` kept pipedp's split, which the memory shaped (300.6 ms here), where
    the recomputing contiguous split runs 280.6 ms (AlexNet's PipeDream profile, 4 GPUs
    of 13.66 GiB at 1 GB/s, GPipe, 32 micro-batches: 12.935 s, now 3.233 s; docs/pipelines.md).
    (The last unit's 20 MB output on 200 MB devices before a recomputing stage held the
    model's output per micro-batch in flight: its recomputing d1 then held 225 MB.)
    The devices: 190 MB before 2026-12-07's receive buffers, 230 MB since: the recomputing
    [f0 f1 | f2 f3] holds 120 + 8 x 1 MB (gradient buffers) = 128 MB on d0 and 180 + 8 x
    5 MB (input buffers) = 220 MB on d1; pipedp's [f0 f1 f2 | f3] 168 and 200 MB; the
    faster [f0 f1 | f2 f3] without recomputing needs 240 MB on d1."""
    p = loads(two_device_text("230 MB", [10, 5, 5, 15], "microbatches 8; schedule gpipe")
              ).plan("p")
    assert p.pipeline is not None
    s = run("auto", p, Options(time_limit_s=1.0))
    pure = run("pipedp", p)
    assert "memory_note" in pure.info
    assert s.info["chosen"] == "recomputing contiguous split" and s.info["recompute"] == ["d1"]
    ran = pipeline_schedule.run_planned(p, s.plan.placement, p.pipeline, s.info)
    assert max(ran.memory_bytes) <= 230e6
    assert ran.iteration_s == s.info["iteration_s"] == pytest.approx(0.28062)
    assert pure.info["iteration_s"] == pytest.approx(0.30062)
    assert "recomputing activations on d1 runs faster" in s.info["why"]
