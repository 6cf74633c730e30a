"""E707's words are true in every case: "no contiguous pipeline split fits" says which splits
(under `interleaved`, K stages per device on a repeated chain), and "among those searched"
where the search left some out; a hint names `--algo auto` where a split of one stage per
device fits (run as 1F1B, which auto compares); `schedule 1f1b` is not suggested to a plan
that has it, nor under `interleaved` where no split of one stage per device fits."""

from __future__ import annotations

import dataclasses

import pytest
from pipe_support import chain_text

from planner import loads
from planner.algorithms import Options, pipedp
from planner.algorithms import run as run_algorithm
from planner.errors import Diagnostic, InfeasibleError
from planner.model import Problem

AUTO_HINT = ("a split of one stage per device fits, run as 1f1b: `--algo auto` compares it "
             "with the other plans (or plan `schedule 1f1b`)")


FEWER = ("fewer micro-batches in flight hold fewer activations, and fewer micro-batches "
         "fewer receive buffers: a split fits with {}; or give the devices more `memory`")


def _plan(memory: str, schedule: str = "interleaved; stages_per_device 2", n: int = 6,
          devices: int = 3, microbatches: int = 8) -> Problem:
    return loads(chain_text(n, devices, outputs_mb=[4.0] * n, memory=memory,
                            schedule=schedule, microbatches=microbatches)).plan("p")


def _e707(algorithm: str, problem: Problem) -> Diagnostic:
    with pytest.raises(InfeasibleError) as err:
        run_algorithm(algorithm, problem, Options(time_limit_s=5))
    (d,) = err.value.diagnostics
    assert d.code == "E707"
    return d


def _searched_e707(problem: Problem) -> Diagnostic:
    with pytest.raises(InfeasibleError) as err:
        pipedp.search_within(problem, Options(), pipedp.MAX_CELLS)
    (d,) = err.value.diagnostics
    assert d.code == "E707"
    return d


def test_interleaved_e707_names_the_split_that_fits_and_auto() -> None:
    # 40 MB a device, 4 micro-batches: no split of 2 stages per device fits, one of one
    # stage per device does (as 1F1B, which auto plans: [f0-f2 | f3-f5], d0 holding 2 in
    # flight x 12 MB + 4 x 4 MB receive buffers of its output's gradient = 40 MB); before,
    # E707 said no split fits at all and suggested `schedule 1f1b` and pipeilp, never auto
    # (1F1B is still suggested, and so is one micro-batch, which fits: M - 1 does not, so
    # it is bisected down to). `--algo pipedp` now returns that split itself
    # (test_pipedp_fallback); its search's E707, whose words pipeilp draws, names it.
    # (24 MB and 8 micro-batches before 2026-12-07's receive buffers, M x (input + output
    # gradient) a stage: at 8 only the whole model on one device fits as 1F1B)
    p = _plan("40 MB", microbatches=4)
    d = _searched_e707(p)
    assert d.message == ("no contiguous pipeline split of plan `p` into 2 stages per device, "
                         "a chain of devices repeated 2 times, fits the devices' memory")
    assert d.hints[0] == AUTO_HINT
    assert d.hints[1] == FEWER.format("`schedule 1f1b` or with `microbatches 1`")
    assert run_algorithm("auto", p, Options(time_limit_s=5)).status == "feasible"
    kept = run_algorithm("pipedp", p, Options()).info["kept"]
    assert kept.startswith("no interleaved split of 2 stages per device fits; the best split ")


def test_the_auto_hint_only_where_that_split_fits() -> None:
    # 8 MB: nothing fits, one stage per device neither; auto's own E707 never names auto
    p = _plan("8 MB")
    for algorithm in ("pipedp", "auto"):
        assert not any("--algo auto" in h for h in _e707(algorithm, p).hints)


def test_under_1f1b_e707_suggests_no_1f1b() -> None:
    # under 1f1b a stage holds the stages after it (at most M) in flight, not M
    # micro-batches: `schedule 1f1b` is its own; fewer `microbatches` hold fewer receive
    # buffers (M x 4 MB a boundary), but at 8 MB no split fits even with one or two
    hints = _e707("pipedp", _plan("8 MB", "1f1b")).hints
    assert hints[0] == "give the devices more `memory`"
    # under gpipe at 8 MB no split fits under 1f1b nor with one micro-batch: before, the
    # hint suggested "(`schedule 1f1b`, fewer `microbatches`)"
    assert _e707("pipedp", _plan("8 MB", "gpipe")).hints[0] == "give the devices more `memory`"


@pytest.mark.parametrize("algorithm", ["pipedp", "auto"])
def test_interleaved_e707_suggests_1f1b_only_where_a_split_of_one_stage_per_device_fits(
        algorithm: str) -> None:
    # 8 MB: no split of one stage per device fits either, so 1F1B, which runs only those,
    # cannot help, nor can fewer micro-batches (one, the fewest in flight, fits no split);
    # before, the hint said "(fewer `microbatches`)", and "(`schedule 1f1b`, fewer
    # `microbatches`)" before that
    hints = _e707(algorithm, _plan("8 MB")).hints
    assert hints[0] == "give the devices more `memory`"
    p = _plan("8 MB")
    one = dataclasses.replace(p, pipeline=dataclasses.replace(p.pipeline, microbatches=1))
    assert _e707(algorithm, one).hints[0] == "give the devices more `memory`"
    # (at 40 MB and 4 micro-batches one fits, run as 1F1B: still suggested,
    # test_interleaved_e707_names_...)


@pytest.mark.parametrize(("memory", "schedule", "n", "fewer"), [
    ("40 MB", "interleaved; stages_per_device 2", 12, "`microbatches 1`"),
    ("56 MB", "gpipe", 6, "`schedule 1f1b` or with `microbatches 3`"),
])
def test_e707_names_the_fewer_micro_batches_with_which_a_split_fits(
        memory: str, schedule: str, n: int, fewer: str) -> None:
    # each change the hint names is a claim: pipedp plans a split with it (before: "fewer
    # `microbatches`", whether or not any count helped). Interleaved, 12 units: one
    # micro-batch fits, d1 holding 2 stages of 2 units, each 2 x 4 MB of its own, 4 MB
    # received and 1 x (4 + 4) MB receive buffers (its input and output gradient): 40 MB;
    # no split of one stage per device fits (the whole model on one: 48 MB; of 2 or 3
    # stages, one of 4 units or more holds 16 MB beside 8 x 4 MB of receive buffers).
    # GPipe: 3 micro-batches fit [f0-f2 | f3 | f4 f5], 3 x 12 + 3 x 4, 3 x (4 + 4) + 3 x
    # (4 + 4), 3 x (8 + 4) + 3 x 4 = 48 MB each, 4 do not (64 MB at best); 1F1B fits
    # [f0-f2 | f3-f5] (d0: 2 in flight x 12 + 8 x 4 = 56 MB). Before 2026-12-07's receive
    # buffers: 16 MB and 6 units, 40 MB.
    p = _plan(memory, schedule, n=n)
    assert _e707("pipedp", p).hints[0] == FEWER.format(fewer)
    for change in fewer.replace("`", "").split(" or with "):
        key, value = change.split()
        pipe = dataclasses.replace(p.pipeline, **{key: int(value) if value.isdigit() else value})
        fitted = run_algorithm("pipedp", dataclasses.replace(p, pipeline=pipe),
                               Options(time_limit_s=5))
        assert fitted.status == "feasible"


def test_e707_says_where_its_search_left_splits_out() -> None:
    # the cuts thinned to 3 of 60 boundaries: E707 said "no contiguous pipeline split
    # fits", which that search does not prove
    p = _plan("40 MB", "1f1b", n=60, devices=4)
    with pytest.raises(InfeasibleError) as err:
        pipedp.place_within(p, Options(time_limit_s=5), 1e3)
    assert err.value.diagnostics[0].message.endswith(
        "fits the devices' memory among those searched (3 of 60 unit boundaries as cuts)")
    # every boundary searched: a proof, said without the qualifier
    assert "among" not in _e707("pipedp", p).message


@pytest.mark.parametrize("algorithm", ["pipedp", "auto"])
def test_under_1f1b_e707_names_the_micro_batches_cap_on_stages(algorithm: str) -> None:
    # one micro-batch under 1f1b: at most one stage (torch's Schedule1F1B), which 24 MB
    # does not hold, where two stages, with `microbatches 2`, fit; before, E707 blamed the
    # memory alone and hinted at more memory, never at the micro-batches
    text = chain_text(6, 3, outputs_mb=[1, 1, 1, 1, 1, 20], memory="24 MB", microbatches=1)
    d = _e707(algorithm, loads(text).plan("p"))
    assert d.message == ("no contiguous pipeline split of plan `p` fits the devices' memory "
                         "in at most 1 stage(s) (`1f1b` runs no more stages than "
                         "micro-batches)")
    assert d.hints[0] == ("`microbatches 2` allows 2 stages, and a split into 2 stages fits: "
                          "each holds less")
    two = loads(text.replace("microbatches 1;", "microbatches 2;")).plan("p")
    assert run_algorithm(algorithm, two, Options(time_limit_s=5)).info["stages"] == 2
    # 20 MB: more stages fit no better (3 micro-batches neither); the cap is still said,
    # no micro-batches hinted
    _e707(algorithm, loads(text.replace("24 MB", "20 MB").replace("microbatches 1;",
                                                                  "microbatches 3;")).plan("p"))
    d = _e707(algorithm, loads(text.replace("24 MB", "20 MB")).plan("p"))
    assert d.message.endswith("in at most 1 stage(s) (`1f1b` runs no more stages than "
                              "micro-batches)")
    assert not any("microbatches" in h for h in d.hints)


def test_under_1f1b_e707_names_fewer_micro_batches_below_one_stage_per_device() -> None:
    """1F1B runs no more stages than micro-batches, and a training stage holds a receive
    buffer per micro-batch (its input, its output's gradient): 44 MB devices fit
    [f0-f3 | f4-f11] with 2 micro-batches (d0: 2 in flight x 16 MB + 2 x 4 MB buffers = 40
    MB; d1: 32 + 4 MB received + 2 x 4 MB = 44 MB), not with 1 (one stage: all 48 MB on
    one device) nor 7 (d0 holds 8k + 28 MB for k units, d1 4(12 - k) + 32). Before, the
    hint tried 7, then bisected down from 1, which fits not: "give the devices more
    `memory`" alone."""
    p = loads(chain_text(12, 3, outputs_mb=[4.0] * 12, memory="44 MB", schedule="1f1b",
                         microbatches=8)).plan("p")
    d = _e707("pipedp", p)
    assert d.hints[0] == FEWER.format("`microbatches 2`")
    fewer = dataclasses.replace(p, pipeline=dataclasses.replace(p.pipeline, microbatches=2))
    assert run_algorithm("pipedp", fewer).info["stages"] == 2
    for m in (1, 7):
        _e707("pipedp", dataclasses.replace(p, pipeline=dataclasses.replace(
            p.pipeline, microbatches=m)))
