"""pipedp: the best contiguous pipeline split, by dynamic programming.

The pipeline units (`planner.pipeline.units`: a layer's forward and backward ops together)
are cut into S contiguous stages, stage k on device `chain[k]`; the split minimises the
period T of `planner.pipeline.split` (the busiest resource for one micro-batch: a device's
compute, or the transfers of a link or a device's channel under the plan's contention,
tensors relayed stage to stage), subject to each device holding its stage's params and
the activations of the micro-batches in flight under the plan's schedule.

For one chain of distinct devices, a stage's load is the larger of its compute and the
transfer resources its two boundaries use (their two directed links, the busier, under
`link`; both boundaries together under `device`, the device's one channel; nothing under
`none`), and the bottleneck recurrence

    f[k][j] = min over i < j of max(f[k - 1][i], load_k(i, j))

is exact (PipeDream's and DAPPLE's partitioning DP; Narayanan et al., SOSP 2019), O(S n^2)
for n units, each row a numpy pass over i. Many splits share the least period: a second
pass keeps, among those, the one whose stage loads have the least sum of squares (the
most even; the simulated iteration rewards balanced non-bottleneck stages, as
torchgpipe's partition has them). The period bounds the steady state only: the fill, the
drain and 1F1B's round trips (a window of S - k micro-batches in flight on stage k waits
for each one's backward pass) pay the transfers' latency too, so per stage count the DP
also finds the best split of three other kinds (`KINDS`): compute alone (torchgpipe's
`balance_by_time`), compute plus every transfer of the stage's boundaries (a
micro-batch's latency through it), and compute or a boundary's transfers both ways,
whichever is more (PipeDream's partitioner). On PipeDream's resnet50 profile at 4 workers
the least-period split (T 205.5 ms) simulates 3.47 s, PipeDream's kind (T 278.3 ms)
3.04 s. Chains: every distinct sequence of devices,
two devices being alike when they have the same kind, speed, FLOP rate and memory and,
for the links, when the chain's consecutive links are alike; on clusters with one link
type that is a sequence of device classes. At most `MAX_CHAINS` per stage count are tried:
those that may respect the pins first, then the least floor of the period (the compute at
the devices' rates, or the cheapest boundary on the slowest link), then the best-linked
(under `auto`'s smaller limits fewer, as many as their fixed costs fit
in its work: `splitdp.chains_within`); `info["chains"]` says how many there were and how
many were tried, and the split is optimal for the model when all were. Under `1f1b` there
are at most M stages (torch's `Schedule1F1B` needs as many micro-batches as stages).

Under `interleaved` a device runs K stages that share its compute, links and memory, which
a stage-by-stage recurrence cannot see: up to `MAX_ENUMERATED` splits per stage count,
every split of every chain is enumerated and judged by the report's own rules
(`resource_loads`, `stage_bytes`), so the answer is exact; beyond that, or past what a
time limit's work holds (`splitwork.enumerated_stages`), the DP (each stage within its
device's memory over K, with all M of its sends, which torch keeps to the step's end:
`hybrid.kept_sends`, a bound, so that its split fits) is a heuristic, and
`info["split_search"]` says which.

Among stage counts and candidates, the plan whose simulated iteration
(`pipeline.schedule`) is shortest wins (ties: the smaller period, then fewer stages). The
candidates are simulated best estimate first within a budget of simulations set by the
time limit alone (`simulation_budget`); where the M copies of the graph would pass
`MAX_SIMULATED_OPS` ops, or none fits the budget, the best estimate wins instead:
(M - 1) T plus each stage's load once (`estimate`; `info["candidates_compared_by"]` says
which). Under a schedule with a fallback (`interleaved`: 1F1B, as every split that is not K
stages per device in a repeating chain runs), the best split of one stage per device for
the fallback is kept where it fits and simulates faster as it runs, or where no split of
the schedule's fits (`info["kept"]`; on a graph too small to interleave, W258, the
search's best ran 1.64 s, this split 1.385 s; `auto` compares it too). When the DP's
work, stage rows times candidate cuts squared, would pass `MAX_CELLS`, the cuts are
thinned to the cheapest
boundary to cross within each of as many equal windows of units as fit, and
`info["candidate_cuts"]` says so: the split is then the best among those cuts (GNMT's
2,674 units on 4 GPUs: every boundary; a 100,000-op graph on 8 GPUs under `auto`'s
default limit of 10 s: about 260).

When the memory caps change the answer, `info["memory_note"]` says how: the best of the
candidates they ruled out, compared as the plan was chosen (by the simulated iteration, or
the estimate), its stage count, period and iteration, and the device it would overfill.
Caps that rule out only candidates that lose anyway are not mentioned. When the candidate
with the least period is passed over because its iteration is longer, `info["stages_note"]`
says so instead (with 1 TiB devices that was once the "memory" note). Each is given where
the figures as printed show it (not "a shorter period, 1.0 us against 1.0 us", nor a
faster iteration "of 11.2 us (this split: 5.6 us and 11.2 us)"). Both quote the plan the
user gets: where `auto` keeps another (the cut moves'), `notes_for` draws them for it.

When no split exists, E707 says why (`check_units`, `_no_split`): a unit pinned to two
devices or that no device runs, more stages per device than units, the memory caps (a
split fits without them), or pins that leave the units an order no chain follows.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from ..errors import Diagnostic, InfeasibleError
from ..model import Pipeline, Problem
from ..pipeline import schedule as pipeline_schedule
from ..pipeline.split import Split, resource_loads, split_of, stage_bytes
from ..pipeline.splitdp import (
    MAX_CELLS,
    MAX_ENUMERATED,
    MAX_EXAMINED,
    Found,
    Space,
    best_splits,
    interleaved_exact,
    search_space,
    split_candidates,
)
from ..pipeline.units import units
from ..plan import Plan
from ..units import format_bytes_of, format_seconds
from . import pipehints
from .base import Options, Solution
from .clock import simulation_budget, simulations
from .infeasible import diagnose
from .pipecheck import check_units

#: E707's hint, where the memory caps leave no split, for the algorithm that never
#: recomputes (pipeilp, which starts from pipedp, leaves it out of what it reports)
RECOMPUTE_HINT = ("`--algo pipeilp` places each unit on any device it may use and recomputes "
                  "activations on the devices where that makes them fit")
#: its words for inference, where nothing is recomputed (no backward pass to rebuild for)
PLACES_HINT = "`--algo pipeilp` places each unit on any device it may use"
#: copies of the graph's ops (micro-batches x ops) up to which a candidate is simulated
MAX_SIMULATED_OPS = 200_000


def pipeilp_hint(problem: Problem) -> str:
    """E707's hint naming pipeilp: `RECOMPUTE_HINT` in training, else `PLACES_HINT`."""
    return RECOMPUTE_HINT if units(problem).training else PLACES_HINT


def place(problem: Problem, options: Options) -> Solution:
    """The best contiguous split (module docstring) as a plan, with the split's figures."""
    return place_within(problem, options, MAX_CELLS)


def place_within(problem: Problem, options: Options, cells: float) -> Solution:
    """`place`, with the DP's work (stage rows x candidate cuts squared) within `cells`
    (`auto` sizes it to its time limit: `cells_for`), and the split of one stage per
    device for the schedule's fallback where faster (`kept_fallback`)."""
    searched = _searched(problem, options, cells, True)
    if searched is None:  # E707, unless the split for the fallback fits
        return _fallback_alone(problem, options, cells)
    return kept_fallback(problem, searched, cells)


def _fallback_alone(problem: Problem, options: Options, cells: float) -> Solution:
    """Where no split of the schedule's fits: under a schedule with a fallback
    (`interleaved`: 1F1B), the split of one stage per device planned for the fallback
    (`fallback_split`, simulated within the limit's budget) where it fits as it runs,
    `info["kept"]` saying why; else E707 (`_no_split`). On inception_v3's PipeDream profile
    on a DGX-1, 8 micro-batches, 2 stages per device, E707 named `--algo auto` instead
    (now 1.504 s an iteration)."""
    pipeline = problem.pipeline or Pipeline()
    found = fallback_split(problem, cells, simulation_budget(options.time_limit_s))
    one = fallback_pipeline(pipeline)
    simulated = pipeline.microbatches * len(problem.graph.ops) <= MAX_SIMULATED_OPS
    if found is None or one is None:
        iteration, fits = math.inf, False
    elif simulated:
        iteration, fits = pipeline_schedule.run_fits(problem, found.plan.placement, pipeline)
    else:  # as `auto` judges big graphs: the estimate, the DP's memory rule (it fit)
        iteration, fits = estimate(problem, one, split_of(problem, found.plan.placement)), True
    if found is None or one is None or not fits:  # no hint naming auto: it does no better
        raise _no_split(problem, pipeline, cells, False)
    left = unsearched(problem, pipeline, cells)
    kept = (f"no {pipeline.schedule} split of {pipeline.per_device} stages per device fits"
            + (f" among those searched ({left})" if left else "")
            + f"; the best split of one stage per device for {one.schedule} does: "
            f"{format_seconds(iteration)} an iteration" + ("" if simulated else " (estimated)"))
    return Solution(found.plan, "feasible", {**found.info, "iteration_s": iteration,
                                             "kept": kept})


def kept_fallback(problem: Problem, searched: Searched, cells: float) -> Solution:
    """`searched`'s plan or, under a schedule with a fallback (`interleaved`: 1F1B), where
    its candidates were simulated, the split of one stage per device planned for the
    fallback (`fallback_split`, its candidates within what they left of the budget), where
    it fits and its simulated iteration as it runs is shorter; `info["kept"]` then says
    why, its figures and notes are its own (`notes_for`), `chains`, `split_search` and
    `candidates_compared_by` still the search's. A graph that cannot interleave (W258)
    runs every plan as 1F1B: there the search's best, 2 stages on one 30 MB device, ran
    1.64 s, this split 1.385 s."""
    mine = searched.solution
    pipeline = problem.pipeline or Pipeline()
    copies = pipeline.microbatches * len(problem.graph.ops)
    if pipeline.schedule_spec.fallback is None or not searched.runs:
        return mine
    found = fallback_split(problem, cells, searched.budget - len(searched.runs) * copies)
    if found is None:
        return mine
    iteration, fits = pipeline_schedule.run_fits(problem, found.plan.placement, pipeline)
    ours = min(searched.runs.values())  # the chosen candidate's (`_simulated_best`)
    if not fits or iteration >= ours * (1 - 1e-9):
        return mine
    shown = [format_seconds(t) for t in (iteration, ours)]
    if shown[0] == shown[1]:
        shown = [f"{t:.9g} s" for t in (iteration, ours)]
    kept = (f"the best split of one stage per device for {pipeline.schedule_spec.fallback} "
            f"runs faster than the best {pipeline.schedule} split: {shown[0]} an iteration, "
            f"against {shown[1]}")
    figures = {k: v for k, v in mine.info.items() if k not in ("memory_note", "stages_note")}
    return Solution(found.plan, mine.status, {
        **figures, **notes_for(problem, searched, found.plan.placement, iteration),
        "iteration_s": iteration, "kept": kept})


@dataclass(frozen=True, slots=True)
class Figures:
    """A plan's figures as the notes quote them: its period, its simulated iteration (None
    where it was not simulated) and its estimate (`estimate`)."""

    period_s: float
    simulated_s: float | None
    estimated_s: float


@dataclass(frozen=True, slots=True)
class Searched:
    """pipedp's plan and what its notes were drawn from, so that `notes_for` can draw them
    again for a plan that replaces it (`auto`: the cut moves', the uniform split)."""

    solution: Solution
    per_stages: dict[int, list[Found]]
    ruled_out: list[Found]
    runs: dict[Found, float]
    budget: float


class ChainsLeftOut(InfeasibleError):
    """pipedp's E707 where the chains its work allowed hold no split that fits and those
    it left out were not searched (`search_within(left_out=False)`): no proof, and its
    message says so. `auto` plans its other candidates and searches them only where none
    fits, before E707."""


def search_within(problem: Problem, options: Options, cells: float,
                  left_out: bool = True, *, name_auto: bool = True,
                  hints: Callable[[], tuple[str, ...]] | None = None,
                  planned: str = "",
                  recomputing: pipehints.Recomputing | None = None) -> Searched:
    """`place_within`, with what its notes were drawn from. Where the chains the work
    allowed hold no split that fits, the others are searched before E707, unless not
    `left_out` (then `ChainsLeftOut`, after the proofs that no placement fits);
    `name_auto`: E707 may name `auto` (`one_per_device_hint`); `hints`: where the memory
    caps leave no split, E707's, drawn in place of its own, and `planned`, what was
    planned, said after "fits the devices' memory" (`pipehints.PlanTerms`);
    `recomputing`: E707's own hints check each change by it too (the caller recomputes)."""
    found = _searched(problem, options, cells, left_out)
    if found is None:
        raise _no_split(problem, problem.pipeline or Pipeline(), cells, name_auto, hints,
                        planned, recomputing)
    return found


def search_if_any(problem: Problem, options: Options, cells: float,
                  left_out: bool = True) -> Searched | None:
    """`search_within`, but None where no split fits (its E707, whose words and hints take
    more of the DP's runs than the search: 3.4 s of 6.8 on ResNet-50's PipeDream profile
    under `interleaved`, drawn by `search_within` only where a caller needs them), after
    the proofs that no placement fits, which it raises."""
    found = _searched(problem, options, cells, left_out)
    if found is None:
        proofs = diagnose(problem)
        if proofs:
            raise InfeasibleError(proofs)
    return found


def _searched(problem: Problem, options: Options, cells: float,
              left_out: bool) -> Searched | None:
    """`search_within`'s search, None where no split fits."""
    pipeline = problem.pipeline or Pipeline()
    check_units(problem, pipeline)
    space = search_space(problem, pipeline, cells)
    per_stages = split_candidates(problem, pipeline, options, cells=cells)
    every = not per_stages and space.tried < search_space(problem, pipeline, cells, True).tried
    if every and not left_out:
        raise _left_out(problem, space, search_space(problem, pipeline, cells, True).tried)
    if every:  # the chains the work allowed have no split that fits: all, before E707
        tried, space = space, search_space(problem, pipeline, cells, True)
        per_stages = split_candidates(problem, pipeline, options, cells=cells, every_chain=True,
                                      none_fit=tried)
    if not per_stages:
        return None
    budget = simulation_budget(options.time_limit_s)
    chosen, runs = _simulated_best(problem, pipeline, per_stages, budget)
    if chosen is None:
        return None
    info: dict[str, object] = {
        "period_s": chosen.period_s,
        "stages": chosen.split.stages,
        "chains": f"{space.tried} of {space.total} tried",
    }
    info["iteration_s"] = runs.get(chosen, estimate(problem, pipeline, chosen.split))
    info["candidates_compared_by"] = (
        f"simulation ({len(runs)} candidate(s))" if chosen in runs else
        "estimate: (M - 1) T plus each stage's load once (the candidates' simulations "
        "would pass the time limit's budget)")
    if pipeline.per_device > 1:
        info["split_search"] = (
            "exact: every split of every chain enumerated" if interleaved_exact(
                problem, pipeline, cells, every) else
            f"heuristic: over {MAX_ENUMERATED} splits per stage count or past the time "
            "limit's work (the fewest stages enumerated first), the per-stage DP (a "
            "device's stages share its compute and memory, which it approximates)")
    n = units(problem).count
    if len(space.cuts) - 1 < n:
        info["candidate_cuts"] = f"{len(space.cuts) - 1} of {n} unit boundaries"
    free = split_candidates(problem, pipeline, capped=False, cells=cells, every_chain=every)
    kept = {f.split for found in per_stages.values() for f in found}
    ruled_out = [f for found in free.values() for f in found if f.split not in kept]
    searched = Searched(Solution(Plan(chosen.split.placement(problem), algorithm="pipedp")),
                        per_stages, ruled_out, runs, budget)
    mine = Figures(chosen.period_s, runs.get(chosen), estimate(problem, pipeline, chosen.split))
    info.update(_split_notes(problem, pipeline, searched, mine))
    return dataclasses.replace(searched, solution=Solution(
        searched.solution.plan, "feasible", info))


def fallback_split(problem: Problem, cells: float, budget: float) -> Solution | None:
    """Under a schedule of several stages per device that has a fallback (`interleaved`:
    1F1B, which runs a split of one stage per device, `pipeline.schedule`), the best split
    of one stage per device planned for the fallback: its candidates (the DP within
    `cells`) simulated under it within `budget` copied ops (`_simulated_best`); None where
    the schedule has no fallback or no such split fits. No notes: `auto` judges it."""
    one = fallback_pipeline(problem.pipeline or Pipeline())
    if one is None:
        return None
    per_stages = split_candidates(problem, one, cells=cells)
    if not per_stages:
        return None
    chosen, runs = _simulated_best(problem, one, per_stages, budget)
    if chosen is None:
        return None
    info = {"period_s": chosen.period_s, "stages": chosen.split.stages,
            "candidates_compared_by": f"simulation under {one.schedule} ({len(runs)} "
                                      "candidate(s))" if chosen in runs
            else f"estimate under {one.schedule}"}
    return Solution(Plan(chosen.split.placement(problem), algorithm="pipedp"), "feasible",
                    MappingProxyType(info))


def fallback_pipeline(pipeline: Pipeline) -> Pipeline | None:
    """`pipeline` with one stage per device under its schedule's fallback (`interleaved`:
    1F1B), as a split of one stage per device runs; None where there is none."""
    fallback = pipeline.schedule_spec.fallback
    if fallback is None or pipeline.per_device < 2:
        return None
    return dataclasses.replace(pipeline, schedule=fallback, stages_per_device=1)


def notes_for(problem: Problem, searched: Searched, placement: Sequence[int],
              simulated_s: float | None) -> dict[str, object]:
    """pipedp's figures of its own split (`period_s`, `stages`) and its notes
    (`memory_note`, `stages_note`), drawn again for `placement`, another plan of the
    problem (its simulated iteration `simulated_s`, None where it was not simulated), so
    that they quote the figures of the plan the user gets."""
    pipeline = problem.pipeline or Pipeline()
    split = split_of(problem, placement)
    mine = Figures(resource_loads(problem, split).period_s, simulated_s,
                   estimate(problem, pipeline, split))
    return {"period_s": mine.period_s, "stages": split.stages,
            **_split_notes(problem, pipeline, searched, mine)}


def _left_out(problem: Problem, space: Space, every: int) -> InfeasibleError:
    """The proofs that no placement fits (what `check` says), else `ChainsLeftOut`: no
    split fits on the `space.tried` chains searched, of `every` with the others."""
    proofs = diagnose(problem)
    if proofs:
        return InfeasibleError(proofs)
    return ChainsLeftOut(Diagnostic(
        "E707", f"no contiguous pipeline split of plan `{problem.name}` fits on the "
        f"{space.tried} device chain(s) its time limit's work searched; the other "
        f"{every - space.tried} it tries were left out", None,
        ("a larger `--time-limit` searches them", pipeilp_hint(problem))))


def _no_split(problem: Problem, pipeline: Pipeline, cells: float, name_auto: bool,
              hints: Callable[[], tuple[str, ...]] | None = None,
              planned: str = "",
              recomputing: pipehints.Recomputing | None = None) -> InfeasibleError:
    """The proofs that no placement fits (`infeasible.diagnose`: what `check` says), else
    E707, with its cause: the memory caps (a split fits without them), else the devices
    each unit may use (pins, op times), which no chain of stages follows. Its message says
    "no split ... fits" only where every split was searched (`unsearched`), and, under
    several stages per device, that count; a hint names `auto` (`name_auto`) where a split
    of one stage per device fits under the schedule's fallback (`one_per_device_hint`); of
    the changes that hold fewer micro-batches in flight, only those with which a split
    fits are suggested (`_fewer_in_flight`), or, where given, a `recomputing` split;
    `hints`: the caller's, in place of those; `planned`: the caller's plan, where
    `problem` is one of its N identical pipelines."""
    proofs = diagnose(problem)
    if proofs:
        return InfeasibleError(proofs)
    per = pipeline.per_device
    what = (f"contiguous pipeline split of plan `{problem.name}`"
            + (f" into {per} stages per device, a chain of devices repeated {per} times,"
               if per > 1 else ""))
    left = unsearched(problem, pipeline, cells)
    among = f" among those searched ({left})" if left else ""
    among += pipehints.stage_cap_words(problem, pipeline)  # the DP searched no more stages than M
    if best_splits(problem, pipeline, capped=False, cells=cells, every_chain=True):
        return InfeasibleError(Diagnostic(
            "E707", f"no {what} fits the devices' memory{' ' * bool(planned)}{planned}"
            f"{among}", None,
            hints() if hints else _memory_hints(problem, pipeline, cells, name_auto,
                                                recomputing)))
    return InfeasibleError(Diagnostic(
        "E707", f"no {what} honours the devices its units may use, whatever the memory"
        f"{among}: the pins (or op times) put units in an order that no chain of stages, one "
        "device after another, follows", None,
        ("`--algo pipeilp` places each unit on any device it may use; or pin the units of "
         "each stage together, stage after stage",)))


def _memory_hints(problem: Problem, pipeline: Pipeline, cells: float, name_auto: bool,
                  recomputing: pipehints.Recomputing | None = None) -> tuple[str, ...]:
    """E707's hints where the memory caps leave no split (`_no_split`), each change
    checked by `recomputing` too where given (`pipehints.in_flight_hints`)."""
    one = one_per_device_hint(problem, cells)
    return (*((one,) if one and name_auto else ()),
            *pipehints.in_flight_hints(problem, pipeline, bool(one), cells, recomputing),
            pipeilp_hint(problem))


def unsearched(problem: Problem, pipeline: Pipeline, cells: float) -> str:
    """What the split search before E707 left out, in words (empty where it searched every
    split): device chains past `MAX_CHAINS`, unit boundaries thinned from the cuts, and
    under several stages per device the per-stage DP in place of every split."""
    space = search_space(problem, pipeline, cells, True)
    n = units(problem).count
    m = len(problem.cluster.devices)
    orders = max((math.perm(m, s // pipeline.per_device) for s in space.chains), default=0)
    left = [*([f"the first {MAX_EXAMINED:,} orders of the devices"]
              if orders > MAX_EXAMINED else []),
            *([f"{space.tried} of {space.total} device chains"]
              if space.tried < space.total else []),
            *([f"{len(space.cuts) - 1} of {n} unit boundaries as cuts"]
              if len(space.cuts) - 1 < n else []),
            *(["the per-stage DP, not every split"] if pipeline.per_device > 1
              and not interleaved_exact(problem, pipeline, cells, True) else [])]
    return ", ".join(left)


def one_per_device_hint(problem: Problem, cells: float) -> str:
    """Under a schedule of several stages per device with a fallback (`interleaved`:
    1F1B), the hint that a split of one stage per device fits, run as the fallback
    (`fallback_split`, within `cells`, none simulated; where simulated, as it runs, as
    `place` keeps it), and that `--algo auto` compares it, which it does only where
    simulated; empty where none fits."""
    found = fallback_split(problem, cells, 0.0)
    if found is None:
        return ""
    pipeline = problem.pipeline or Pipeline()
    fallback = pipeline.schedule_spec.fallback
    if pipeline.microbatches * len(problem.graph.ops) > MAX_SIMULATED_OPS:
        return f"a split of one stage per device fits, run as {fallback}: plan `schedule " \
            f"{fallback}`"
    if not pipeline_schedule.run_fits(problem, found.plan.placement, pipeline)[1]:
        return ""  # it overfills a device as it runs: no claim
    return (f"a split of one stage per device fits, run as {fallback}: `--algo auto` "
            f"compares it with the other plans (or plan `schedule {fallback}`)")


def one_fits(problem: Problem, pipeline: Pipeline, cells: float = MAX_CELLS) -> bool:
    """Whether `pipeline`'s schedule has a fallback (interleaved: 1F1B) and a split of one
    stage per device fits as it (`one_per_device_hint`): `pipehints.in_flight_hints`'s
    `one`."""
    return pipeline.schedule_spec.fallback is not None and bool(
        one_per_device_hint(problem, cells))


def estimate(problem: Problem, pipeline: Pipeline, split: Split) -> float:
    """The iteration without simulating: M - 1 periods of the busiest resource, plus each
    stage's load once (the fill and drain pass every stage)."""
    loads = resource_loads(problem, split)
    return pipeline.schedule_spec.estimate(pipeline.microbatches, loads.period_s, loads.stage_s)


def _simulated_best(problem: Problem, pipeline: Pipeline, per_stages: dict[int, list[Found]],
                    budget: float = math.inf) -> tuple[Found | None, dict[Found, float]]:
    """The candidate whose plan's simulated iteration is shortest (ties: the smaller
    period, then fewer stages, then the least-period kind). Candidates are simulated best
    estimate first while their copies (M x ops each, at most `MAX_SIMULATED_OPS`) fit in
    `budget`; when none is, the best estimate wins. One that never ends (stages waiting on
    each other) is none; None where every one was simulated and none ends (was returned)."""
    ranked = [(f, s, k) for s, found in sorted(per_stages.items())
              for k, f in enumerate(found)]
    guess = {f: estimate(problem, pipeline, f.split) for f, _, _ in ranked}
    ranked.sort(key=lambda c: (guess[c[0]], c[0].period_s, c[1], c[2]))
    copies = pipeline.microbatches * len(problem.graph.ops)
    runs: dict[Found, float] = {}
    if copies <= MAX_SIMULATED_OPS:
        for f, _, _ in ranked[:simulations(budget, copies)]:
            placement = f.split.placement(problem)
            runs[f] = pipeline_schedule.run(problem, placement, pipeline).iteration_s
    ending = [c for c in ranked if math.isfinite(runs.get(c[0], 0.0))]
    if not ending:
        return None, runs
    if not any(c[0] in runs for c in ending):
        return ending[0][0], runs
    chosen = min((c for c in ending if c[0] in runs),
                 key=lambda c: (runs[c[0]], c[0].period_s, c[1], c[2]))[0]
    return chosen, runs


def _split_notes(problem: Problem, pipeline: Pipeline, searched: Searched,
                 mine: Figures) -> dict[str, str]:
    """What shaped the split of the plan of figures `mine`, for `info`: `memory_note` when
    the caps changed the answer (the candidates they ruled out compared as
    `_simulated_best` compares, by the iteration), else `stages_note` when the candidate
    with the least period was passed over because its iteration is longer; empty when
    neither."""
    if searched.ruled_out:
        note = _memory_note(problem, mine, pipeline, searched.ruled_out, searched.runs,
                            searched.budget)
        return {"memory_note": note} if note else {}
    note = _stages_note(problem, mine, pipeline, searched.per_stages, searched.runs)
    return {"stages_note": note} if note else {}


#: the figure candidates are compared by, when they were not simulated
_ESTIMATED = "estimated iteration ((M - 1) T plus each stage's load once)"


def _memory_note(problem: Problem, mine: Figures, pipeline: Pipeline, ruled_out: list[Found],
                 runs: dict[Found, float], budget: float) -> str:
    """How the memory caps shaped the split ('' when none of the candidates they ruled out
    beats the plan, the caps then ruling out only splits that lose anyway, or when the
    iterations compared print the same, '11.2 us (this split: ... 11.2 us)'). Compared by the
    simulated iteration where the plan was chosen by it (the ruled-out candidates simulated
    best estimate first, within what is left of `budget`), else by the estimate."""
    guess = {f: estimate(problem, pipeline, f.split) for f in ruled_out}
    ranked = sorted(ruled_out, key=lambda f: (guess[f], f.period_s, f.split.stages))
    figures: dict[Found, float] = {}
    if mine.simulated_s is not None and runs:
        copies = pipeline.microbatches * len(problem.graph.ops)
        left = budget - len(runs) * copies
        for f in ranked:
            if left < copies:
                break
            left -= copies
            figures[f] = pipeline_schedule.run(problem, f.split.placement(problem),
                                               pipeline).iteration_s
        ours, what = mine.simulated_s, "simulated iteration"
    else:
        figures, ours, what = {f: guess[f] for f in ranked}, mine.estimated_s, _ESTIMATED
    if not figures:
        return ""
    best = min(figures, key=lambda f: (figures[f], f.period_s, f.split.stages))
    if (figures[best] >= ours * (1 - 1e-9)
            or format_seconds(figures[best]) == format_seconds(ours)):
        return ""  # no faster plan, or none the figures as printed show
    split = best.split
    held = stage_bytes(problem, split, pipeline)
    devices = problem.cluster.devices
    over = [d for d, dev in enumerate(devices) if held[d] > dev.memory_bytes]
    where = ""
    if over:
        d = max(over, key=lambda d: held[d] - devices[d].memory_bytes)
        need, holds = format_bytes_of(int(held[d]), devices[d].memory_bytes)
        where = f", but need {need} on {devices[d].name}, which holds {holds}"
    return (f"memory shaped this split: without the caps, {split.stages} stage(s) would give a "
            f"period of {format_seconds(best.period_s)} and a {what} of "
            f"{format_seconds(figures[best])} (this split: {format_seconds(mine.period_s)} "
            f"and {format_seconds(ours)}){where}")


def _stages_note(problem: Problem, mine: Figures, pipeline: Pipeline,
                 per_stages: dict[int, list[Found]], runs: dict[Found, float]) -> str:
    """Why the candidate with the least period was passed over for the plan of figures
    `mine` ('' when it was not, or when the figures as printed do not show it: a period or
    an iteration that reads the same): its iteration is longer (the fill and drain, or
    transfers the period does not see)."""
    least = min((f for found in per_stages.values() for f in found),
                key=lambda f: (f.period_s, f.split.stages))
    if least in runs and mine.simulated_s is not None:
        theirs, ours, what = runs[least], mine.simulated_s, "simulated iteration"
    else:
        theirs, ours, what = (estimate(problem, pipeline, least.split), mine.estimated_s,
                              _ESTIMATED)
    shown = [format_seconds(t) for t in (least.period_s, mine.period_s, theirs, ours)]
    if (least.period_s >= mine.period_s * (1 - 1e-9) or theirs <= ours * (1 + 1e-9)
            or shown[0] == shown[1] or shown[2] == shown[3]):
        return ""
    return (f"{least.split.stages} stage(s) would have a shorter period, {shown[0]} against "
            f"{shown[1]}, but a longer {what}, {shown[2]} against {shown[3]}: the split is "
            "chosen by the iteration")
