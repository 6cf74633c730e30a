"""The JSON interchange: exact round trips, the schema, errors, dnn-partitioning graphs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from reports import first_report

import planner
from planner.errors import SpecError, UsageError
from planner.io.interchange import dumps, export_graph, export_spec, parse_json, schema
from planner.io.onnx_import import import_onnx, zoo_path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]
DNN = REPO / "../shared/datasets/dnn-partitioning"
DNN_FILES = sorted(DNN.glob("*/*/*.json")) if DNN.is_dir() else []


def _validate(  # noqa: C901 - a JSON Schema checker: one branch per keyword it knows
        value: Any, rule: dict[str, Any], root: dict[str, Any], path: str = "$") -> None:
    """A JSON Schema check for the keywords our schema uses (jsonschema is not a dependency)."""
    if "$ref" in rule:
        target: Any = root
        for part in rule["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        _validate(value, target, root, path)
    if "const" in rule:
        assert value == rule["const"], path
    if "enum" in rule:
        assert value in rule["enum"], path
    kinds = rule.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        python = {"object": dict, "array": list, "string": str, "null": type(None),
                  "number": (int, float), "integer": int, "boolean": bool}
        assert any(isinstance(value, python[k]) and not (k in ("number", "integer")
                                                         and isinstance(value, bool))
                   for k in kinds), f"{path}: {value!r} is not {kinds}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in rule:
            assert value >= rule["minimum"], path
        if "exclusiveMinimum" in rule:
            assert value > rule["exclusiveMinimum"], path
    if isinstance(value, str) and "minLength" in rule:
        assert len(value) >= rule["minLength"], path
    for key in ("oneOf", "anyOf"):
        if key in rule:
            ok = 0
            for sub in rule[key]:
                try:
                    _validate(value, sub, root, path)
                    ok += 1
                except AssertionError:
                    pass
            assert ok == 1 if key == "oneOf" else ok >= 1, f"{path}: {key}"
    if isinstance(value, dict):
        assert len(value) >= rule.get("minProperties", 0), path
        for key in rule.get("required", []):
            assert key in value, f"{path}: lacks {key}"
        props = rule.get("properties", {})
        for key, item in value.items():
            if key in props:
                _validate(item, props[key], root, f"{path}.{key}")
            elif isinstance(rule.get("additionalProperties"), dict):
                _validate(item, rule["additionalProperties"], root, f"{path}.{key}")
            else:
                assert rule.get("additionalProperties", True) is not False, f"{path}.{key}"
        for key, needs in rule.get("dependentRequired", {}).items():
            if key in value:
                assert all(n in value for n in needs), path
    if isinstance(value, list):
        assert len(value) >= rule.get("minItems", 0), path
        for k, item in enumerate(value):
            if "items" in rule:
                _validate(item, rule["items"], root, f"{path}[{k}]")


def _round_trip(data: dict[str, Any]) -> dict[str, Any]:
    """export(import(data)): through the .plan text and the spec loader."""
    result = parse_json(json.dumps(data), "x.json")
    return export_spec(planner.loads(result.to_spec(), "x.plan"))


def test_fixture_round_trips_exactly_through_a_spec() -> None:
    text = (FIXTURES / "graph_v1.json").read_text()
    data = json.loads(text)
    back = _round_trip(data)
    assert back == data
    assert dumps(back) == text  # the canonical text too, byte for byte


def test_resnet_round_trips_and_matches_the_schema() -> None:
    result = import_onnx(zoo_path("resnet50"), training=True)
    spec = planner.loads(result.to_spec())
    data = export_spec(spec)
    assert _round_trip(data) == data
    assert len(data["ops"]) == len(result.workload.ops)
    assert sum(1 for o in data["ops"] if o["colocation"]) == len(result.workload.ops) - 1
    _validate(data, schema(), schema())


def test_schema_rejects_what_the_importer_rejects() -> None:
    sch = schema()
    good = json.loads((FIXTURES / "graph_v1.json").read_text())
    _validate(good, sch, sch)
    for mutate in (lambda d: d.pop("ops"), lambda d: d["ops"][0].pop("name"),
                   lambda d: d["ops"][1].update(flops=None),
                   lambda d: d["edges"][0].update(bytes=-1), lambda d: d.update(version=2),
                   lambda d: d["ops"][0].update(tiem_s=1.0)):
        bad = json.loads(json.dumps(good))
        mutate(bad)
        with pytest.raises(AssertionError):
            _validate(bad, sch, sch)
        with pytest.raises(SpecError):
            parse_json(json.dumps(bad))


def test_optional_fields_take_documented_defaults() -> None:
    data = {"format": "planner-graph", "version": 1, "name": "g",
            "ops": [{"name": "a", "time_s": 0.001, "output_bytes": 100},
                    {"name": "b", "flops": 1e9}],
            "edges": [{"src": "a", "dst": "b"}]}
    back = _round_trip(data)
    assert back["edges"] == [{"src": "a", "dst": "b", "bytes": 100}]
    assert back["ops"][1] == {"name": "b", "time_s": None, "time_by_kind_s": {}, "flops": 1e9,
                              "params_bytes": 0, "output_bytes": 0, "temp_bytes": 0,
                              "colocation": None}


@pytest.mark.parametrize(("text", "code", "line"), [
    ('{"format": "planner-graph",\n "version": 1,\n "name": "g", "ops": [}', "E920", 3),
    ('{"format": "planner-graph", "version": 7, "name": "g", "ops": []}', "E923", 1),
    ('{"format": "planner-graph", "version": true, "name": "g", "ops": []}', "E923", 1),
    ('{"format": "planner-graph", "version": 1.0, "name": "g", "ops": []}', "E923", 1),
    ('{"nodes": []}', "E921", 1),
    (('{"format": "planner-graph", "version": 1, "name": "g",\n "ops": [\n'
     '  {"name": "a", "time_s": 1},\n  {"name": "a", "time_s": 1}]}'), "E922", 4),
    (('{"format": "planner-graph", "version": 1, "name": "g",\n "ops": [\n'
     '  {"name": "a", "time_s": -1}]}'), "E922", 3),
    (('{"format": "planner-graph", "version": 1, "name": "g", "ops": [{"name": "a", '
     '"time_s": 1}],\n "edges": [{"src": "a", "dst": "zz"}]}'), "E922", 2),
    (('{"format": "planner-graph", "version": 1, "name": "g", "ops": [{"name": "a", '
     '"time_s": 1}, {"name": "b", "time_s": 1}],\n "edges": [{"src": "a", "dst": "b"}, '
     '{"src": "b", "dst": "a"}]}'), "E924", 2),
])
def test_bad_files_are_spec_errors_with_lines(text: str, code: str, line: int) -> None:
    assert first_report(lambda: parse_json(text, "bad.json")) == (code, "bad.json", line)


#: one file, a mistake a line (numbered from 1 in the comments); names repeat across lines,
#: so a message located by the first occurrence of a name would point at the wrong line
MISTAKES = """{"format": "planner-graph", "version": 1, "name": "g",
 "ops": [
  {"name": "a", "time_s": 0.001},
  {"name": "b", "time_s": 0.001, "tiem_s": 3},
  {"name": "a", "time_s": 0.002},
  7
 ],
 "edges": [
  {"src": "a", "dst": "b"},
  {"src": "b", "dst": "a", "bytes": -5},
  {"src": "b", "dst": "c"}
 ],
 "cluster": {"name": "c", "devices": [{"name": "a", "memory_bytes": -1}], "links": []}
}"""


def test_each_mistake_is_located_at_its_own_value() -> None:
    """Every E922 points at the value its JSON path names (an unknown key at the key, a
    repeated name at the repeat, an entry of the wrong type at the entry), not at the
    first place its text occurs in the file."""
    with pytest.raises(SpecError) as err:
        parse_json(MISTAKES, "bad.json")
    found = {d.message.split("`")[1]: (d.span.line, d.span.column)
             for d in err.value.diagnostics if d.span is not None}
    assert found == {
        "ops[1].tiem_s": (4, 34),  # the key
        "ops[2]": (5, 12),  # the second "a", not the first (line 3)
        "ops[3]": (6, 3),
        "edges[1].bytes": (10, 37),
        "edges[2]": (11, 23),  # "c", the unknown op
        "cluster.devices[0].memory_bytes": (13, 69),
    }


def test_a_cycle_is_located_at_an_edge_on_it() -> None:
    text = MISTAKES.split(' "edges"')[0].replace(',\n  7', '').replace(', "tiem_s": 3', '')
    text = text.replace('{"name": "a", "time_s": 0.002}', '{"name": "z", "time_s": 0.002}')
    text += ' "edges": [\n  {"src": "a", "dst": "b"},\n  {"src": "b", "dst": "a"}]}'
    with pytest.raises(SpecError) as err:
        parse_json(text, "bad.json")
    (d,) = err.value.diagnostics
    assert d.code == "E924" and d.span is not None
    assert d.span.line in (8, 9) and d.span.column == 3  # either edge of the cycle


def test_cluster_without_all_links_is_rejected() -> None:
    data = json.loads((FIXTURES / "graph_v1.json").read_text())
    data["cluster"]["links"].pop()
    with pytest.raises(SpecError) as err:
        parse_json(json.dumps(data))
    assert "cpu0 -> gpu1" in err.value.diagnostics[0].message


def test_export_needs_a_choice_when_ambiguous() -> None:
    text = (REPO / "specs" / "inception.plan")
    spec = planner.load(text)
    with pytest.raises(UsageError):
        export_spec(spec)
    plan = next(iter(spec.plans))
    assert export_spec(spec, plan=plan)["plan"]["name"] == plan
    graph = next(iter(spec.graphs))
    assert "cluster" not in export_spec(spec, graph=graph)
    with pytest.raises(UsageError):
        export_spec(spec, plan="nope")
    with pytest.raises(UsageError):
        export_spec(spec, graph="nope")


def test_export_graph_names_colocation_groups_after_their_first_op() -> None:
    spec = planner.loads('graph g { op a { time 1 ms } op b { time 1 ms } op c { time 1 ms }\n'
                         'a -> b -> c\ncolocate c, b }')
    data = export_graph(spec.graphs["g"])
    assert [o["colocation"] for o in data["ops"]] == [None, "b", "b"]


@pytest.mark.skipif(not DNN_FILES, reason="../shared/datasets/dnn-partitioning is absent")
@pytest.mark.parametrize("path", DNN_FILES, ids=[p.stem for p in DNN_FILES])
def test_dnn_partitioning_graphs_import(path: Path) -> None:
    raw = json.loads(path.read_text())
    result = parse_json(path.read_text(), str(path))
    spec = planner.loads(result.to_spec(), f"{path.stem}.plan")
    (problem,) = spec.plans.values()
    g = problem.graph
    assert len(g.ops) == len(raw["nodes"])
    assert len(g.edges) == len({(e["sourceId"], e["destId"]) for e in raw["edges"]})
    node = raw["nodes"][-1]
    op = g.ops[g.op_index[node["name"]]]
    # measured latencies are written with 4 significant digits (half a unit of the 4th off)
    assert op.time_s == pytest.approx(node["fpgaLatency"] * 1e-3, rel=5e-4)
    assert op.time_by_kind["cpu"] == pytest.approx(node["cpuLatency"] * 1e-3, rel=5e-4)
    fpgas = [d for d in problem.cluster.devices if d.kind == "fpga"]
    assert len(fpgas) == raw["maxFPGAs"]
    assert {d.memory_bytes for d in fpgas} == {int(raw["maxSizePerFPGA"])}
    colors = [n["colorClass"] for n in raw["nodes"] if n.get("colorClass") is not None]
    sizes = [colors.count(c) for c in set(colors)]
    assert len(g.colocations) == sum(1 for s in sizes if s > 1)


def test_a_pipeline_plan_and_its_backward_ops_round_trip() -> None:
    result = import_onnx(zoo_path("resnet50"), training=True)
    text = result.to_spec()
    graph = next(iter(planner.loads(text).graphs))
    cluster = ("cluster two { device g[0..1] { memory 64 GiB }\n"
               "  link g[0..1] <-> g[0..1] { bandwidth 10 GB/s } }\n")
    text += cluster + (f"plan pp {{ graph {graph}; cluster two; objective pipeline; "
                       "microbatches 8; schedule interleaved; stages_per_device 2 }\n")
    spec = planner.loads(text)
    data = export_spec(spec, plan="pp")
    assert (data["plan"]["objective"], data["plan"]["microbatches"], data["plan"]["schedule"],
            data["plan"]["stages_per_device"]) == ("pipeline", 8, "interleaved", 2)
    backward = {o["name"]: o["backward_of"] for o in data["ops"] if "backward_of" in o}
    assert backward and all(b == f + ".bwd" for b, f in backward.items())
    _validate(data, schema(), schema())
    assert _round_trip(data) == data
    again = planner.loads(parse_json(json.dumps(data), "x.json").to_spec(), "x.plan").plan()
    assert again.pipeline == spec.plan("pp").pipeline
    assert dict(again.graph.backward_of) == dict(spec.plan("pp").graph.backward_of)


@pytest.mark.parametrize(("field", "value", "words"), [
    ("microbatches", "8", "must be a whole number"), ("schedule", 3, "must be one of gpipe"),
    ("objective", "pipelin", 'must be one of makespan, pipeline, not "pipelin"')])
def test_bad_pipeline_fields_are_spec_errors(field: str, value: Any, words: str) -> None:
    data = json.loads((FIXTURES / "graph_v1.json").read_text())
    data["plan"][field] = value
    with pytest.raises(SpecError) as err:
        result = parse_json(json.dumps(data), "x.json")
        planner.loads(result.to_spec(), "x.plan")
    assert words in str(err.value)


def test_ties_round_trip_and_match_the_schema() -> None:
    spec = planner.load(REPO / "tests" / "spec" / "valid" / "tied.plan")
    data = export_spec(spec)
    assert data["ties"] == [{"ops": ["wte", "lm_head"], "bytes": 64 * 1024},
                            {"ops": ["enc.pos", "dec.pos"], "bytes": 4 * 1024}]
    _validate(data, schema(), schema())
    assert _round_trip(data) == data
    again = planner.loads(parse_json(json.dumps(data), "x.json").to_spec(), "x.plan")
    assert again.plan().graph.ties == spec.plan().graph.ties
    named = {**data, "ties": [{"ops": ["wte", "lm_head"], "weight": "wte.weight"}]}
    assert _round_trip(named)["ties"] == [{"ops": ["wte", "lm_head"], "bytes": 64 * 1024,
                                           "weight": "wte.weight"}]
    with pytest.raises(SpecError):
        parse_json(json.dumps({**data, "ties": [{"ops": ["wte"]}]}), "x.json")


def _one_op(**fields: Any) -> dict[str, Any]:
    return {"format": "planner-graph", "version": 1, "name": "g",
            "ops": [{"name": "a", "time_s": 1, **fields}]}


def _with_plan(**plan: Any) -> dict[str, Any]:
    return {**_one_op(), "cluster": {"name": "c", "devices": [{"name": "d",
                                                             "memory_bytes": 1000}]},
            "plan": plan}


#: values the JSON types allow but the language does not (its ranges, its names, its
#: pipeline settings), each with the path that the report names: the spec made from such a
#: file used not to load (E932, "a bug in planner's importer", with no place)
OUT_OF_LANGUAGE = [
    (_one_op(time_s=1e300), "ops[0].time_s", "above the valid range of a time"),
    (_one_op(time_s=5e-324), "ops[0].time_s", "below the valid range of a time"),
    (_one_op(output_bytes=2**50 + 1), "ops[0].output_bytes", "above the valid range of a size"),
    (_one_op(flops=1e19), "ops[0].flops", "above the valid range of a work"),
    (_one_op(time_by_kind_s={"": 2}), "ops[0].time_by_kind_s", "may not be empty"),
    (_one_op(name="a\u0001"), "ops[0].name", "contains U+0001"),
    (_one_op(name="a\u202e"), "ops[0].name", "contains U+202E"),
    (_one_op(type="\ufb01"), "ops[0].type", "NFKC"),
    (_one_op(backward_of="zz"), "ops[0].backward_of", "names no op"),
    (_with_plan(objective="pipeline", microbatches=0), "plan.microbatches", "from 1 to 1024"),
    (_with_plan(objective="pipeline", schedule="foo"), "plan.schedule", "must be one of"),
    (_with_plan(microbatches=4), "plan.microbatches", "objective is makespan"),
]


@pytest.mark.parametrize(("data", "path", "words"), OUT_OF_LANGUAGE)
def test_values_outside_the_language_are_located_e922(data: dict[str, Any], path: str,
                                                       words: str) -> None:
    text = json.dumps(data, ensure_ascii=False)
    with pytest.raises(SpecError) as err:
        parse_json(text, "bad.json")
    d = err.value.diagnostics[0]
    assert (d.code, d.message.split("`")[1]) == ("E922", path) and words in d.message
    assert d.span is not None and d.span.file == "bad.json"


@pytest.mark.parametrize(("data", "path", "value"), [
    (_one_op(time_by_kind_s=[]), "ops[0].time_by_kind_s", "[]"),
    (_one_op(time_by_kind_s=0), "ops[0].time_by_kind_s", "0"),
    (_one_op(time_by_kind_s=""), "ops[0].time_by_kind_s", '""'),
    ({**_with_plan(), "plan": []}, "plan", "[]"),
    (_with_plan(pins=[]), "plan.pins", "[]"),
    (_with_plan(placement=False), "plan.placement", "false"),
])
def test_an_empty_value_of_the_wrong_type_is_e922_at_it(data: dict[str, Any], path: str,
                                                         value: str) -> None:
    """`"time_by_kind_s": []` (or `0`, `""`; a plan, its pins or placement `[]`) was read as
    an empty object without a word: only null is absent."""
    text = json.dumps(data)
    with pytest.raises(SpecError) as err:
        parse_json(text, "bad.json")
    (d,) = err.value.diagnostics
    assert d.code == "E922" and d.message.startswith(f"`{path}` must be ")
    assert d.span is not None and text[d.span.column - 1:].startswith(value)


def test_null_is_still_absent() -> None:
    for data in (_one_op(time_by_kind_s=None), {**_with_plan(), "plan": None},
                 _with_plan(pins=None, placement=None)):
        parse_json(json.dumps(data), "ok.json")


@pytest.mark.parametrize("literal", ["Infinity", "1e400"])
def test_an_infinite_number_is_e922_at_the_value(literal: str) -> None:
    """Was `<generated>:8:15: error[E108]`, a place in a file that does not exist."""
    text = json.dumps(_one_op()).replace('"time_s": 1', f'"time_s": {literal}')
    with pytest.raises(SpecError) as err:
        parse_json(text, "bad.json")
    (d,) = err.value.diagnostics
    assert d.code == "E922" and d.span is not None and d.span.file == "bad.json"
    assert text[d.span.column - 1:].startswith(literal)


def test_sizes_of_a_terabyte_and_more_keep_every_byte() -> None:
    """Were written `output 1 TB`, `output 1 TiB`, `bytes 1024 TiB`: a byte lost each."""
    data = {"format": "planner-graph", "version": 1, "name": "g",
            "ops": [{"name": "a", "time_s": 1, "output_bytes": 1_000_000_000_001,
                     "params_bytes": 2**40 + 1},
                    {"name": "b", "time_s": 1, "output_bytes": 1_099_511_627_777,
                     "temp_bytes": 2**50 - 1}],
            "edges": [{"src": "a", "dst": "b", "bytes": 1_125_899_906_842_623}],
            "ties": [{"ops": ["a", "b"], "bytes": 2**40 + 1}]}
    data["ops"][1]["params_bytes"] = 2**40 + 1
    back = _round_trip(data)
    assert _round_trip(back) == back
    assert [(o["params_bytes"], o["output_bytes"], o["temp_bytes"]) for o in back["ops"]] == [
        (2**40 + 1, 1_000_000_000_001, 0), (2**40 + 1, 1_099_511_627_777, 2**50 - 1)]
    assert back["edges"][0]["bytes"] == 1_125_899_906_842_623
    assert back["ties"][0]["bytes"] == 2**40 + 1


@pytest.mark.parametrize(("extra", "words"), [
    ({"src": "d", "dst": "d", "bandwidth_Bps": 1e9}, 'links device "d" to itself'),
    ({"src": "d", "dst": "e", "bandwidth_Bps": 2e9}, 'repeats the link "d" -> "e"')])
def test_a_link_to_itself_or_again_is_located_e922(extra: dict[str, Any], words: str) -> None:
    """Were dropped, and a second link of a pair silently replaced the first's bandwidth."""
    data = {**_one_op(), "cluster": {"name": "c", "devices": [
        {"name": n, "memory_bytes": 1000} for n in "de"], "links": [
        {"src": "d", "dst": "e", "bandwidth_Bps": 1e9},
        {"src": "e", "dst": "d", "bandwidth_Bps": 1e9}, extra]}}
    with pytest.raises(SpecError) as err:
        parse_json(json.dumps(data), "bad.json")
    (d,) = err.value.diagnostics
    assert d.code == "E922" and "`cluster.links[2]`" in d.message and words in d.message
    assert d.span is not None and d.span.file == "bad.json"


def test_a_given_placement_round_trips_and_runs_as_expert() -> None:
    """A plan's `place` statements were dropped by `export json`: the spec made back from
    the file had no given placement, so `--algo expert` and `simulate` had nothing to run."""
    spec = planner.load(REPO / "tests" / "spec" / "valid" / "example" / "tiny.plan")
    data = export_spec(spec)
    assert data["plan"]["placement"] == {"conv1": "gpu0", "conv2": "gpu1",
                                         "head/logits:0": "gpu1"}
    _validate(data, schema(), schema())
    assert _round_trip(data) == data
    again = planner.loads(parse_json(json.dumps(data), "x.json").to_spec(), "x.plan").plan()
    assert dict(again.placement) == dict(spec.plan().placement)
    before, after = planner.solve(spec.plan(), "expert"), planner.solve(again, "expert")
    assert after.placement_by_name == before.placement_by_name
    assert after.makespan_s == before.makespan_s
    assert "placement" not in export_spec(planner.load(REPO / "specs" / "resnet.plan"))["plan"]
    data["plan"]["placement"]["conv1"] = "gpu9"
    with pytest.raises(SpecError) as err:
        parse_json(json.dumps(data), "bad.json")
    (d,) = err.value.diagnostics
    assert d.code == "E922" and '`plan.placement` places "conv1" on unknown device "gpu9"' \
        in d.message and d.span is not None and d.span.file == "bad.json"


def test_an_op_timed_by_kind_alone_round_trips() -> None:
    """`op a { time[cpu] 1 ms }` is a valid op (on devices of kind cpu), but `export json`
    made a file that `import json` refused: "`ops[0]` needs `time_s` or `flops`"."""
    spec = planner.loads("graph g { op a { time[cpu] 1 ms } }\n"
                         "cluster c { device d { kind cpu  memory 1 GiB } }\n"
                         "plan p { graph g  cluster c }\n")
    data = export_spec(spec)
    assert data["ops"][0]["time_by_kind_s"] == {"cpu": 0.001}
    _validate(data, schema(), schema())
    assert _round_trip(data) == data
    bare = {**data, "ops": [{**data["ops"][0], "time_by_kind_s": {}}]}
    with pytest.raises(AssertionError):
        _validate(bare, schema(), schema())
    with pytest.raises(SpecError) as err:
        parse_json(json.dumps(bare), "bad.json")
    assert "`ops[0]` needs `time_s`, `flops` or a `time_by_kind_s` entry" in str(err.value)


@pytest.mark.parametrize(("second", "name"), [({"id": 2, "name": "a"}, "a"),
                                              ({"id": 2, "name": "n1"}, "n1")])
def test_a_dnn_partitioning_name_given_twice_is_located_at_the_second(
        second: dict[str, Any], name: str) -> None:
    """Was "`nodes` repeat node names" at the list's start, naming neither the name nor
    the nodes (a node without `name` is named n<id>: `n1` here for the first)."""
    first = {"id": 1, "fpgaLatency": 1, **({"name": "a"} if name == "a" else {})}
    data = {"nodes": [first, {**second, "fpgaLatency": 1}], "edges": [], "maxFPGAs": 1,
            "maxSizePerFPGA": 100}
    text = json.dumps(data)
    with pytest.raises(SpecError) as err:
        parse_json(text, "dp.json")
    (d,) = err.value.diagnostics
    assert d.code == "E922" and d.message == f'`nodes[1]` is named "{name}", as nodes[0] is'
    assert d.span is not None and text[d.span.column - 1:].startswith(f'"{name}", "fpga')


def _dnn(**change: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGA": 10**9,
        "nodes": [{"id": 1, "name": "a", "fpgaLatency": 1.0, "cpuLatency": 2.0},
                  {"id": 2, "name": "b", "fpgaLatency": 1.0}],
        "edges": [{"sourceId": 1, "destId": 2, "size": 100}]}
    data.update(change)
    return data


@pytest.mark.parametrize(("where", "value", "message"), [
    (("nodes", 0, "id"), [1], "`nodes[0].id` must be a number or a string"),
    (("nodes", 0, "colorClass"), {"c": 1}, "`nodes[0].colorClass` must be a number or a string"),
    (("edges", 0, "sourceId"), [1], "`edges[0]` must join two different known node ids")])
def test_a_dnn_partitioning_id_that_is_no_number_nor_string_is_located(
        where: tuple[str, int, str], value: Any, message: str) -> None:
    """Before: E999, a TypeError (a list or an object as a dict key)."""
    data = _dnn()
    data[where[0]][where[1]][where[2]] = value
    text = json.dumps(data, indent=1)
    with pytest.raises(SpecError) as err:
        parse_json(text, "dp.json")
    d = err.value.diagnostics[0]  # (a node refused: its edges' ends are unknown, reported too)
    assert (d.code, d.message) == ("E922", message)
    assert d.span is not None and d.span.file == "dp.json"


def test_a_dnn_partitioning_cluster_over_the_device_limit_is_refused_before_it_is_made(
        ) -> None:
    """Before: `maxFPGAs` 1025 made 1,026 devices and their 1,051,650 links, then wrote them a
    line each: minutes, and gigabytes for 10**6, before E246 on loading the spec made. Now
    E922 at `maxFPGAs`, before anything is made."""
    text = json.dumps(_dnn(maxFPGAs=10**6), indent=1)
    with pytest.raises(SpecError) as err:
        parse_json(text, "dp.json")
    (d,) = err.value.diagnostics
    assert d.code == "E922" and "1_000_001 devices, more than 1024" in d.message
    assert d.hints == ("raise the limit with `--limit devices=1000001`",)
    assert d.span is not None and text.splitlines()[d.span.line - 1].strip().startswith(
        '"maxFPGAs"')


def test_a_dnn_partitioning_cluster_is_written_as_ranges_linking_every_pair() -> None:
    """Before: a line per device and per pair of devices (31 MB of spec for 1,024)."""
    spec_text = parse_json(json.dumps(_dnn(maxFPGAs=300, maxCPUs=2)), "dp.json").to_spec()
    cluster = spec_text[spec_text.index("cluster dp_cluster"):].split("\n}\n")[0]
    assert len(cluster.splitlines()) == 7, cluster  # its `}` aside
    (problem,) = planner.loads(spec_text, "dp.plan").plans.values()
    devices = problem.cluster.devices
    assert [d.name for d in devices] == [f"fpga{i}" for i in range(300)] + ["cpu0", "cpu1"]
    pairs = {(lk.src, lk.dst) for lk in problem.cluster.links}
    assert pairs == {(a, b) for a in range(302) for b in range(302) if a != b}
    assert {lk.bandwidth_Bps for lk in problem.cluster.links} == {2 * 2**30}
