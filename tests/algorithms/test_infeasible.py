"""Infeasibility: every memory-aware algorithm raises `InfeasibleError` with a diagnosis
that names the ops, devices and figures."""

from __future__ import annotations

import dataclasses

import pytest
from algo_dags import MIB
from algo_support import HEURISTICS, check_plan

from planner.algorithms import run
from planner.algorithms.infeasible import diagnose
from planner.errors import Diagnostic, InfeasibleError
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Problem

# both list-scheduling engines meet these hand-derived cases (`list_engine`, conftest.py)
pytestmark = pytest.mark.usefixtures("list_engine")


def _problem(sizes: list[int], caps: list[int], *, groups: tuple[tuple[int, ...], ...] = (),
             pins: dict[int, int] | None = None, chain: bool = False) -> Problem:
    ops = tuple(Op(f"op{i}", 1e-3, params_bytes=s * MIB) for i, s in enumerate(sizes))
    edges = tuple(Edge(i, i + 1, 0) for i in range(len(sizes) - 1)) if chain else ()
    devs = tuple(Device(f"gpu{d}", c * MIB) for d, c in enumerate(caps))
    links = tuple(Link(a, b, 1e9) for a in range(len(caps)) for b in range(len(caps)) if a != b)
    return Problem("p", Graph("g", ops, edges, groups), Cluster("c", devs, links),
                   pins=pins or {})


def _codes(err: InfeasibleError) -> list[str]:
    return [d.code for d in err.diagnostics]


@pytest.mark.parametrize("algorithm", HEURISTICS)
def test_total_capacity_too_small(algorithm: str) -> None:
    problem = _problem([80, 80, 80], [100, 100])
    with pytest.raises(InfeasibleError) as err:
        run(algorithm, problem)
    assert _codes(err.value) == ["E303"]
    message = err.value.diagnostics[0].message
    assert "240.00 MiB" in message and "200.00 MiB" in message and "2 device(s)" in message


@pytest.mark.parametrize("algorithm", HEURISTICS)
def test_group_larger_than_any_device(algorithm: str) -> None:
    problem = _problem([60, 60, 10], [100, 100], groups=((0, 1),))
    with pytest.raises(InfeasibleError) as err:
        run(algorithm, problem)
    (diag,) = err.value.diagnostics
    assert diag.code == "E301"
    assert "`op0` and `op1`" in diag.message and "120.00 MiB" in diag.message
    assert "`gpu0`" in diag.message and "100.00 MiB" in diag.message


@pytest.mark.parametrize("algorithm", HEURISTICS)
def test_pins_overfill_their_device(algorithm: str) -> None:
    problem = _problem([60, 60, 10], [100, 100], pins={0: 1, 1: 1})
    with pytest.raises(InfeasibleError) as err:
        run(algorithm, problem)
    (diag,) = err.value.diagnostics
    assert diag.code == "E302"
    assert "pinned to `gpu1`" in diag.message and "`op0`, `op1`" in diag.message


def test_a_heuristic_that_runs_out_of_room_says_so_honestly() -> None:
    # 200 MiB of ops on two 100 MiB devices, no two ops over 100 MiB: no cheap proof, but
    # no subset makes exactly 100 MiB, so nothing fits (bin packing). (60, 60 and a group
    # of 80 was the case before E307 proved it.)
    problem = _problem([45, 45, 40, 35, 35], [100, 100])
    assert diagnose(problem) == []
    with pytest.raises(InfeasibleError) as err:
        run("metf", problem)
    (diag,) = err.value.diagnostics
    assert diag.code == "E704"
    assert "`metf` ran out of memory: op `op4` fits on no device" in diag.message
    assert "`gpu0` would need 120.00 MiB of 100.00 MiB, 20.00 MiB short" in diag.message
    assert any("least total memory 200.00 MiB (static) vs total capacity 200.00 MiB" in h
               for h in diag.hints)
    assert any("may still be feasible" in h for h in diag.hints)
    # m-ETF already retried with m-TOPO's placement: m-TOPO is not suggested; and under no
    # budget, which was said: 200 MiB on two 100 MiB devices leave every rung at 100 MiB
    assert any(h.startswith("it also retried with m-TOPO's placement; ") for h in diag.hints)
    assert not any("--algo mtopo" in h for h in diag.hints)
    # only what can help: 200 MiB fit no 100 MiB device, so not `single`; static memory,
    # so an exact solver settles it
    (hint,) = [h for h in diag.hints if "may still be feasible" in h]
    assert "--algo single" not in hint
    assert hint.endswith("try --algo search or an exact solver (--algo cpsat, or --algo ilp)")


@pytest.mark.parametrize(("algorithm", "limit"), [("auto", 0.0), ("search", 1.0)])
def test_auto_and_search_do_not_advise_themselves(algorithm: str, limit: float) -> None:
    # every heuristic ran and failed on the bin-packing case above: under static memory
    # `search` moves only from their plans, so the first heuristic's advice to try
    # `--algo search` (what auto has just run, or what just failed) is not repeated
    from planner.algorithms import Options

    problem = _problem([45, 45, 40, 35, 35], [100, 100])
    with pytest.raises(InfeasibleError) as err:
        run(algorithm, problem, Options(time_limit_s=limit))
    (diag,) = err.value.diagnostics
    assert diag.code == "E704"
    assert "--algo search" not in diag.hints[-1] and "--algo mtopo" not in diag.hints[-1]
    assert diag.hints[-1].endswith(
        "no other heuristic found a plan either, and `search` moves only from theirs; the "
        "instance may still be feasible: try an exact solver (--algo cpsat, or --algo ilp)")


@pytest.mark.parametrize("algorithm", ["cpsat", "ilp"])
def test_an_exact_solver_left_no_time_does_not_advise_itself(algorithm: str) -> None:
    # no heuristic plan, no solver time: E704 then E811, neither a proof; the E704 said
    # "try --algo search or an exact solver (--algo cpsat, or --algo ilp)" and E811's
    # meaning said "after the heuristics' proof"; exit 6 (a search's limit), not 3
    from planner.algorithms import Options
    from planner.codes import CODES
    from planner.errors import SearchLimitError

    problem = _problem([45, 45, 40, 35, 35], [100, 100])
    with pytest.raises(SearchLimitError) as err:
        run(algorithm, problem, Options(time_limit_s=0))
    assert [d.code for d in err.value.diagnostics] == ["E704", "E811"]
    assert err.value.exit_code == CODES["E811"].exit == 6
    e704, e811 = err.value.diagnostics
    assert e704.hints[-1].endswith("the instance may still be feasible: try a longer "
                                   "--time-limit")
    assert e811.hints == ("neither is a proof that no plan exists",)
    assert "proof" not in CODES["E811"].meaning.split(":")[0]


def test_single_names_the_shortfall() -> None:
    problem = _problem([60, 60], [100, 100])
    with pytest.raises(InfeasibleError) as err:
        run("single", problem)
    (diag,) = err.value.diagnostics
    assert diag.code == "E706"
    assert diag.message == ("no single device holds all 2 ops: `gpu0` (the closest) would "
                            "need 120.00 MiB but holds 100.00 MiB (short by 20.00 MiB)")
    check_plan(problem, run("metf", problem).plan)  # while a spread plan exists


def _fork_under_liveness() -> Problem:
    """op0 -> op1 -> op2 -> (op3, op4) -> op5, 40 MiB outputs (op5's none), two 100 MiB
    devices, `memory liveness`."""
    sizes = [40, 40, 40, 40, 40, 0]
    ops = tuple(Op(f"op{i}", 1e-3, output_bytes=s * MIB) for i, s in enumerate(sizes))
    edges = tuple(Edge(a, b, sizes[a] * MIB)
                  for a, b in ((0, 1), (1, 2), (2, 3), (2, 4), (3, 5), (4, 5)))
    devs = (Device("gpu0", 100 * MIB), Device("gpu1", 100 * MIB))
    return Problem("p", Graph("g", ops, edges),
                   Cluster("c", devs, (Link(0, 1, 1e9), Link(1, 0, 1e9))),
                   memory_model="liveness")


def _fork_error(algorithm: str, memory: str = "liveness") -> Diagnostic:
    """The one error `algorithm` raises on `_fork_under_liveness` (under `memory`)."""
    problem = dataclasses.replace(_fork_under_liveness(), memory_model=memory)
    with pytest.raises(InfeasibleError) as err:
        run(algorithm, problem)
    (diag,) = err.value.diagnostics
    return diag


def test_single_names_the_shortfall_of_the_plans_memory_model() -> None:
    # `_fork_under_liveness`: on one device the peak is 120 MiB (op2's, op3's and op4's
    # outputs while op4 runs), not the 200 MiB static total that E706 quoted before
    # (short by 100 MiB where it is 20)
    diag = _fork_error("single")
    assert diag.code == "E706"
    assert diag.message == ("no single device holds all 6 ops: `gpu0` (the closest) would "
                            "need 120.00 MiB at its liveness peak but holds 100.00 MiB "
                            "(short by 20.00 MiB)")


def test_a_heuristics_shortfall_under_liveness_says_it_is_static_accounting() -> None:
    # `_fork_under_liveness`: m-ETF's figures (160 and 120 MiB) count every output to the
    # end, not the liveness peaks the plan is judged by; E704 said "would need" them plainly
    diag = _fork_error("metf")
    assert diag.code == "E704"
    assert ("fits on no device beside the ops it placed before it, by static accounting "
            "(above the liveness peaks) (`gpu0` would need 160.00 MiB of 100.00 MiB"
            ) in diag.message
    assert "static accounting" not in _fork_error("metf", "static").message


def test_colocation_group_reserves_its_memory() -> None:
    # group {0, 2} (50 + 50 MiB) on a chain 0 -> 1 -> 2; devices 120 and 200 MiB. m-ETF
    # puts op0 first: gpu0 would have to hold the whole group (100) plus op1 later; the
    # reservation keeps op1 (40 MiB) off gpu0 (100 + 40 > 120), so the plan stays feasible.
    problem = _problem([50, 40, 50], [120, 200], groups=((0, 2),), chain=True)
    for algorithm in ("metf", "msct", "heft", "cpop", "mtopo", "roundrobin", "random"):
        plan = run(algorithm, problem).plan
        check_plan(problem, plan)
        assert plan.placement[0] == plan.placement[2]


def test_e704_suggests_single_only_where_one_device_could_hold_it_all() -> None:
    # the diagnostic a heuristic would raise, for a problem one device could hold
    from planner.algorithms.infeasible import stuck_error

    small = _problem([10, 10], [100, 100])
    (hint,) = [h for h in stuck_error(small, "metf", 0).diagnostics[0].hints
               if "may still be feasible" in h]
    assert "--algo mtopo, --algo single, --algo search or an exact solver" in hint
    liveness = dataclasses.replace(small, memory_model="liveness")
    (hint,) = [h for h in stuck_error(liveness, "metf", 0, retried=True).diagnostics[0].hints
               if "may still be feasible" in h]
    assert hint.endswith("try --algo single or --algo search")  # no exact model: stricter


def _constant_case() -> Problem:
    # o0 (43 + 7 MiB) is a constant feeding o3, so the schedulers first place it with o3;
    # o1 (27 + 24) feeds o2 (1 + 17, 18 MiB) and o3 (14 + 25, 12 MiB); o0 -> o3 carries 4
    # MiB. Two 100 MiB devices: a plan exists ({o1, o3} on one device: 51 + 39 + 4 = 94;
    # {o0, o2}: 50 + 18 + 18 = 86), but the list schedulers put o1 and o2 together (69)
    sizes = ((43, 7), (27, 24), (1, 17), (14, 25))
    ops = tuple(Op(f"o{i}", 1e-3, params_bytes=p * MIB, output_bytes=o * MIB)
                for i, (p, o) in enumerate(sizes))
    edges = tuple(Edge(s, d, b * MIB) for s, d, b in ((0, 3, 4), (1, 2, 18), (1, 3, 12)))
    devs = (Device("gpu0", 100 * MIB), Device("gpu1", 100 * MIB))
    return Problem("p", Graph("g", ops, edges),
                   Cluster("c", devs, (Link(0, 1, 1e9), Link(1, 0, 1e9))))


@pytest.mark.parametrize("algorithm", ["msct", "metf", "heft", "cpop"])
def test_e704_counts_no_constant_as_placed_with_its_consumer(algorithm: str) -> None:
    # The figures were the first pass's, where o0 follows o3: o3 "would need 158.00 MiB"
    # on the device of o1 and o2 (69 + 39 + o0's 50), though the retry without that rule
    # ran too. They are now that retry's: o3 beside o1 and o2 holds 69 + 39 and a 4 MiB
    # copy of o0 (112), beside o0 50 + 39 and a 12 MiB copy of o1 (101): static accounting.
    # (mtopo dead-ended here too; its first fit plans it: test_memory.py)
    problem = _constant_case()
    assert diagnose(problem) == []
    with pytest.raises(InfeasibleError) as err:
        run(algorithm, problem)
    (diag,) = err.value.diagnostics
    assert diag.code == "E704"
    assert f"`{algorithm}` ran out of memory: op `o3` fits on no device" in diag.message
    assert "158.00 MiB" not in diag.message
    needs = {f.split(" would need ")[1]
             for f in diag.message.split(" (", 1)[1].rstrip(")").split("; ")}
    assert needs == {"112.00 MiB of 100.00 MiB, 12.00 MiB short",
                     "101.00 MiB of 100.00 MiB, 1.00 MiB short"}
    assert diag.hints[0] == ("each figure counts the ops placed on that device, op `o3` "
                             "(params, output, temp) and the copies of its inputs from "
                             "other devices")
    check_plan(problem, run("cpsat", problem).plan)  # a plan exists


def test_e704_says_its_figures_count_the_rest_of_the_ops_colocation_group() -> None:
    # op3 and op4 (35 MiB each) are one group: m-ETF's dead end at op3 counts both, beside
    # op1 (45) on gpu1 (115) and beside op0 and op2 (85) on gpu0 (155), and says so
    problem = _problem([45, 45, 40, 35, 35], [100, 100], groups=((3, 4),))
    with pytest.raises(InfeasibleError) as err:
        run("metf", problem)
    (diag,) = err.value.diagnostics
    assert "`gpu0` would need 155.00 MiB" in diag.message
    assert "`gpu1` would need 115.00 MiB" in diag.message
    assert diag.hints[0].endswith("the copies of its inputs from other devices and the rest "
                                  "of its colocation group, which goes with it")


def test_e704_names_only_the_retries_that_ran() -> None:
    # 224 MiB of params, outputs and temps on two 102 MiB devices under `liveness`: every
    # budget of the ladder is the devices' memory (an even share, 112 MiB, is above it), so
    # no pass ran under a budget; the hint said "retried with tighter memory budgets"
    from planner.algorithms.listsched import Instance, budget_ladder

    sizes = ((36, 5, 0), (31, 29, 31), (24, 14, 0), (1, 25, 28))
    ops = tuple(Op(f"o{i}", 1e-3, params_bytes=p * MIB, output_bytes=o * MIB,
                   temp_bytes=t * MIB) for i, (p, o, t) in enumerate(sizes))
    edges = tuple(Edge(s, d, b * MIB) for s, d, b in ((0, 1, 5), (1, 2, 29), (1, 3, 29)))
    devs = (Device("gpu0", 102 * MIB), Device("gpu1", 102 * MIB))
    problem = Problem("p", Graph("g", ops, edges),
                      Cluster("c", devs, (Link(0, 1, 1e9), Link(1, 0, 1e9))),
                      memory_model="liveness")
    assert budget_ladder(Instance(problem)) == []
    with pytest.raises(InfeasibleError) as err:
        run("msct", problem)
    (diag,) = err.value.diagnostics
    assert diag.code == "E704"
    assert "budget" not in diag.hints[-1]
    # o0, a source with one consumer, follows it at first: step 5 ran without that rule
    assert diag.hints[-1].startswith(
        "it also retried with no memory checks (judged by simulation), contiguous splits "
        "and m-TOPO's placement, then all of it again with no constant following its "
        "consumer; the instance may still be feasible")


#: ops of 27.06 GiB on GPUs of 15.63 and 13.00 GiB, where two constants (w0, w1) follow
#: their consumers at first; mtopo, roundrobin, random and msct dead-end (cpsat: E813)
_DEAD_END = """
cluster c {
  device gpu0 { kind v100  memory 16003 MiB  flops 15 TFLOPS }
  device gpu1 { kind v100  memory 13316 MiB  flops 15 TFLOPS }
  link gpu[*] <-> gpu[*] { bandwidth 25 GB/s  latency 5 us }
}
graph g {
  op o0 { time 5 ms  params 2212 MiB  output 1277 MiB }
  op o1 { time 5 ms  params 1356 MiB  output 939 MiB }
  op o2 { time 2 ms  params 114 MiB  output 1648 MiB }
  op o3 { time 5 ms  params 2602 MiB  output 363 MiB }
  op o4 { time 1 ms  params 2393 MiB  output 371 MiB }
  op o5 { time 3 ms  params 2257 MiB  output 1633 MiB }
  op o6 { time 1 ms  params 132 MiB  output 1724 MiB }
  op w0 { time 0.01 ms  params 4899 MiB  output 345 MiB }
  op w1 { time 0.01 ms  params 2117 MiB  output 1328 MiB }
  w0 -> o5
  w1 -> o6
  o0 -> o1
  o1 -> o2
  o1 -> o4
  o0 -> o2
  o0 -> o5
  o1 -> o6
  o2 -> o5
  o1 -> o3
}
plan p { graph g  cluster c }
"""


#: m-TOPO's last retry, in E704's words (`mtopo.FIRST_FIT`)
_FIRST_FIT = "first fit (each op, in topological order, on the first device with room)"


@pytest.mark.parametrize(("algorithm", "case", "lead"), [
    # the walk retried under the budget ladder only (no pin, no constant following), then
    # (m-TOPO) spilled from its first op
    ("mtopo", "chain", f"it also retried with tighter memory budgets and {_FIRST_FIT}; "),
    # a pin: the walk ran again holding its room, then (m-TOPO) under the budgets
    ("mtopo", "pinned", "it also retried with room held on each device for the ops that "
                        f"must go there, tighter memory budgets and {_FIRST_FIT}; "),
    ("random", "pinned", "it also retried with room held on each device for the ops that "
                         "must go there; "),
    # nothing but the first draw ran: greedy, as said
    ("random", "chain", "this heuristic fills devices greedily; "),
    # constants followed their consumers: all of it again without that rule
    ("mtopo", "followers", "it also retried with tighter memory budgets, then all of it "
                           "again with no constant following its consumer, and with "
                           f"{_FIRST_FIT}; "),
    ("roundrobin", "followers", "it also retried with no constant following its consumer; "),
])
def test_e704_of_the_walks_names_the_retries_that_ran(algorithm: str, case: str,
                                                      lead: str) -> None:
    # they said "this heuristic fills devices greedily" after every retry above
    import planner

    chain = ([5120, 3072, 5120, 7168], [10496, 10496])
    problem = {"chain": _problem(*chain, chain=True),
               "pinned": _problem(*chain, chain=True, pins={3: 1}),
               "followers": planner.loads(_DEAD_END).plan()}[case]
    with pytest.raises(InfeasibleError) as err:
        run(algorithm, problem)
    (diag,) = err.value.diagnostics
    assert diag.code == "E704"
    assert diag.hints[-1].startswith(lead + "the instance may still be feasible: try ")
    # m-TOPO is suggested where its walk has not run
    assert ("--algo mtopo" in diag.hints[-1]) == (algorithm != "mtopo")


@pytest.mark.parametrize(("case", "lead"), [
    # op3 pinned to gpu1: the budgets, m-TOPO's walks and a last pass at full memory held
    # its room (and none planned: op2 finds gpu0 full and gpu1 held, while cpsat puts
    # op0 and op2 on gpu0); the hint named only the budgets and m-TOPO's placement
    ("pinned", "it also retried with tighter memory budgets, m-TOPO's placement and room "
               "held on each device for the ops that must go there; "),
    # no op must go to a device: no room held, none named
    ("chain", "it also retried with tighter memory budgets and m-TOPO's placement; "),
])
@pytest.mark.parametrize("algorithm", ["msct", "metf", "heft", "cpop"])
def test_e704_of_the_list_schedulers_names_the_room_they_held(algorithm: str, case: str,
                                                             lead: str) -> None:
    sizes, caps = [5120, 3072, 5120, 7168], [10496, 10496]
    problem = _problem(sizes, caps, chain=True, pins={3: 1} if case == "pinned" else None)
    with pytest.raises(InfeasibleError) as err:
        run(algorithm, problem)
    (diag,) = err.value.diagnostics
    assert diag.code == "E704"
    # m-TOPO's placement was tried: not suggested; static memory: an exact solver settles it
    assert diag.hints[-1] == (lead + "the instance may still be feasible: try --algo search "
                              "or an exact solver (--algo cpsat, or --algo ilp)")


@pytest.mark.parametrize(("algorithm", "first"), [
    *((a, "tighter memory budgets and m-TOPO's placement, then ")
      for a in ("msct", "metf", "heft", "cpop")),
    ("mtopo", "tighter memory budgets, then "), ("roundrobin", "")])
def test_e704_says_room_held_only_where_it_was(algorithm: str, first: str) -> None:
    # w (94 MiB params, 18 MiB output) follows its consumer o0 at first: nothing must go
    # to a device, so no room is held; without that rule, w fits on gpu0 alone and its
    # room is held there. The hint said the first round held it too ("it also retried
    # with room held ..., then all of it again"; roundrobin's first round retried nothing)
    sizes = ((0, 21), (51, 16), (14, 23), (94, 18))  # params, output MiB
    ops = tuple(Op(f"o{i}", 1e-3, params_bytes=p * MIB, output_bytes=o * MIB)
                for i, (p, o) in enumerate(sizes))
    edges = tuple(Edge(s, d, b * MIB) for s, d, b in ((0, 1, 10), (0, 2, 10), (1, 2, 16),
                                                      (3, 0, 18)))
    devs = (Device("gpu0", 144 * MIB), Device("gpu1", 104 * MIB))
    problem = Problem("p", Graph("g", ops, edges),
                      Cluster("c", devs, (Link(0, 1, 1e9), Link(1, 0, 1e9))))
    with pytest.raises(InfeasibleError) as err:
        run(algorithm, problem)
    (diag,) = err.value.diagnostics
    assert diag.code == "E704"
    assert diag.hints[-1].startswith(
        f"it also retried with {first}"
        f"{'all of it again with ' if first else ''}no constant following its consumer, "
        "and with room held on each device for the ops that must go there"
        f"{f' and {_FIRST_FIT}' if algorithm == 'mtopo' else ''}; the instance may still be "
        "feasible: try ")


def test_e704_says_a_groups_figure_leaves_out_the_copies_its_members_receive() -> None:
    # op3 and op4 are one group, op4 receives op2's 10 MiB output: m-TOPO's walk dead-ends
    # at op3, the group's first member, and gpu0's figure (op0, op1, op3 and op4: 160 MiB)
    # leaves out that copy (op2 is on gpu1), which the hint did not say
    sizes = ((45, 0), (45, 0), (30, 10), (35, 0), (35, 0))
    ops = tuple(Op(f"op{i}", 1e-3, params_bytes=p * MIB, output_bytes=o * MIB)
                for i, (p, o) in enumerate(sizes))
    devs = (Device("gpu0", 100 * MIB), Device("gpu1", 105 * MIB))
    problem = Problem("p", Graph("g", ops, (Edge(2, 4, 10 * MIB),), ((3, 4),)),
                      Cluster("c", devs, (Link(0, 1, 1e9), Link(1, 0, 1e9))))
    with pytest.raises(InfeasibleError) as err:
        run("mtopo", problem)
    (diag,) = err.value.diagnostics
    assert "op `op3` fits on no device" in diag.message
    assert "`gpu0` would need 160.00 MiB" in diag.message
    assert diag.hints[0].endswith(
        "the rest of its colocation group, which goes with it (their params, outputs and "
        "temp, not the copies they will receive)")
