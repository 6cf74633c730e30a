"""pipeilp's E708 (and the E707 before it, and E709) under `data_parallel N` (N > 1)
speak of the user's plan (`blockhints`, `pipeblocks`): the micro-batch counts they name
are the whole plan's, each change checked with the DDP bucket every replica holds, and
`--algo hybrid` is named only where its DP finds a layout. Before, the hints were the one
pipeline's, checked without the bucket: "a split fits with `microbatches 1`" where the
plan fits with 4 (and 1F1B), "`microbatches 3` (or more) allows 3 stages" where 6 (3 a
pipeline) do not fit with the bucket, and `--algo hybrid` where it fits not either."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
from cli.helpers import invoke
from pipe_support import chain_text

import planner
from planner.algorithms.exact import backends
from planner.errors import Diagnostic, PlannerError, SearchLimitError
from planner.model import Problem

pytestmark = pytest.mark.skipif(not backends.available("highs"),
                                reason="HiGHS (highspy) is not installed")

WHY = ("`data_parallel 2` runs 2 identical pipelines, each on 1/2 of the devices with {} of "
       "the {} micro-batches, every replica holding a DDP bucket of its gradients too; ")

# three 5 MB layers on six devices, 2 pipelines: a bucket of every gradient, 14.31 MiB.
# 0.5 MB activations: at 1 MB (before 2026-12-07) the receive buffers, M x (input + output
# gradient), put `data_parallel 1`'s middle stage at 5 + 2 x 2 + 1 + 4 x 2 = 18 MB
FORWARD, BACKWARD = ["l0", "l1", "l2"], ["l2.bwd", "l1.bwd", "l0.bwd"]
LAYERS = "\n".join([
    "cluster c { device gpu[0..5] { memory MEM MB }",
    "  link gpu[*] <-> gpu[*] { bandwidth 10 GB/s  latency 10 us } }", "graph g {",
    *(f"  op {f} {{ params 5 MB  time 2 ms  output 0.5 MB }}" for f in FORWARD),
    *(f"  op {b} {{ backward_of {b[:2]}  time 4 ms  output 0.5 MB }}" for b in BACKWARD),
    "  " + " -> ".join(FORWARD + BACKWARD), "}",
    "plan p { graph g; cluster c; objective pipeline; microbatches 4; schedule 1f1b; "
    "data_parallel 2 }"])


def _chain(schedule: str, microbatches: int, devices: int, memory: str = "20 MB",
           outputs_mb: tuple[float, ...] = (4.0,) * 6) -> str:
    """6 units of 4 MB activations (`outputs_mb`) on `devices` 20 MB devices,
    `data_parallel 2` (16 MB before a recomputing stage held what it sends: its hints then
    named fewer changes)."""
    text = chain_text(6, devices, outputs_mb=list(outputs_mb), memory=memory,
                      schedule=schedule, microbatches=microbatches)
    return text.replace(f"schedule {schedule} }}", f"schedule {schedule}; data_parallel 2 }}")


def _layers(mb: int) -> Problem:
    return planner.loads(LAYERS.replace("MEM", str(mb))).plan("p")


def _with(problem: Problem, **change: object) -> Problem:
    return dataclasses.replace(problem, pipeline=dataclasses.replace(problem.pipeline,
                                                                     **change))


def _error(problem: Problem, algo: str = "pipeilp") -> PlannerError:
    with pytest.raises(PlannerError) as err:
        planner.solve(problem, algo, **({"time_limit_s": 5} if algo == "pipeilp" else {}))
    return err.value


def _fits(problem: Problem, algo: str = "pipeilp") -> planner.Result:
    result = planner.solve(problem, algo, **({"time_limit_s": 5} if algo == "pipeilp" else {}))
    assert result.feasible, result.breaks
    return result


def _e708(problem: Problem) -> list[Diagnostic]:
    err = _error(problem)
    assert [d.code for d in err.diagnostics] == ["E707", "E708"] and err.exit_code == 3
    e707, e708 = err.diagnostics
    assert e707.hints == e708.hints  # one set of checks, in the user's terms
    return list(err.diagnostics)


def test_the_micro_batches_named_are_the_plans_and_fit(tmp_path: Path) -> None:
    # 32 MB devices (24 MB before 2026-12-07's receive buffers, a pipeline's 4 micro-batches
    # x 4 MB more a stage: there 2 pipelines fit with 2 micro-batches, not 4; 20 MB before a
    # recomputing stage held the model's 4 MB output per micro-batch in flight)
    text = _chain("gpipe", 8, 4, "32 MB")
    (tmp_path / "s.plan").write_text(text, encoding="utf-8")
    code, _, err = invoke(["solve", "s.plan", "--algo", "pipeilp", "--time-limit", "5"],
                          tmp_path)
    assert code == 3 and "error[E707]" in err and "error[E708]" in err
    assert "`microbatches 1`" not in err  # before: one pipeline's share, unchecked
    p = planner.loads(text).plan("p")
    e708 = _e708(p)[1]
    assert "as 2 identical pipelines (4 micro-batches each)" in e708.message
    assert e708.hints == (WHY.format(4, 8) + "fewer micro-batches in flight hold fewer "
                          "activations, and fewer micro-batches fewer receive buffers: 2 "
                          "pipelines fit with `schedule 1f1b` or with `microbatches 4`; or "
                          "give the devices more `memory`",)
    _fits(_with(p, schedule="1f1b"))
    _fits(_with(p, microbatches=4))
    assert _error(_with(p, microbatches=6)).diagnostics[-1].code == "E708"  # 4 the most


def test_more_micro_batches_for_more_stages_a_pipeline() -> None:
    # f2 sends 1 MB (4 MB before 2026-12-07: a stage's receive buffers, M x (4 + 4) MB,
    # then left no 2-stage split within 20 MB). One stage holds 4 + 4 + 1 + 3 x 4 = 21 MB;
    # [f0 f1 f2 | f3 f4 f5] with a pipeline's 2 micro-batches 2 x 9 + 2 x 1 = 20 and
    # (1 + 12) + 2 x 1 = 15 MB (its receive buffers: 2 x f2's 1 MB output or gradient)
    p = planner.loads(_chain("1f1b", 2, 8, outputs_mb=(4, 4, 1, 4, 4, 4))).plan("p")
    e708 = _e708(p)[1]
    assert "(1 micro-batch each) in at most 1 stage(s)" in e708.message
    assert e708.hints == (
        WHY.format(1, 2) + "`data_parallel 1` fits",
        "`microbatches 4` allows 2 stages a pipeline, and 2 pipelines of 2 stages "
        "fit: each holds less; or give the devices more `memory`")
    assert len(_fits(_with(p, microbatches=4)).pipeline.stages) == 2  # a pipeline's
    _fits(_with(p, data_parallel=1))


def test_changes_are_checked_with_the_bucket() -> None:
    # before: "`microbatches 3` (or more) allows 3 stages" (3 a pipeline: 6 in all),
    # checked without the 14.31 MiB bucket every replica holds
    p = _layers(12)
    hints = _e708(p)[1].hints
    assert hints == (WHY.format(2, 4) + "`data_parallel 1` fits",
                     "2 pipelines do not fit with `microbatches 2` either; or give the "
                     "devices more `memory`")
    for m in (2, 3, 6):  # E708 or E709: no plan
        _error(_with(p, microbatches=m))
    _fits(_with(p, data_parallel=1))


# 15 MB: hybrid named "a layout of 3 stage(s), each on 2 replicas", whose pipelines run 2
# micro-batches each, which torch's 1F1B refuses; a pipeline's cap is M // N now, as
# pipeilp's (13 MB before a recomputing stage held what it sends: `data_parallel 1` fit)
@pytest.mark.parametrize("mb", [14, 15])
def test_e709_names_hybrid_only_where_its_dp_finds_a_layout(mb: int) -> None:
    err = _error(_layers(mb))
    assert isinstance(err, SearchLimitError) and err.exit_code == 6
    d = err.diagnostics[-1]
    assert d.code == "E709"  # before: named whatever it finds
    assert d.hints[0] == "`--algo hybrid`'s DP finds no layout that fits either"
    assert d.hints[1:] == (WHY.format(2, 4) + "`data_parallel 1` fits",
                           "2 pipelines do not fit with `microbatches 2` either; or give "
                           "the devices more `memory`")
    assert _error(_layers(mb), "hybrid").diagnostics[-1].code == "E712"


def test_few_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each change costs one recomputing DP of one pipeline, each once: log2 N + 1 for
    fewer pipelines, 1 + log2 M for the micro-batches in flight, at most."""
    from planner.algorithms.pipeilp import solve

    calls: list[tuple[object, ...]] = []
    real = solve.recomputing_split

    def counted(problem: Problem, *args: float) -> object:
        calls.append((problem.pipeline, tuple(d.memory_bytes for d in problem.cluster.devices)))
        return real(problem, *args)

    monkeypatch.setattr(solve, "recomputing_split", counted)
    _e708(planner.loads(_chain("gpipe", 8, 4)).plan("p"))
    assert 0 < len(calls) == len(set(calls)) <= 2 + 1 + 3


@pytest.mark.parametrize("text", [_chain("gpipe", 8, 4), LAYERS.replace("MEM", "12")])
def test_the_one_pipelines_hints_are_not_drawn(monkeypatch: pytest.MonkeyPatch,
                                               text: str) -> None:
    """E708 and the E707 before it take their words and hints from `pipeblocks`
    (`pipehints.PlanTerms`), so pipeilp draws none of one pipeline's (each a split
    search). Before, it drew them for each attempt (with the bucket and without), and
    `pipeblocks` threw them away and rewrote the message's "as a pipeline"."""
    from planner.algorithms import pipedp, pipehints

    drawn: list[str] = []
    for module, name in ((pipehints, "in_flight_hints"), (pipedp, "one_fits"),
                         (pipedp, "one_per_device_hint")):
        monkeypatch.setattr(module, name, _counted(getattr(module, name), name, drawn))
    p = planner.loads(text).plan("p")
    _e708(p)  # the plan's words and hints, as the tests above check them
    assert drawn == []  # before: in_flight_hints, one_fits, one_per_device_hint
    alone = _with(planner.loads(_chain("gpipe", 8, 4)).plan("p"), data_parallel=1)
    assert _error(alone).diagnostics[-1].code == "E708"
    assert "in_flight_hints" in drawn  # one pipeline's own, where it is the plan


def _counted(real: Callable[..., object], name: str,
             drawn: list[str]) -> Callable[..., object]:
    def counted(*args: object, **kwargs: object) -> object:
        drawn.append(name)
        return real(*args, **kwargs)
    return counted


PLANNED = "as 2 identical pipelines (4 micro-batches each)"


def test_e709_speaks_of_the_plans_pipelines() -> None:
    """Before: "pipeilp found no placement of plan `p` within its time limit ..." and the
    E707 it quotes "no contiguous pipeline split of plan `p` fits the devices' memory", as
    if `p` were one pipeline on every device with all 8 micro-batches."""
    p = planner.loads(_chain("gpipe", 8, 4)).plan("p")
    with pytest.raises(SearchLimitError) as err:
        planner.solve(p, "pipeilp", time_limit_s=0)
    (d,) = err.value.diagnostics
    assert d.code == "E709"
    assert d.message.startswith(f"pipeilp found no placement of plan `p` {PLANNED} within")
    assert d.hints[0] == ("no contiguous pipeline split of plan `p` fits the devices' memory "
                          f"{PLANNED}")
    alone = _with(p, data_parallel=1)  # one pipeline's words stay its own
    with pytest.raises(SearchLimitError) as one:
        planner.solve(alone, "pipeilp", time_limit_s=0)
    assert one.value.diagnostics[0].hints[0] == ("no contiguous pipeline split of plan `p` "
                                                 "fits the devices' memory")


def test_e711_speaks_of_the_plans_pipelines(monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.algorithms.pipeilp import solve

    monkeypatch.setattr(solve, "_run_solver",
                        lambda *args, **kwargs: backends.Outcome("error", "it crashed"))
    with pytest.raises(PlannerError) as err:
        planner.solve(planner.loads(_chain("gpipe", 8, 4)).plan("p"), "pipeilp",
                      time_limit_s=5)
    (d,) = err.value.diagnostics
    assert d.code == "E711" and err.value.exit_code == 4
    assert d.message.startswith(f"pipeilp found no placement of plan `p` {PLANNED}: it crashed")
    assert d.hints == ("no contiguous pipeline split of plan `p` fits the devices' memory "
                       f"{PLANNED}",)


def test_the_micro_batches_named_where_more_do_not_fit_and_fewer_cap_the_stages() -> None:
    """A training stage holds a receive buffer per micro-batch, and 1F1B no more stages than
    micro-batches: on 8 devices of 20 MB (f2 sending 2 MB), 2 pipelines fit with 4 or 6
    micro-batches (2 stages each) but not 8, nor 2 (1 stage). Before, E708 bisected down
    from 8 to 1, found 2 (one a pipeline) fits not, and said "2 pipelines do not fit with
    `microbatches 2` either": neither 6 nor 4 named (found by helper tbb)."""
    def chain(m: int) -> Problem:
        return planner.loads(_chain("1f1b", m, 8, "20 MB", (4, 4, 2, 4, 4, 4))).plan("p")

    hints = _e708(chain(8))[1].hints
    assert hints[0].endswith("2 pipelines fit with `microbatches 6`; or give the devices "
                             "more `memory`")
    assert len(_fits(chain(6)).pipeline.stages) == 2
    assert _e708(chain(2))[1].hints[1] == (
        "`microbatches 4` allows 2 stages a pipeline, and 2 pipelines of 2 stages fit: each "
        "holds less; or give the devices more `memory`")
    assert len(_fits(chain(4)).pipeline.stages) == 2


def test_a_change_the_bucketed_check_cannot_judge_is_not_said_to_fail() -> None:
    # four 1000 B layers on four 5000 B devices, GPipe, 8 micro-batches, 2 pipelines: the
    # check charges every replica a bucket of every gradient (4000 B), where a stage holds
    # its own (2000 B). Before: "2 pipelines do not fit with `schedule 1f1b` or
    # `microbatches 2` either", and pipeilp plans both, each fitting
    layers = "".join(f"op f{k} {{time 1 ms; params 1000 B; output 100 B}}; op b{k} {{time "
                     f"2 ms; output 10 B; backward_of f{k}}}; " for k in range(4))
    p = planner.loads(
        "cluster c { device d[0..3] { memory 5000 B }; link d[*] <-> d[*] { bandwidth 1 GB/s } }\n"
        f"graph g {{ {layers}f0 -> f1 -> f2 -> f3 -> b3 -> b2 -> b1 -> b0; f0 -> b0; "
        "f1 -> b1; f2 -> b2 }\n"
        "plan p { graph g; cluster c; objective pipeline; microbatches 8; schedule gpipe; "
        "data_parallel 2 }\n").plan("p")
    hints = _error(p).diagnostics[-1].hints
    assert not any("do not fit" in h for h in hints), hints
    assert hints[-1].startswith("2 pipelines may fit with `schedule 1f1b` or `microbatches 2`")
    _fits(_with(p, schedule="1f1b"))
    _fits(_with(p, microbatches=2))
