"""hybrid's E712 under `data_parallel N` (N > 1) suggests a change only where hybrid's DP
finds a layout that fits with it (`dphints`), and names that layout. Before, it said "a
smaller `data_parallel`, or `auto`, may fit" unchecked, where neither did."""

from __future__ import annotations

import dataclasses
import math

import pytest
from pipe_support import chain_text

import planner
from planner import loads
from planner.algorithms import Options
from planner.algorithms import run as run_algorithm
from planner.errors import Diagnostic, InfeasibleError
from planner.model import Problem

WHY = ("`data_parallel {n}` runs {n} identical pipelines, each on 1/{n} of the devices, "
       "every replica holding a DDP bucket of its gradients too: ")
NONE = "hybrid's DP finds no layout that fits with `data_parallel 1`{} either"


def _activations(memory: str, schedule: str = "gpipe", mb: float = 4.0) -> Problem:
    """6 units of `mb` MB activations on 4 devices, 8 micro-batches, 2 pipelines."""
    text = chain_text(6, 4, outputs_mb=[mb] * 6, memory=memory, schedule=schedule)
    return loads(text.replace(f"schedule {schedule} }}",
                              f"schedule {schedule}; data_parallel 2 }}")).plan("p")


def _chain(params: list[int], outputs: list[int], devices: int, memory_mb: int, n: int,
           microbatches: int = 4) -> Problem:
    """A chain of units of `params` and `outputs` MB on `devices` devices, under 1f1b,
    `data_parallel n`."""
    last = devices - 1
    lines = [f"cluster c {{ device d[0..{last}] {{ memory {memory_mb} MB }}",
             f"  link d[0..{last}] <-> d[0..{last}] {{ bandwidth 10 GB/s latency 10 us }}",
             "}", "graph g {"]
    for k, (mb, out) in enumerate(zip(params, outputs, strict=True)):
        lines += [f"  op f{k} {{ time 4 ms; params {mb} MB; output {out} MB }}",
                  f"  op f{k}.bwd {{ time 8 ms; output 0 B; backward_of f{k} }}",
                  f"  f{k} -> f{k}.bwd", f"  colocate f{k}, f{k}.bwd"]
        if k:
            lines += [f"  f{k - 1} -> f{k}",
                      f"  f{k}.bwd -> f{k - 1}.bwd {{ bytes {outputs[k - 1]} MB }}"]
    lines += ["}", "plan p { graph g; cluster c; objective pipeline; "
              f"microbatches {microbatches}; schedule 1f1b; data_parallel {n} }}"]
    return loads("\n".join(lines)).plan("p")


def _params(units: int, devices: int, memory_mb: int, n: int) -> Problem:
    """`units` of 8 MB params each, 4 micro-batches: params, not activations, fill the
    devices."""
    return _chain([8] * units, [1] * units, devices, memory_mb, n)


def _with(problem: Problem, **change: object) -> Problem:
    return dataclasses.replace(problem, pipeline=dataclasses.replace(problem.pipeline,
                                                                     **change))


def _e712(problem: Problem) -> Diagnostic:
    with pytest.raises(InfeasibleError) as err:
        run_algorithm("hybrid", problem, Options(time_limit_s=5))
    d = err.value.diagnostics[-1]
    assert d.code == "E712"
    return d


def _layout(problem: Problem) -> list[int]:
    solved = run_algorithm("hybrid", problem, Options(time_limit_s=5))
    assert solved.status == "feasible" and solved.info["iteration_s"] < math.inf  # fits
    return list(solved.info["layout"])


def test_no_fewer_pipelines_where_none_fit_and_the_changes_that_do() -> None:
    # before: "a smaller `data_parallel`, or `auto`, may fit", and neither does
    p = _activations("40 MB")
    d = _e712(p)
    assert d.hints[0] == WHY.format(n=2) + NONE.format("")  # auto: not checked, not said
    assert d.hints[1] == (
        "fewer micro-batches in flight hold fewer activations, and fewer micro-batches "
        "fewer receive buffers: 2 pipelines fit with "
        "`schedule 1f1b` (a layout of 2 stage(s), each on 2 replicas) or with "
        "`microbatches 4` (a layout of 2 stage(s), each on 2 replicas); or give the "
        "devices more `memory`")
    assert not any("may" in h for h in d.hints)
    _e712(_with(p, data_parallel=1))
    _e712(_with(p, data_parallel="auto"))
    assert _layout(_with(p, schedule="1f1b")) == [2, 2]
    assert _layout(_with(p, microbatches=4)) in ([2], [2, 2])
    _e712(_with(p, microbatches=5))  # 4 the most, as bisected


def test_names_the_replicas_of_auto_where_it_alone_fits() -> None:
    # big activations up front, big params behind: one pipeline holds the first's 8
    # micro-batches, two hold the last's params twice with a bucket; auto replicates the
    # first stage alone. Outputs 8, 1, 1, 1 MB on 30 MB devices (4, 4, 1, 1 on 20 MB before
    # 2026-12-07's receive buffers, which put 8 x (4 + 1) MB more on [f2]): auto's
    # [f0 f1] x 2 holds 2 x 9 + 4 x 1 = 22 MB a replica, [f2] 10 + 2 x 2 + 8 x (1 + 1) = 30
    # and [f3] 10 + 2 + 8 x 1 = 20; one pipeline's [f0 f1] 3 x 9 + 8 x 1 = 35 (or [f2 f3]
    # 20 + 3 + 8 = 31); two pipelines' [f0 f1 f2] 10 + a 10 MB bucket + 2 x 10 + 4 = 44
    p = _chain([0, 0, 10, 10], [8, 1, 1, 1], 4, 30, 2, microbatches=8)
    d = _e712(p)
    assert d.hints[0] == (WHY.format(n=2) + "`data_parallel auto` fits: a layout of 3 "
                          "stage(s) on 2, 1, 1 replicas; 2 pipelines do not fit with "
                          "`microbatches 2` either; or give the devices more `memory`")
    _e712(_with(p, data_parallel=1))
    _e712(_with(p, microbatches=2))
    assert _layout(_with(p, data_parallel="auto"))


def test_names_what_was_tried_where_nothing_fits() -> None:
    d = _e712(_activations("16 MB", "1f1b", 9.0))
    assert d.hints[0] == (WHY.format(n=2) + NONE.format(" or `data_parallel auto`")
                          + ", nor 2 pipelines with `microbatches 2`; give the devices more "
                          "`memory`")


@pytest.mark.parametrize(("units", "devices", "memory_mb", "n", "fewer", "layout"), [
    (6, 4, 30, 2, "`data_parallel 1` fits: a layout of 4 stage(s), one device each; 2 "
     "pipelines do not fit with `microbatches 2` either", [1, 1, 1, 1]),
    # 4 micro-batches, one a pipeline of 4 and two of 2: each a stage or two under 1F1B;
    # before, "`data_parallel 2` fits: a layout of 4 stage(s), each on 2 replicas", whose
    # pipelines of 2 micro-batches torch's `Schedule1F1B` refuses
    (8, 8, 44, 4, "`data_parallel 1` fits: a layout of 4 stage(s), one device each",
     [1, 1, 1, 1]),
])
def test_names_the_fewer_pipelines_that_fit(units: int, devices: int, memory_mb: int, n: int,
                                           fewer: str, layout: list[int]) -> None:
    p = _params(units, devices, memory_mb, n)
    d = _e712(p)
    assert d.hints[0] == WHY.format(n=n) + fewer + "; or give the devices more `memory`"
    k = int(fewer.split()[1].rstrip("`"))
    assert _layout(_with(p, data_parallel=k)) == layout
    if k + 1 < n:
        _e712(_with(p, data_parallel=k + 1))


def test_the_micro_batches_cap_stages_per_block() -> None:
    # 4 pipelines on 8 devices run one of the 4 micro-batches each: 1 stage under 1F1B
    # (first "in at most 4 stage(s)", then no cap: torch's `Schedule1F1B` refuses 2)
    one = _e712(_params(8, 8, 30, 4)).message
    assert "in at most 1 stage(s) (`1f1b` runs no more stages than micro-batches)" in one
    assert "in at most" not in _e712(_with(_params(8, 8, 30, 4), microbatches=8)).message
    two = _e712(_with(_params(8, 8, 20, 2), microbatches=4)).message
    assert "in at most 2 stage(s) (`1f1b` runs no more stages than micro-batches)" in two


def test_few_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each change costs one run of the DP: log2 N + 1 for fewer pipelines, 1 + log2 M + 1
    for the micro-batches in flight, at most."""
    from planner.algorithms import pipehybrid

    calls: list[object] = []
    real = pipehybrid.fitting

    def counted(*args: object, **kwargs: object) -> tuple[int, ...] | None:
        calls.append(args[1])
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipehybrid, "fitting", counted)
    _e712(_activations("40 MB"))
    assert len(calls) == len(set(calls)) <= 1 + 1 + 1 + 3 + 1


@pytest.mark.parametrize("algo", ["auto", "search"])
def test_auto_recomputes_where_no_replicated_layout_fits_without(algo: str) -> None:
    # four layers (100 B params, 1000 B activations) on four 8810 B devices, GPipe, 8
    # micro-batches, 2 pipelines: hybrid's DP recomputes nothing and finds no layout, and
    # auto and search (which starts from auto's plan) said E712; pipeilp's one stage on d0
    # and its replica d1, recomputing, holds 8810 B: 400 of params, 4 x 1000 in flight,
    # 10 + 4000 rebuilt and a 400 B bucket
    layers = "".join(f"op f{k} {{time 1 ms; params 100 B; output 1000 B}}; op b{k} {{time "
                     f"2 ms; output 10 B; backward_of f{k}}}; " for k in range(4))
    p = loads(
        "cluster c { device d[0..3] { memory 8810 B }; link d[*] <-> d[*] { bandwidth 1 GB/s } }\n"
        f"graph g {{ {layers}f0 -> f1 -> f2 -> f3 -> b3 -> b2 -> b1 -> b0; f0 -> b0; "
        "f1 -> b1; f2 -> b2 }\n"
        "plan p { graph g; cluster c; objective pipeline; microbatches 8; schedule gpipe; "
        "data_parallel 2 }\n").plan("p")
    with pytest.raises(InfeasibleError) as err:
        run_algorithm("hybrid", p, Options())
    assert err.value.diagnostics[-1].code == "E712"
    result = planner.solve(p, algo)
    assert result.feasible and result.status == "feasible", result.breaks
    assert result.recompute == ("d0",) and dict(result.replicas) == {"d0": ["d0", "d1"]}
    assert max(result.pipeline.memory_bytes) == 8810
