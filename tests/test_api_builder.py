"""Problems built in Python: by names (`ProblemBuilder`), from networkx, or from the model's
constructors; checked with the language's codes, located at the user's line."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import planner
from planner.algorithms.base import Solution
from planner.bounds import Bounds, relative_gap
from planner.model import Cluster, Device, Edge, Graph, Link, Op, Pipeline, Problem, Tie
from planner.simulate import simulate

HERE = Path(__file__).read_text().splitlines()

SPEC = """
cluster c {
  device cpu0 { kind cpu  memory 256 GiB  speed 0.05  flops 1.2 TFLOPS }
  device gpu[0..1] { memory 16 GiB  flops 15 TFLOPS }
  link gpu[0..1] <-> gpu[0..1] { bandwidth 50 GB/s  latency 2 us }
  link cpu0 -> gpu[*] { bandwidth 96 Gbps  latency 10 us }
  link gpu[*] -> cpu0 { bandwidth 1 GB/s }
}
graph g {
  op input { time 0.05 ms  output 6 MiB }
  op conv1 { flops 2.4 GFLOP  params 36 KiB  output 12 MiB  temp 1 MiB }
  op conv2 { time 0.9 ms  time[cpu] 24 ms  output 12 MiB }
  op head { time 0.3 ms  params 8 MiB  output 4 KiB }
  input -> conv1 -> conv2 -> head
  conv1 -> head { bytes 2 MiB }
  colocate conv2, head
}
plan p { graph g  cluster c  memory liveness  contention device
  pin input to cpu0
  place conv1 on gpu0 }
"""


def _tiny() -> planner.ProblemBuilder:
    b = planner.ProblemBuilder("p", memory="liveness", contention="device", graph="g",
                               cluster="c")
    b.device("cpu0", kind="cpu", memory="256 GiB", speed=0.05, flops="1.2 TFLOPS")
    b.device("gpu0", memory="16 GiB", flops="15 TFLOPS")
    b.device("gpu1", memory=16 * 2**30, flops=15e12)
    b.link(["gpu0", "gpu1"], ["gpu0", "gpu1"], bandwidth="50 GB/s", latency="2 us")
    b.link("cpu0", ["gpu0", "gpu1"], bandwidth="96 Gbps", latency="10 us", both_ways=False)
    b.link(["gpu0", "gpu1"], "cpu0", bandwidth="1 GB/s", both_ways=False)
    b.op("input", time="0.05 ms", output="6 MiB")
    b.op("conv1", flops="2.4 GFLOP", params="36 KiB", output="12 MiB", temp="1 MiB")
    b.op("conv2", time="0.9 ms", time_by_kind={"cpu": "24 ms"}, output="12 MiB")
    b.op("head", time="0.3 ms", params="8 MiB", output="4 KiB")
    b.chain("input", "conv1", "conv2", "head")
    b.edge("conv1", "head", bytes="2 MiB")
    b.colocate("conv2", "head")
    b.pin("input", "cpu0")
    b.place("conv1", "gpu0")
    return b


def test_the_builder_makes_the_problem_the_spec_makes() -> None:
    built = _tiny().build()
    spec = planner.loads(SPEC).plan()
    assert built.graph.ops == spec.graph.ops
    assert built.graph.edges == spec.graph.edges
    assert built.graph.colocations == spec.graph.colocations
    assert built.cluster.devices == spec.cluster.devices
    assert built.cluster.links == spec.cluster.links
    assert dict(built.pins) == dict(spec.pins) and dict(built.placement) == dict(spec.placement)
    assert (built.memory_model, built.contention) == ("liveness", "device")
    assert planner.solve(built, "heft").plan == planner.solve(spec, "heft").plan


def test_colocations_that_share_ops_merge_as_the_languages_do() -> None:
    names = "abcdefgh"
    pairs = [("d", "e"), ("g", "b"), ("e", "g"), ("h", "c"), ("c", "h")]  # b, d, e, g: one
    b = planner.ProblemBuilder("p", graph="g", cluster="c")
    b.device("gpu0", memory="1 GiB")
    for name in names:
        b.op(name, time="1 ms")
    for pair in pairs:
        b.colocate(*pair)
    text = ("cluster c { device gpu0 { memory 1 GiB } }\ngraph g {\n"
            + "".join(f"  op {n} {{ time 1 ms }}\n" for n in names)
            + "".join(f"  colocate {x}, {y}\n" for x, y in pairs)
            + "}\nplan p { graph g  cluster c }\n")
    built, spec = b.build(), planner.loads(text).plan()
    assert built.graph.colocations == spec.graph.colocations == ((1, 3, 4, 6), (2, 7))


def test_networkx_graph_attributes_become_ops_and_edges() -> None:
    g = nx.DiGraph()
    g.add_node("input", time="0.05 ms", output="6 MiB")
    g.add_node("conv1", flops="2.4 GFLOP", params="36 KiB", output="12 MiB", temp="1 MiB")
    g.add_node("conv2", time="0.9 ms", time_by_kind={"cpu": "24 ms"}, output="12 MiB")
    g.add_node("head", time="0.3 ms", params="8 MiB", output="4 KiB")
    nx.add_path(g, ["input", "conv1", "conv2", "head"])
    g.add_edge("conv1", "head", bytes=2 * 2**20)
    b = planner.ProblemBuilder.from_networkx(g, "p", graph="g")
    b.device("gpu0", memory="16 GiB", flops="15 TFLOPS")
    built = b.build()
    want = _tiny().build().graph
    assert built.graph.ops == want.ops
    assert set(built.graph.edges) == set(want.edges)


def _line(marker: str) -> int:
    """The line of this file that carries `# <marker>`."""
    return next(k for k, text in enumerate(HERE, 1) if text.rstrip().endswith(f"# {marker}"))


def _errors(build: planner.ProblemBuilder) -> list[tuple[str, int]]:
    with pytest.raises(planner.SpecError) as err:
        build.build()
    for d in err.value.diagnostics:
        assert d.span is not None and d.span.file == __file__, d
    return [(d.code, d.span.line) for d in err.value.diagnostics if d.span]


@pytest.mark.parametrize(("call", "given", "hint"), [
    ("colocate", (["a", "b"],), 'give the names as separate arguments: colocate("a", "b"), '
     "or colocate(*names)"),
    ("chain", (("a", "b"),), 'give the names as separate arguments: chain("a", "b"), or '
     "chain(*names)"),
    ("colocate", ("a", 3), 'for example colocate("a", "b")'),
    ("edge", ("a", 3), 'for example op("x", ...)'),
])
def test_a_name_that_is_no_string_gets_the_calls_own_form(call: str, given: tuple[object, ...],
                                                           hint: str) -> None:
    """Before: `colocate(["a", "b"])` said `for example op("x", ...)`, no form of colocate."""
    b = planner.ProblemBuilder("p")
    b.device("gpu0", memory="1 GiB")
    b.op("a", time="1 ms")
    b.op("b", time="1 ms")
    getattr(b, call)(*given)
    with pytest.raises(planner.SpecError) as err:
        b.build()
    (d,) = err.value.diagnostics
    assert d.code == "E213" and d.hints == (hint,), d


def test_names_and_units_are_checked_at_the_line_that_gave_them() -> None:
    b = planner.ProblemBuilder("bad")
    b.device("gpu0", memory="16 ms")  # unit
    b.device("gpu0", memory="1 GiB")  # twice
    b.op("a", time="1 ms", output="3 MIB")  # unknown-unit
    b.op("b", time="5")  # no-unit
    b.op("c", time=[1])  # not-a-number
    b.edge("a", "nope")  # unknown-op
    b.pin("a", "gpu9")  # unknown-device
    b.op(3, time=1.0)  # type: ignore[arg-type]  # number-name
    assert _errors(b) == [("E222", _line("unit")), ("E205", _line("twice")),
                          ("E103", _line("unknown-unit")), ("E220", _line("no-unit")),
                          ("E290", _line("not-a-number")), ("E203", _line("unknown-op")),
                          ("E207", _line("unknown-device")), ("E213", _line("number-name"))]


def test_the_languages_checks_run_on_the_built_problem() -> None:
    b = planner.ProblemBuilder("bad")
    b.device("gpu0", memory="1 GiB")
    b.device("gpu1", memory="1 GiB", speed=0)  # speed
    b.op("a", time="-1 ms")  # negative
    b.op("b", time=float("nan"))  # nan
    b.op("c")  # no-time
    b.chain("a", "b", "a")  # cycle
    assert _errors(b) == [("E241", _line("speed")), ("E244", _line("speed")),
                          ("E105", _line("negative")), ("E290", _line("nan")),
                          ("E232", _line("no-time")), ("E231", _line("cycle"))]


def _pinned(b: planner.ProblemBuilder) -> planner.ProblemBuilder:
    b.device("cpu0", memory="1 GiB", kind="cpu")
    b.device("gpu0", memory="1 GiB")
    b.link("cpu0", "gpu0", bandwidth="1 GB/s")
    b.op("a", time="1 ms")
    b.op("b", time="1 ms")
    b.op("k", time_by_kind={"gpu": "1 ms"})  # no-time-here
    b.colocate("a", "b")  # colocated
    b.pin("a", "cpu0")  # first-pin
    b.pin("b", "gpu0")
    return b


def test_pins_and_colocation_conflicts_are_the_languages() -> None:
    b = _pinned(planner.ProblemBuilder("bad"))
    b.pin("a", "gpu0")  # pinned-twice
    assert _errors(b) == [("E250", _line("pinned-twice"))]
    b = _pinned(planner.ProblemBuilder("bad"))
    b.place("a", "gpu0")
    assert _errors(b) == [("E253", _line("no-time-here")), ("E252", _line("colocated")),
                          ("E251", _line("first-pin"))]
    assert _errors(b) == _errors(b)  # building again reports the same, once


def test_model_constructors_reject_bad_indices_at_the_callers_line() -> None:
    ops = (Op("a", time_s=1.0), Op("b", time_s=1.0))
    with pytest.raises(planner.SpecError) as err:
        Graph("g", ops, (Edge(0, 1, 8), Edge(1, 2, 8)))  # bad-edge
    d = err.value.diagnostics[0]
    assert (d.code, d.span and d.span.line) == ("E203", _line("bad-edge"))
    assert "`edges[1].dst`" in d.message and "0..1" in d.hints[0]
    with pytest.raises(planner.SpecError, match=r"E203.*edges\[0\]\.src.*not the index"):
        Graph("g", ops, (Edge("a", "b", 8),))  # type: ignore[arg-type]
    devs = (Device("d0", 1), Device("d1", 1))
    with pytest.raises(planner.SpecError, match=r"E207.*links\[0\]\.dst"):
        Cluster("c", devs, (Link(0, 5, 1.0),))
    cluster = Cluster("c", devs, (Link(0, 1, 1.0), Link(1, 0, 1.0)))
    with pytest.raises(planner.SpecError, match=r"E207.*pins\[0\]"):
        Problem("p", Graph("g", ops, ()), cluster, pins={0: 2})
    with pytest.raises(planner.SpecError, match=r"E203.*placement key 7"):
        Problem("p", Graph("g", ops, ()), cluster, placement={7: 0})


@pytest.mark.parametrize("algo", ["heft", "msct", "cpsat", "ilp", "single", "auto"])
def test_a_cluster_of_no_devices_is_e247_not_a_crash(algo: str) -> None:
    """Before: ZeroDivisionError in the list schedulers, ValueError in the exact solvers."""
    b = planner.ProblemBuilder("t")
    b.op("a", time="1 ms")
    with pytest.raises(planner.SpecError) as err:
        planner.solve(b.build(), algo)
    assert [d.code for d in err.value.diagnostics] == ["E247"]
    assert "has no devices" in str(err.value)
    with pytest.raises(planner.SpecError):  # the bound was 0 s for a 1 ms op
        planner.lower_bound(b.build())


def test_a_pipeline_of_no_ops_is_e259() -> None:
    cluster = Cluster("c", (Device("d0", 100),), ())
    with pytest.raises(planner.SpecError) as err:
        planner.solve(Problem("p", Graph("g", (), ()), cluster, pipeline=Pipeline()),
                      "pipedp")
    assert [d.code for d in err.value.diagnostics] == ["E259"]
    assert planner.solve(Problem("p", Graph("g", (), ()), cluster), "heft").makespan_s == 0


def test_more_stages_per_device_than_units_is_e259_without_backward_ops() -> None:
    """Before: the builder checked a pipeline's units only where the graph had backward ops,
    so 9 stages per device of 4 inference units built, where `planner check` says E259 (and
    `solve(p, "pipedp")` ended in E707, whose hint says `planner check` reports it)."""
    b = planner.ProblemBuilder("x")
    b.device("g0", memory="1 GiB")
    b.device("g1", memory="1 GiB")
    b.link("g0", "g1", bandwidth="1 GB/s")
    for name in "abcd":
        b.op(name, time="1 ms", output="1 MB")
    b.chain("a", "b", "c", "d")
    b.pipeline(4, schedule="interleaved", stages_per_device=9)
    with pytest.raises(planner.SpecError) as err:
        b.build()
    assert [d.code for d in err.value.diagnostics] == ["E259"]
    assert "more than the graph's 4 pipeline units" in err.value.diagnostics[0].message
    b.pipeline(4, schedule="interleaved", stages_per_device=4)
    assert b.build().pipeline is not None


def test_solve_checks_a_model_problem_and_points_at_the_call() -> None:
    bad = Problem("p", Graph("g", (Op("a", time_s=-1.0),), ()),
                  Cluster("c", (Device("d0", 100), Device("d1", 100)), ()))
    with pytest.raises(planner.SpecError) as err:
        planner.solve(bad, "metf")  # solve-call
    assert [d.code for d in err.value.diagnostics] == ["E105", "E244"]
    line = _line("solve-call")
    column = HERE[line - 1].index("planner.solve") + 1
    assert f"{__file__}:{line}:{column}: error[E105]: `graph.ops[0].time_s`" in str(err.value)
    with pytest.raises(planner.SpecError):
        planner.lower_bound(bad)


def test_result_names_the_placement_and_the_schedule() -> None:
    problem = _tiny().build()
    result = planner.solve(problem, "metf")
    assert isinstance(result, Solution) and isinstance(result, planner.Result)
    ops, devs = problem.graph.ops, problem.cluster.devices
    assert result.placement_by_name == {ops[i].name: devs[d].name
                                        for i, d in enumerate(result.plan.placement)}
    assert result.placement_by_name["input"] == "cpu0"  # the pin
    sim = simulate(problem, result.plan)
    assert result.makespan_s == sim.makespan_s and result.feasible
    assert max(s.end_s for s in result.schedule) == sim.makespan_s
    starts = [s.start_s for s in result.schedule]
    assert starts == sorted(starts) and {s.op for s in result.schedule} == {o.name for o in ops}
    assert all(result.placement_by_name[s.op] == s.device for s in result.schedule)
    assert sum(map(len, result.order_by_name.values())) == len(ops)
    bounds = planner.lower_bound(problem)
    assert isinstance(bounds, Bounds) and result.gap is not None
    assert result.gap == pytest.approx(result.makespan_s / bounds.makespan_s - 1)
    again = dataclasses.replace(result, status="interrupted")
    assert isinstance(again, planner.Result) and again.placement_by_name == \
        result.placement_by_name


@pytest.mark.parametrize(("key", "value", "meant"), [
    ("memory", "16 gb", "GB"), ("memory", "3 gib", "GiB"), ("time", "1 MS", "ms"),
    ("time", "1 sec", "s"), ("output", "1 Mb", "MB"),
])
def test_a_misspelt_unit_gets_the_spec_languages_hint(key: str, value: str, meant: str) -> None:
    """One rule (`units.closest_unit`) for a unit in the wrong case or misspelt, in a spec
    and in the builder; difflib alone, which compares case, found nothing for `gb`."""
    b = planner.ProblemBuilder("t")
    if key == "memory":
        b.device("d0", memory=value)
        text = f"cluster c {{ device d0 {{ memory {value} }} }}\n"
    else:
        b.device("d0", memory="1 GiB")
        b.op("a", **{key: value, **({} if key == "time" else {"time": "1 ms"})})
        extra = "" if key == "time" else "time 1 ms "
        text = f"graph g {{ op a {{ {extra}{key} {value} }} }}\n"
    with pytest.raises(planner.SpecError) as api:
        b.build()
    with pytest.raises(planner.SpecError) as spec:
        planner.loads(text)
    hint = f"did you mean `{meant}`?"
    assert api.value.diagnostics[0].hints == (hint,)
    assert spec.value.diagnostics[0].code == "E103"
    assert spec.value.diagnostics[0].hints[0] == hint


def _pair() -> planner.ProblemBuilder:
    b = planner.ProblemBuilder("t")
    b.device("g0", memory="1 GiB")
    b.device("g1", memory="1 GiB")
    b.link("g0", "g1", bandwidth="10 GB/s")
    b.op("a", time="1 ms", output="1 MB")
    b.op("b", time="1 ms")
    return b


def test_values_no_spec_could_hold_are_diagnostics_not_crashes() -> None:
    """Before: ValueError (a NaN size), OverflowError (an infinite one), TypeError (a name
    that is not a string or a list), each a traceback from planner's code."""
    b = _pair()
    b.op("c", time="1 ms", params=float("nan"))  # nan-size
    b.op("d", time="1 ms", output="1e400 B")  # inf-size
    b.edge("a", "b", bytes=float("inf"))  # inf-edge
    b.pin(5, "g0")  # int-name
    assert _errors(b) == [("E290", _line("nan-size")), ("E223", _line("inf-size")),
                          ("E223", _line("inf-edge")), ("E213", _line("int-name"))]
    b = _pair()
    b.op("c", time="1 ms", params=np.int64(100))  # numpy's integers are numbers too
    assert b.build().graph.ops[2].params_bytes == 100


def test_no_memory_a_kind_of_no_name_and_a_time_by_kind_of_no_mapping_are_diagnostics() -> None:
    """Before: `memory=None` made a device of 0 bytes (built without a word), `kind=3` was
    kept and matched no `time_by_kind`, and `time_by_kind="1 ms"` was an AttributeError
    from the builder's code."""
    b = _pair()
    b.device("g2", memory=None)  # type: ignore[arg-type]  # no-memory
    b.device("g3", memory="1 GiB", kind=3)  # type: ignore[arg-type]  # int-kind
    b.link(["g0", "g1"], ["g2", "g3"], bandwidth="10 GB/s")
    b.op("c", time_by_kind="1 ms")  # type: ignore[arg-type]  # str-by-kind
    with pytest.raises(planner.SpecError) as err:
        b.build()
    got = [(d.code, d.span.line if d.span else 0, d.message) for d in err.value.diagnostics]
    assert got == [
        ("E240", _line("no-memory"), "device needs `memory`"),
        ("E213", _line("int-kind"), "`kind` expects a name, not 3"),
        ("E290", _line("str-by-kind"), "`time_by_kind` expects a mapping of device kind to "
         "time, not '1 ms'")]


@pytest.mark.parametrize(("change", "code"), [
    ({"bandwidth": 1e-300}, "E260"),  # a transfer of 1 MB took `inf` s: "optimal", gap 0
    ({"time": 1e308}, "E223"),  # OverflowError in fsum
    ({"time": 10**400}, "E223"),  # OverflowError in float()
    ({"speed": 1e-300}, "E260"),
])
def test_the_languages_ranges_hold_in_python(change: dict[str, float], code: str) -> None:
    b = planner.ProblemBuilder("t")
    b.device("g0", memory="1 GiB", speed=change.get("speed", 1.0))
    b.device("g1", memory="1 GiB")
    b.link("g0", "g1", bandwidth=change.get("bandwidth", 1e10))
    b.op("a", time=change.get("time", 1e-3), output=1e6)
    b.op("b", time=1e-3)
    b.edge("a", "b")
    with pytest.raises(planner.SpecError) as err:
        planner.solve(b.build(), "heft")
    # (a link both ways is two links of the model, each reported, as E241 reports them)
    assert {d.code for d in err.value.diagnostics} == {code}
    assert "valid range" in err.value.diagnostics[0].message


def test_a_plan_that_breaks_a_rule_is_never_feasible_nor_optimal() -> None:
    """`expert` runs the spec's placement unchecked: a plan over a memory cap was
    `feasible`, and the command line added "at most 0.0% above optimal"."""
    b = _pair()
    b.op("c", time="1 ms", params="800 MiB")
    b.op("d", time="1 ms", params="800 MiB")
    b.edge("c", "d")
    b.place(["a", "b", "c", "d"], "g0")
    r = planner.solve(b.build(), "expert")
    assert (r.status, r.feasible, r.gap) == ("infeasible", False, None)
    assert relative_gap(math.inf, math.inf) is None  # an `inf` plan does not meet an `inf` bound


def test_networkx_parallel_edges_sum_and_an_undirected_graph_is_e233() -> None:
    """Before: a MultiDiGraph kept the last parallel edge (1 MB of 6 MB lost); an
    undirected graph took each edge in the direction networkx listed it."""
    g = nx.MultiDiGraph()
    g.add_node("a", time="1 ms", output="2 MB")
    g.add_node("b", time="1 ms")
    g.add_edge("a", "b", bytes="1 MB")
    g.add_edge("a", "b", bytes="5 MB")
    g.add_edge("a", "b")  # a's output
    b = planner.ProblemBuilder.from_networkx(g)
    b.device("g0", memory="1 GiB")
    assert [(e.src, e.dst, e.bytes) for e in b.build().graph.edges] == [(0, 1, 8_000_000)]
    u = nx.Graph()
    u.add_edge("a", "b")
    with pytest.raises(planner.SpecError) as err:
        planner.ProblemBuilder.from_networkx(u).build()
    assert err.value.diagnostics[0].code == "E233"


def test_model_colocations_and_ties_are_checked_as_the_language_checks_them() -> None:
    """Before: overlapping groups passed, and heft split them (`feasible False`)."""
    ops = (Op("a", 1e-3, params_bytes=10), Op("b", 1e-3, params_bytes=3), Op("c", 1e-3))
    cluster = Cluster("c", (Device("g0", 2**30), Device("g1", 2**30)),
                      (Link(0, 1, 1e9), Link(1, 0, 1e9)))
    for graph, code in ((Graph("g", ops, (), colocations=((0, 1), (1, 2))), "E239"),
                        (Graph("g", ops, (), ties=(Tie((0,), 2),)), "E236"),
                        (Graph("g", ops, (), ties=(Tie((0, 1), 5),)), "E237")):
        with pytest.raises(planner.SpecError) as err:
            planner.solve(Problem("p", graph, cluster), "heft")
        assert [d.code for d in err.value.diagnostics] == [code]


def test_names_keep_the_languages_rules() -> None:
    # before: the API took any text as a name (a newline, U+202E, a Cyrillic look-alike),
    # which no spec may hold (E261, E264, E262) and which can fake or reorder a line printed
    b = planner.ProblemBuilder("names")
    b.device("gpu0", memory="1 GiB", kind="v\u200b100")  # zero-width
    b.op("a\u202eb", time="1 ms")  # bidi
    b.op("x\nchecked 1 file(s): ok", time="1 ms")  # newline
    b.op("\ufb01", time="1 ms")  # nfkc
    b.op("g\u0440u", time="1 ms")  # mixed
    b.op("层1 é", time="1 ms")  # letters of any script and a space remain valid
    assert _errors(b) == [("E261", _line("zero-width")), ("E261", _line("bidi")),
                          ("E261", _line("newline")), ("E264", _line("nfkc")),
                          ("E262", _line("mixed"))]
    bad = Problem("p", Graph("g", (Op("a\u202eb", time_s=1e-3),), ()),
                  Cluster("c", (Device("d0", 100),), ()))
    with pytest.raises(planner.SpecError) as err:
        planner.solve(bad, "metf")
    assert "error[E261]: `graph.ops[0].name`: name `a\\u202eb` contains U+202E" in str(err.value)


PIPELINE_SPEC = """
cluster c { device gpu[0..1] { memory 1 GB }  link gpu0 <-> gpu1 { bandwidth 10 GB/s } }
graph g {
  op f0 { time 4 ms  params 1 MB  output 10 MB }
  op f1 { time 4 ms  params 1 MB  output 10 MB }
  op f1.bwd { time 8 ms  output 1 MB  backward_of f1 }
  op f0.bwd { time 8 ms  output 1 MB  backward_of f0 }
  f0 -> f1 -> f1.bwd -> f0.bwd
  f0 -> f0.bwd
}
plan p { graph g  cluster c  objective pipeline  microbatches 8  schedule gpipe
         data_parallel auto  microbatch_size 4 }
"""


def test_the_builder_plans_a_pipeline_as_the_spec_does() -> None:
    """Before: no `backward_of` and no pipeline settings: a pipeline problem could not be
    built by names, only loaded from a spec or put together from the model's classes."""
    b = planner.ProblemBuilder("p", graph="g", cluster="c")
    b.device("gpu0", memory="1 GB")
    b.device("gpu1", memory="1 GB")
    b.link("gpu0", "gpu1", bandwidth="10 GB/s")
    for k in (0, 1):
        b.op(f"f{k}", time="4 ms", params="1 MB", output="10 MB")
    b.op("f1.bwd", time="8 ms", output="1 MB", backward_of="f1")
    b.op("f0.bwd", time="8 ms", output="1 MB", backward_of="f0")
    b.chain("f0", "f1", "f1.bwd", "f0.bwd")
    b.edge("f0", "f0.bwd")
    b.pipeline(8, schedule="gpipe", data_parallel="auto", microbatch_size=4)
    built, spec = b.build(), planner.loads(PIPELINE_SPEC).plan()
    assert built == spec
    mine, theirs = planner.solve(built, "hybrid"), planner.solve(spec, "hybrid")
    assert mine.pipeline is not None and theirs.pipeline is not None
    assert mine.pipeline.iteration_s == theirs.pipeline.iteration_s
    assert mine.replicas == theirs.replicas
    g = nx.DiGraph()  # the same graph from networkx: `backward_of` is a node attribute too
    for name, op in zip(("f0", "f1", "f1.bwd", "f0.bwd"), built.graph.ops, strict=True):
        g.add_node(name, time=op.time_s, params=op.params_bytes, output=op.output_bytes)
    g.nodes["f1.bwd"]["backward_of"], g.nodes["f0.bwd"]["backward_of"] = "f1", "f0"
    g.add_edges_from([("f0", "f1"), ("f1", "f1.bwd"), ("f1.bwd", "f0.bwd"), ("f0", "f0.bwd")])
    n = planner.ProblemBuilder.from_networkx(g, "p", graph="g", cluster="c")
    n.device("gpu0", memory="1 GB")
    n.device("gpu1", memory="1 GB")
    n.link("gpu0", "gpu1", bandwidth="10 GB/s")
    n.pipeline(8, schedule="gpipe", data_parallel="auto", microbatch_size=4)
    from_nx = n.build()
    assert (from_nx.graph.ops, from_nx.graph.backward_of, from_nx.pipeline) == (
        spec.graph.ops, spec.graph.backward_of, spec.pipeline)
    assert set(from_nx.graph.edges) == set(spec.graph.edges)


def test_a_pipelines_mistakes_are_located_at_the_call_that_made_them() -> None:
    b = _pair()
    b.op("c.bwd", time="2 ms", backward_of="c")  # unknown-fwd
    assert _errors(b) == [("E203", _line("unknown-fwd"))]
    b = _pair()
    b.edge("a", "b")  # a path from `a` to its backward op, else E235 (the path rule)
    b.edge("b", "a.bwd")
    b.op("a.bwd", time="2 ms", backward_of="a")
    b.op("b.bwd", time="2 ms", backward_of="a.bwd")  # bwd-of-bwd
    b.chain("a.bwd", "b.bwd")
    b.pipeline(0, schedule="zigzag")  # bad-pipeline
    # in the settings' order, as a spec's `microbatches 0` and `schedule zigzag` come
    assert _errors(b) == [("E234", _line("bwd-of-bwd")), ("E257", _line("bad-pipeline")),
                          ("E256", _line("bad-pipeline"))]


def test_a_pipelines_counts_may_be_numpy_integers() -> None:
    """Before: `pipeline(numpy.int64(8))` was E257, "`microbatches` must be a whole number
    from 1 to 1024, not np.int64(8)"; a model's `Pipeline` of one gets a hint."""
    b = _pair()
    b.op("a.bwd", time="2 ms", backward_of="a")
    b.edge("a", "a.bwd")
    b.pipeline(np.int64(8), data_parallel=np.int64(2), microbatch_size=np.int32(4))
    built = b.build()
    assert built.pipeline == Pipeline(8, "1f1b", 1, 2, 4)
    assert type(built.pipeline.microbatches) is int
    with pytest.raises(planner.SpecError) as err:
        planner.solve(dataclasses.replace(built, pipeline=Pipeline(np.int64(8))))
    assert err.value.diagnostics[0].hints == ("give it as a Python int: int(np.int64(8))",)


_FRACTIONS = ("cluster c {{ device gpu0 {{ memory 1 GiB }} }}\ngraph g {{\n"
              "  op a {{ time 1 ms  params {0}  output {0} }}\n  op b {{ time 1 ms }}\n"
              "  a -> b {{ bytes {0} }}\n}}\nplan p {{ graph g  cluster c }}\n")


@pytest.mark.parametrize("size", ["1.5 B", "2.5 B", "1.4 B", "1.0001 KiB", "0 B"])
def test_fractional_bytes_are_whole_bytes_as_in_a_spec(size: str) -> None:
    """Before: an edge's `bytes="1.5 B"` was cut to 1 where the spec's `bytes 1.5 B` is 2."""
    spec = planner.loads(_FRACTIONS.format(size)).plan("p").graph
    b = planner.ProblemBuilder("p")
    b.device("gpu0", memory="1 GiB")
    b.op("a", time="1 ms", params=size, output=size)
    b.op("b", time="1 ms")
    b.edge("a", "b", bytes=size)
    built = b.build().graph
    assert (built.ops, built.edges) == (spec.ops, spec.edges)


@pytest.mark.parametrize(("key", "size"), [("params", "0.5 B"), ("output", 0.4),
                                           ("temp", "0.0001 KiB"), ("bytes", "0.6 B")])
def test_a_size_below_one_byte_is_e260_as_in_a_spec(key: str, size: object) -> None:
    """Before: the builder took `params="0.5 B"` as 0 bytes (and 0.6 B as 1) without a word,
    where a spec's `params 0.5 B` is E260."""
    text = _FRACTIONS.format(size if isinstance(size, str) else f"{size} B")
    with pytest.raises(planner.SpecError, match="E260"):
        planner.loads(text)
    b = planner.ProblemBuilder("p")
    b.device("gpu0", memory="1 GiB")
    b.op("a", time="1 ms", **({} if key == "bytes" else {key: size}))  # type: ignore[arg-type]
    b.op("b", time="1 ms")
    b.edge("a", "b", **({"bytes": size} if key == "bytes" else {}))  # type: ignore[arg-type]
    with pytest.raises(planner.SpecError) as err:
        b.build()
    (d,) = err.value.diagnostics
    assert (d.code, d.hints) == ("E260", ("a size is 0 or from 1 B to 1024 TiB",))
    assert d.message.startswith(f"`{key}` (") and "below the valid range of a size" in d.message
    assert d.span is not None and d.span.file == __file__


def test_a_link_without_a_bandwidth_is_e290_once_at_its_call() -> None:
    """`link(..., bandwidth=None)`: E290 at the call, once. Before: E241 "the bandwidth of a
    link must be positive, not 0.0", once per direction (None was read as 0)."""
    b = planner.ProblemBuilder("p")
    b.device("gpu0", memory="1 GiB")
    b.device("gpu1", memory="1 GiB")
    b.link("gpu0", "gpu1", bandwidth=None)  # type: ignore[arg-type]
    b.op("a", time="1 ms")
    with pytest.raises(planner.SpecError) as err:
        b.build()
    assert [(d.code, d.message) for d in err.value.diagnostics] == [
        ("E290", "`bandwidth` expects a bandwidth, not None")]


@pytest.mark.parametrize(("key", "text"), [("time", "1e-400 ms"), ("output", "1e-400 B"),
                                           ("latency", "1e-400 s"), ("memory", "1e-400 B")])
def test_a_quantity_that_a_float_rounds_to_0_is_e260_as_in_a_spec(key: str, text: str) -> None:
    """Before: `time="1e-400 ms"` and `latency="1e-400 s"` were read as 0 without a word,
    `output="1e-400 B"` as 1 byte and `memory` as 0 with a W266 warning alone; a spec's
    `time 1e-400 ms` is E260 (docs/limits.md: such a number "is never read as 0")."""
    b = planner.ProblemBuilder("p")
    b.device("gpu0", memory=text if key == "memory" else "1 GiB")
    b.device("gpu1", memory="1 GiB")
    b.link("gpu0", "gpu1", bandwidth="1 GB/s", **({"latency": text} if key == "latency" else {}))
    b.op("a", time=text if key == "time" else "1 ms", **({"output": text} if key == "output"
                                                         else {}))
    with pytest.raises(planner.SpecError) as err:
        b.build()
    (d,) = err.value.diagnostics
    assert d.code == "E260" and d.message.startswith(f"`{key}` '{text}' is below the valid "
                                                     "range")
    assert "a 64-bit float rounds it to 0" in d.message and d.span is not None
    zero = planner.ProblemBuilder("z")  # 0 written as 0 stays 0
    zero.device("gpu0", memory="1 GiB")
    zero.op("a", time="0.000 ms", output="0e5 B")
    assert zero.build().graph.ops[0].time_s == 0


def test_a_value_just_beyond_its_range_shows_the_digits_that_tell_it_from_the_bound() -> None:
    """Before: `the time of op a (1e+06 seconds) is above the valid range (at most 1e+06
    seconds)` for 1000001 s: a claim that read false."""
    b = planner.ProblemBuilder("x")
    b.device("g0", memory="1 GiB")
    b.op("a", time="1.000001e15 ns")
    with pytest.raises(planner.SpecError) as err:
        b.build()
    assert "(1000001 seconds) is above the valid range (at most 1e+06 seconds)" in str(err.value)
