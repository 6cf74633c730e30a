"""`auto` under `objective pipeline` keeps to small time limits by sizing its phases from
the limit and the graph's size, never by the clock: the split DP tries as many device
chains per stage count as their fixed costs fit in its work (`splitdp.chains_within`).
Before, it tried `MAX_CHAINS` whatever the limit: on 8 GPUs under `interleaved`
(PipeDream's AlexNet profile, 23 units) `--time-limit 2` spent 1.6 s in the DP alone and
2.3 s in all (a loaded 2-core machine); now 0.8 s and 1.3 s."""

from __future__ import annotations

import collections
import math

import pytest
from pipe_support import random_spec

from planner import loads
from planner.algorithms import Options, autopipe, hybridstage, pipedp, run
from planner.bounds import lower_bound
from planner.pipeline import splitdp
from planner.pipeline.bound import pipeline_bound
from planner.pipeline.units import units

INTERLEAVED = "interleaved; stages_per_device 2"


def _problem():  # eight devices of random speeds: every chain is distinct
    return random_spec(3, 24, 8, training=True, microbatches=8, schedule=INTERLEAVED,
                       memories=(4000,))


def _small():  # `_problem()`'s devices, 6 units: the hybrid's sizes come from the limit and
    # the devices, not the graph's size (on 24 units the same sizes in 8x the time)
    return random_spec(3, 6, 8, training=True, microbatches=8, schedule=INTERLEAVED,
                       memories=(4000,))


def test_small_limits_try_fewer_chains_the_default_all() -> None:
    p = _problem()
    assert p.pipeline is not None
    full = splitdp.search_space(p, p.pipeline, splitdp.cells_for(10.0))
    small = splitdp.search_space(p, p.pipeline, splitdp.cells_for(2.0))
    tiny = splitdp.search_space(p, p.pipeline, splitdp.cells_for(1.0))
    # the default limit (10 s) tries what it tried before: MAX_CHAINS per stage count
    assert max(len(c) for c in full.chains.values()) == splitdp.MAX_CHAINS
    assert full.tried == 171 and full.total == 109588
    # 2 s and 1 s: fewer, the cuts the same (the cells size them, as before)
    assert small.tried == 136 and max(len(c) for c in small.chains.values()) == 19
    assert tiny.tried == 8 and all(len(c) <= 1 for c in tiny.chains.values())
    assert list(small.cuts) == list(full.cuts) == list(tiny.cuts)
    # what they were sized to: the fixed costs within their share of the work, one more
    # chain per stage count not
    assert _fixed(full, 19) <= splitdp.FIXED_SHARE * splitdp.cells_for(2.0) < _fixed(full, 20)
    # at 1 s not even one chain each fits (its splits of 4 stages are enumerated): the
    # least, one, is tried
    assert splitdp.FIXED_SHARE * splitdp.cells_for(1.0) < _fixed(full, 1)


def _fixed(full: splitdp.Space, per: int) -> float:
    """The fixed costs of `per` chains per stage count (of those `full` tried), counted by
    hand: each chain's DP passes, and under `interleaved` the splits enumerated."""
    total = 0.0
    for stages, chains in full.chains.items():
        tried = min(per, len(chains))
        total += splitdp.DP_PASSES * splitdp.PASS_CELLS * tried
        splits = math.comb(len(full.cuts) - 2, stages - 1) * tried
        if tried and stages > 1 and splits <= splitdp.MAX_ENUMERATED:
            total += 2 * splitdp.SPLIT_CELLS * splits
    return total


@pytest.mark.slow
def test_the_info_says_how_many_chains_a_small_limit_tried() -> None:
    p = _problem()
    small = pipedp.search_within(p, Options(time_limit_s=2.0), splitdp.cells_for(2.0))
    assert small.solution.info["chains"] == "136 of 109588 tried"  # what auto's pipedp says
    dp = run("pipedp", p, Options(time_limit_s=2.0)).info  # pipedp alone: every chain
    assert dp["chains"] == "171 of 109588 tried"


def test_the_recomputing_split_derives_each_device_pairs_transfers_once(monkeypatch) -> None:
    """The recomputing contiguous split (auto's candidate where the memory shaped pipedp's
    split, its plan where none fits): what its chains share is derived once: each device
    pair's boundary transfers, each device's stage costs per count in flight. Before, per
    chain and stage: 1.5 s on ResNet-50's 148 chains on 8 GPUs (`--time-limit 2` planned
    in 3.7 s), now 0.5 s, the same splits."""
    from planner.algorithms.pipeilp import contiguous

    pairs: list[tuple[int, int]] = []
    counted = contiguous._boundary_s

    def boundary_s(problem, cuts, a, b):  # type: ignore[no-untyped-def]
        pairs.append((a, b))
        return counted(problem, cuts, a, b)

    monkeypatch.setattr(contiguous, "_boundary_s", boundary_s)
    p = _problem()
    found = contiguous.contiguous_splits(p)
    space = splitdp.search_space(p, p.pipeline)
    links = {(c[k], c[k + 1]) for cs in space.chains.values() for c in cs
             for k in range(len(c) - 1)}
    assert found and space.tried == 171
    # once each (51 device pairs in the chains tried: 53 before they were ranked by the
    # floor of their period, `splitdp._period_floor`)
    assert len(links) == 51 and sorted(pairs) == sorted(links)


@pytest.mark.slow
def test_the_recomputing_split_is_sized_to_the_limit(monkeypatch) -> None:
    """`auto`'s recomputing contiguous split (its plan where no split fits without
    recomputing) searches the chains and cuts of `contiguous.cells_for` its limit: pipedp's
    whole space (`MAX_CELLS`) at the default 10 s and at 0, a tenth of it a second below.
    Before, the whole space at every limit: 0.36 s of Inception-v3 `pinter`'s 1.7 s at
    `--time-limit 1` (now 0.14 s, the recomputing split's checks and run included)."""
    from planner.algorithms.pipeilp import contiguous

    seen: list[float] = []
    derive = contiguous._contiguous

    def spy(problem, *cells):  # type: ignore[no-untyped-def]
        seen.append(cells[0] if cells else splitdp.MAX_CELLS)
        return derive(problem, *cells)

    monkeypatch.setattr(contiguous, "_contiguous", spy)
    got = {}
    for limit in (10.0, 2.0, 1.0, 0.0):  # the cells come from the limit, not the graph: a
        # small one shows them (24 units: the same cells in 3x the time)
        p = random_spec(3, 6, 8, training=True, microbatches=8, schedule=INTERLEAVED,
                        memories=(60,))  # no split fits without recomputing
        seen.clear()
        run("auto", p, Options(time_limit_s=limit))
        got[limit] = seen[:]
    # (each DP run within them: a second where none of the first's splits runs, under the
    # counts of the order a deadlocking split runs in, `warm._deadlock_counts`)
    assert {limit: set(cells) for limit, cells in got.items()} == {
        10.0: {splitdp.MAX_CELLS}, 2.0: {splitdp.MAX_CELLS / 5},
        1.0: {splitdp.MAX_CELLS / 10}, 0.0: {splitdp.MAX_CELLS}}
    p = _problem()
    spaces = [splitdp.search_space(p, p.pipeline, contiguous.cells_for(t)) for t in (1, 10)]
    assert spaces[0].tried < spaces[1].tried == 171  # fewer chains at 1 s, all at 10 s


@pytest.mark.slow
def test_hybrids_cut_moves_are_sized_to_the_limit(
        hybrid_sizes: dict[float, tuple[set[int], set[float]]]) -> None:
    """`auto`'s hybrid candidate moves its cuts within a share of the limit's simulations
    (`autopipe.HYBRID_SHARE`), at most the 30,000 copied ops it had whatever the limit: those
    at the default 10 s (and at 0), 6,250 at 2 s, 3,125 at 1 s, `MIN_MOVES` moves at least.
    Before, 30,000 at every limit: 10 simulations of ResNet-50 (353 ops x 8 micro-batches)
    per layout, 0.3 s of `--time-limit 2`'s 1 s of work on an idle machine."""
    seen = {limit: hybrid_sizes[limit][1] for limit in (10.0, 2.0, 1.0, 0.0)}
    assert seen == {10.0: {30_000}, 2.0: {6_250}, 1.0: {3_125}, 0.0: {30_000}}


def _capped_searches(monkeypatch) -> collections.Counter[tuple[int, ...]]:  # type: ignore[no-untyped-def]
    """Per device chain, the splits the DP searches on it within the memory caps."""
    searched: collections.Counter[tuple[int, ...]] = collections.Counter()
    split = splitdp._kind_split

    def kind_split(problem, u, space, chain, pipeline, capped, kind, **how):  # type: ignore[no-untyped-def]
        # not E707's hints' searches: the 1F1B split, fewer micro-batches
        if capped and pipeline.per_device > 1 and pipeline == problem.pipeline:
            searched[tuple(chain)] += 1
        return split(problem, u, space, chain, pipeline, capped, kind, **how)

    monkeypatch.setattr(splitdp, "_kind_split", kind_split)
    return searched


@pytest.fixture(scope="module")
def hybrid_sizes() -> dict[float, tuple[set[int], set[float]]]:
    """Per limit, what `auto`'s hybrid candidate was given on `_small()`: its DP's cuts
    (`pipehybrid.MAX_CUTS` where none), its cut moves' budget of copied ops
    (`pipehybrid.REFINE_COPIED_OPS` where none). One run per limit serves both tests."""
    from planner.algorithms import pipehybrid

    cuts: list[int] = []
    budgets: list[float] = []
    dp, moved = pipehybrid._dp, pipehybrid.refine

    def spy_dp(problem, pipeline, *most):  # type: ignore[no-untyped-def]
        cuts.append(most[0] if most else pipehybrid.MAX_CUTS)
        return dp(problem, pipeline, *most)

    def spy_refine(problem, pipeline, lay, figures, *budget):  # type: ignore[no-untyped-def]
        budgets.append(budget[0] if budget else pipehybrid.REFINE_COPIED_OPS)
        return moved(problem, pipeline, lay, figures, *budget)

    seen = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipehybrid, "_dp", spy_dp)
        patch.setattr(pipehybrid, "refine", spy_refine)
        for limit in (10.0, 2.0, 1.0, 0.5, 0.0):
            cuts.clear()
            budgets.clear()
            run("auto", _small(), Options(time_limit_s=limit))
            seen[limit] = (set(cuts), set(budgets))
    return seen


@pytest.mark.slow
def test_hybrids_dp_cuts_are_sized_to_the_limit(
        hybrid_sizes: dict[float, tuple[set[int], set[float]]]) -> None:
    """`auto`'s hybrid candidate's DP cuts at `autopipe.HYBRID_CUTS` unit boundaries a second of
    its limit, at most the `pipehybrid.MAX_CUTS` it had whatever the limit: those at 2 s
    and up and at 0, 200 at 1 s. Before, 400 at every limit: on Inception-v3 `pinter`
    (326 units, 8 GPUs) 0.29 s of `--time-limit 1`'s 1.04 s; now 0.16 s of 0.93 s, the
    same plan."""
    from planner.algorithms import pipehybrid

    seen = {limit: cuts for limit, (cuts, _) in hybrid_sizes.items()}
    assert seen == {10.0: {400}, 2.0: {400}, 1.0: {200}, 0.5: {100}, 0.0: {400}}
    p = random_spec(3, 150, 8, training=True, microbatches=8, schedule=INTERLEAVED)
    assert len(pipehybrid._tables(p, 100).cuts) <= 101 < len(pipehybrid._tables(p).cuts)
    # those figures were sized on one replica a stage (`HYBRID_REFERENCE_WORK`, 36 stage
    # costs a cut on 8 devices); `data_parallel auto` tries 1 to 8 replicas, 204 a cut
    # (replicated ones twice), so its cuts are 36/204 of those: the same at 10 s where the
    # graph has no more than 352 units (every PipeDream profile), 70 at 2 s
    replicated = _replicated()
    assert autopipe.hybrid_work_per_cut(replicated, replicated.pipeline) == 204
    assert {t: autopipe._hybrid_work(replicated, t)[1] for t in (10.0, 2.0, 1.0, 0.5, 0.0)} == {
        10.0: 352, 2.0: 70, 1.0: 35, 0.5: 17, 0.0: 400}


def _replicated():  # eight devices of random speeds, stages replicated as the DP chooses
    return random_spec(3, 24, 8, training=True, microbatches=8, memories=(4000,),
                       settings="; data_parallel auto")


@pytest.mark.slow
def test_hybrids_dp_work_counts_the_replica_counts_it_tries(monkeypatch) -> None:
    """Under `data_parallel auto` the hybrid DP evaluates, per candidate cut, a stage cost
    per pass, count of devices left and replica count (`autopipe.hybrid_work_per_cut`): its
    cuts are sized so that this work keeps to the share `HYBRID_CUTS` gives one replica a
    stage. Before, 200 cuts a second whatever the replica counts: Inception-v3 on a DGX-1,
    `data_parallel auto`, 1F1B, `--time-limit 2`: the DP took 2.9 s of CPU at 326 cuts
    (0.53 s under `data_parallel 1`), auto 7.6-7.8 s of CPU on a loaded 2-core machine;
    now 70 cuts, 4.4-4.7 s (iteration 1.3990 s -> 1.1565 s)."""

    work: list[float] = []
    cost = hybridstage.Start.cost

    def spy(self, problem, c, pipeline, group, *rest):  # type: ignore[no-untyped-def]
        work.append(1.0 if len(group) == 1 else 2.0)  # autopipe.REPLICATED_COST
        return cost(self, problem, c, pipeline, group, *rest)

    monkeypatch.setattr(hybridstage.Start, "cost", spy)
    limit = 0.5
    run("auto", _replicated(), Options(time_limit_s=limit))
    share = 200 * limit * 36  # HYBRID_CUTS a second, HYBRID_REFERENCE_WORK a cut: 3,600
    assert 0 < sum(work) <= share  # before: 24 cuts, 4,896


@pytest.mark.slow
def test_before_e707_the_chains_left_are_searched_not_all_again(monkeypatch) -> None:
    """Where the chains a limit's work allowed hold no split that fits, pipedp searches
    every chain before E707 (`auto` then plans the recomputing split): only those it had
    not searched, not all of them again, with the same answer. Before, the whole DP ran
    twice: ResNet-50 `pinter` at `--time-limit 2`, 0.6 s more on an idle machine."""
    import pytest

    from planner.errors import InfeasibleError

    searched = _capped_searches(monkeypatch)
    p = random_spec(3, 24, 8, training=True, microbatches=8, schedule=INTERLEAVED,
                    memories=(150,))
    cells = splitdp.cells_for(2.0)
    with pytest.raises(InfeasibleError) as err:
        pipedp.search_within(p, Options(time_limit_s=2.0), cells)
    assert err.value.diagnostics[0].code == "E707"
    assert splitdp.search_space(p, p.pipeline, cells).tried == 136  # then all 171
    assert len(searched) == 171 and set(searched.values()) == {len(splitdp.KINDS)}


@pytest.mark.slow
def test_auto_searches_the_chains_left_out_only_where_no_other_plan_fits(monkeypatch) -> None:
    """Under `auto`, where the chains a limit's work allowed hold no split that fits,
    pipedp's search of the others waits: its other candidates (the recomputing split, one
    stage per device, hybrid's layouts) are planned first, and the rest are searched only
    where none fits, before E707. The plan's `why` says which chains were searched, and
    E707's "fits the devices' memory" comes from the search of them all. Before, every
    chain first: on Inception-v3 `pinter` at `--time-limit 1` 0.35 s of the DP's 0.55 s."""
    import pytest

    from planner.errors import InfeasibleError

    searched = _capped_searches(monkeypatch)
    # a split of one stage per device fits, run as 1F1B (d0, d3); with 8 receive buffers a
    # boundary no interleaved split does up to 350 MB (at 150 MB, nothing fits now)
    p = random_spec(3, 24, 8, training=True, microbatches=8, schedule=INTERLEAVED,
                    memories=(300,))
    sol = run("auto", p, Options(time_limit_s=2.0))
    assert sol.info["chosen"] == "pipedp, one stage per device"
    assert "fits on the 136 device chain(s) its time limit's work searched; the other 35 " \
           "it tries were left out" in sol.info["why"]
    interleaved = [c for c in searched if len(c) != len(set(c))]  # chains repeated K times
    assert len(interleaved) == 136  # not 1F1B's chains (one stage per device) too
    searched.clear()
    p = random_spec(3, 24, 8, training=True, microbatches=8, schedule=INTERLEAVED,
                    memories=(60,))  # nothing fits: every chain searched, then E707
    # (from 180 MB one stage, d3 alone, fits, run as 1F1B: auto plans it)
    with pytest.raises(InfeasibleError) as err:
        run("auto", p, Options(time_limit_s=2.0))
    # the E707 of every chain pipedp tries, which says what it left out of the rest
    assert "fits the devices' memory among those searched (171 of " in \
        err.value.diagnostics[0].message
    assert len([c for c in searched if len(c) != len(set(c))]) == 171


def _chains_one_by_one(problem, width: int, wrap: bool) -> list[tuple[int, ...]]:  # type: ignore[no-untyped-def]
    """`splitdp._ranked_chains`, a permutation at a time (the reference): those that may
    hold every unit's allowed devices first, then the least floor of the period, the least
    worst link, the least total, the first permutation."""
    import itertools

    from planner.cost import costs

    m, c, sig = len(problem.cluster.devices), costs(problem), splitdp._classes(problem)
    links: dict[tuple[float, ...], int] = {}
    pair = [[links.setdefault((c.latency[a][b], c.inv_bandwidth[a][b], c.latency[b][a],
                               c.inv_bandwidth[b][a]), len(links)) for b in range(m)]
            for a in range(m)]
    slow = [[max(c.inv_bandwidth[a][b], c.inv_bandwidth[b][a]) for b in range(m)]
            for a in range(m)]
    u = units(problem)
    work = u.compute_prefix[:, -1]
    crossing = min(u.forward_bytes[x] + u.backward_bytes[x] for x in range(1, u.count)) \
        if u.count > 1 else 0.0
    seen: dict[tuple[int, ...], tuple[bool, float, float, float, tuple[int, ...]]] = {}
    for chain in itertools.islice(itertools.permutations(range(m), width),
                                  splitdp.MAX_EXAMINED):
        key, worst, total = [sig[chain[0]]], 0.0, 0.0
        for a, b in itertools.pairwise(chain):
            key += (pair[a][b], sig[b])
            worst, total = max(worst, slow[a][b]), total + slow[a][b]
        if wrap:
            key.append(pair[chain[-1]][chain[0]])
        # every unit's allowed devices reachable: the first's first, the last's last
        holds = (chain[0] in u.allowed[0] and chain[-1] in u.allowed[-1]
                 and all(set(chain) & set(a) for a in u.allowed))
        rate = sum(1 / work[d] if work[d] > 0 else 0.0 for d in chain)
        floor = 1 / rate if rate > 0 else math.inf  # the compute spread at the rates
        if width > 1 and u.count > 1 and problem.contention != "none":
            floor = max(floor, worst * crossing)  # the cheapest boundary on the worst link
        seen.setdefault(tuple(key), (not holds, floor, worst, total, chain))
    top = max((f for _, f, *_ in seen.values() if math.isfinite(f)), default=0.0) or 1.0
    return [chain for *_, chain in sorted((h, round(f / top, 12), w, t, c)
                                          for h, f, w, t, c in seen.values())]


@pytest.mark.slow
def test_the_chains_are_listed_at_once_as_they_were_one_by_one(monkeypatch) -> None:
    """The device chains (`splitdp._ranked_chains`) are listed over every permutation at
    once in numpy, the same chains in the same order as one at a time (0.2 s per kind of
    chain on 8 GPUs, twice under `interleaved` with its 1F1B split: 0.4 s of `--time-limit
    2`'s 1 s of work; now 0.1 s), and the first `MAX_EXAMINED` permutations, where there
    are more, are those `itertools.permutations` gives first."""
    import itertools

    for m, width, most in ((1, 1, 5), (4, 2, 5), (5, 3, 7), (6, 6, 1000), (7, 4, 100)):
        expected = list(itertools.islice(itertools.permutations(range(m), width), most))
        assert splitdp.permutations_first(m, width, most).tolist() == [list(c) for c in expected]
    problems = [random_spec(seed, 6, m, training=True, pin=seed % 2 == 0)
                for seed in range(4) for m in (3, 5, 7)] + [_problem()]
    for most in (splitdp.MAX_EXAMINED, 50):
        monkeypatch.setattr(splitdp, "MAX_EXAMINED", most)
        for p in problems:
            for width in range(1, len(p.cluster.devices) + 1):
                for wrap in (False, True):
                    assert (splitdp._ranked_chains(p, width, wrap)
                            == _chains_one_by_one(p, width, wrap))


def _chain_on_eight(memory_mb: int):  # type: ignore[no-untyped-def]
    """16 forward ops in a chain on 8 GPUs, `interleaved` with 2 stages per device and 16
    micro-batches: all 17 boundaries are cuts at any limit, so one chain per stage count
    enumerates 32,768 splits."""
    ops = "\n".join(f"  op o{i} {{ time {1 + i % 3} ms  output 4 MB  params 10 MB }}"
                    for i in range(16))
    return loads(f"""cluster c {{
  device gpu[0..7] {{ memory {memory_mb} MB }}
  link gpu[*] <-> gpu[*] {{ bandwidth 10 GB/s }}
}}
graph g {{
{ops}
  {" -> ".join(f"o{i}" for i in range(16))}
}}
plan p {{ graph g  cluster c  objective pipeline  schedule interleaved  stages_per_device 2
          microbatches 16 }}
""").plan("p")


def _enumerated_splits(monkeypatch) -> list[int]:  # type: ignore[no-untyped-def]
    """The splits the DP enumerates (each judged by `stage_bytes`), counted as they go."""
    judged = [0]
    counted = splitdp.stage_bytes

    def stage_bytes(*args, **kwargs):  # type: ignore[no-untyped-def]
        judged[0] += 1
        return counted(*args, **kwargs)

    monkeypatch.setattr(splitdp, "stage_bytes", stage_bytes)
    return judged


def test_a_small_limit_enumerates_only_the_splits_its_work_holds(monkeypatch) -> None:
    """Under `interleaved` the splits of a stage count are enumerated (exact) only as far
    as the limit's work holds them, the fewest stages first, the rest by the per-stage DP.
    Before, `chains_within` could only cut the chains to one per stage count, and every
    stage count of at most `MAX_ENUMERATED` splits was enumerated whatever the limit: this
    chain planned in 4.2 s at `--time-limit 0.05` (32,768 splits), and its E707 with 40 MB
    GPUs took 6.9 s; now 0.2 s and 0.3 s, no split enumerated."""
    judged = _enumerated_splits(monkeypatch)
    p = _chain_on_eight(400)
    assert p.pipeline is not None
    sol = run("auto", p, Options(time_limit_s=0.05))
    assert judged[0] == 0  # before: 32,768
    tiny = splitdp.search_space(p, p.pipeline, splitdp.cells_for(0.05))
    assert tiny.tried == 8 and len(tiny.cuts) == 17  # one chain a count, every boundary
    assert tiny.enumerated == frozenset()  # the chains' DP passes alone take the share
    assert sol.info["iteration_s"] == pytest.approx(0.1088)
    # no limit (0: `MAX_CELLS`): every count enumerated, as before, and said to be exact
    whole = splitdp.search_space(p, p.pipeline, splitdp.cells_for(0.0))
    assert whole.enumerated == frozenset(range(2, 17))
    exact = pipedp.search_within(p, Options(), splitdp.cells_for(0.0)).solution.info
    assert exact["split_search"] == "exact: every split of every chain enumerated"
    assert judged[0] == 2 ** 15  # its splits of 2..16 stages, sum of C(15, s - 1)
    # what `split_search` reads: at 0.05 s the search is no longer said to be exact
    assert not splitdp.interleaved_exact(p, p.pipeline, splitdp.cells_for(0.05))
    # and auto's plan here is the one it makes with no limit
    assert sol.plan.placement == run("auto", p, Options(time_limit_s=0.0)).plan.placement


def test_e707_at_a_small_limit_enumerates_no_more(monkeypatch) -> None:
    """`auto`'s E707 at a small limit: its search of every chain and each hint's check
    are held to the limit's work too."""
    from planner.errors import InfeasibleError

    judged = _enumerated_splits(monkeypatch)
    with pytest.raises(InfeasibleError) as err:
        run("auto", _chain_on_eight(40), Options(time_limit_s=0.05))
    assert judged[0] == 0  # before: 114,688 (the search and each hint's)
    diag = err.value.diagnostics[0]  # the words it had before, with no split enumerated
    assert diag.code == "E707" and diag.message.endswith(
        "fits the devices' memory among those searched (the per-stage DP, not every split)")
    assert diag.hints == ("give the devices more `memory`",
                          "`--algo pipeilp` places each unit on any device it may use")


def test_where_the_chains_fit_every_count_is_enumerated_as_before() -> None:
    """The default limit's search (`chains_within` fits its chains) enumerates every stage
    count of at most `MAX_ENUMERATED` splits, as it did before the work held them."""
    p = _problem()
    assert p.pipeline is not None
    for limit in (10.0, 2.0):
        space = splitdp.search_space(p, p.pipeline, splitdp.cells_for(limit))
        before = {s for s, c in space.chains.items() if s > 1 and math.comb(
            len(space.cuts) - 2, s - 1) * len(c) <= splitdp.MAX_ENUMERATED}
        assert space.enumerated == before and before


PINNED_LAST = """
graph g {
  op L0 { time 0.5 ms  output 1 MiB  temp 32 MiB }
  op L1 { time 1 ms  params 16 MiB  output 8 MiB  temp 32 MiB }
  op L2 { time 3 ms  params 16 MiB  output 4 MiB  temp 8 MiB }
  L0 -> L1 -> L2
  L0 -> L2 { bytes 16 MiB }
}
cluster c {
  device gpu0 { memory 300 MiB  speed 2 }
  device gpu1 { memory 300 MiB  speed 3 }
  device gpu2 { memory 150 MiB  speed 2 }
  link gpu[*] <-> gpu[*] { bandwidth 1 GB/s  latency 10 us }
  link gpu2 -> gpu0 { bandwidth 0.1 GB/s  latency 1 us }
}
plan p { graph g  cluster c  objective pipeline  microbatches 3  schedule gpipe
         pin L2 to gpu2  contention device }
"""

FAST_LAST = """
graph g {
  op L0 { time 3 ms  params 4 MiB  output 32 MiB }
  op L1 { time 2 ms  params 64 MiB  output 1 MiB }
  L0 -> L1
}
cluster c {
  device gpu0 { memory 1000 MiB  speed 0.5 }
  device gpu1 { memory 4000 MiB  speed 1 }
  device gpu2 { memory 4000 MiB  speed 3 }
  link gpu[*] <-> gpu[*] { bandwidth 1 GB/s  latency 1000 us }
}
plan p { graph g  cluster c  objective pipeline  microbatches 5  schedule gpipe
         contention device }
"""


@pytest.mark.parametrize(("text", "device"), [(PINNED_LAST, 2), (FAST_LAST, 2)])
def test_a_small_limit_tries_the_chains_that_can_win_first(text: str, device: int) -> None:
    """The chains were ranked by their links alone, so the few a small limit tries per
    stage count were gpu0 and gpu1 alone: not gpu2, which the last layer is pinned to
    (auto at `--time-limit 0.1` kept a plan 7.8 times slower than at 0: 52.6 against
    6.75 ms), nor gpu2 three times as fast as gpu0 (`search` at 0.1: 64.5 against 50 ms).
    Chains that cannot respect the pins now come last, the others by the floor of their
    period (the compute at the devices' rates, or the cheapest boundary on the worst
    link), then by their links as before."""
    p = loads(text).plan()
    assert p.pipeline is not None
    small = splitdp.cells_for(0.1)
    space = splitdp.search_space(p, p.pipeline, small)
    assert space.tried < space.total  # the limit leaves chains out
    assert space.chains[1][0] == (device,)
    full = pipedp.place_within(p, Options(), splitdp.MAX_CELLS)
    within = pipedp.place_within(p, Options(), small)
    assert within.plan.placement == full.plan.placement
    assert within.info["iteration_s"] == full.info["iteration_s"]
    assert full.info["iteration_s"] >= pipeline_bound(p, lower_bound(p).makespan_s).iteration_s
