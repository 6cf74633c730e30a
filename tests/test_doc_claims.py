"""What the pages say of the code is what the code does: the figures and lists that
README.md and `docs/*.md` quote from it (the commands that take an option, the colours of
the report's legend, the size of a module), read from the page and compared with the code,
so that a change to either side that makes the page false fails here."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from cli.helpers import invoke

import planner
from planner.compare import plan_sweep
from planner.compare.rows import empty_row, sort_key
from planner.errors import InfeasibleError
from planner.facts import proofs
from planner.render.groups import CATEGORY_COLOURS, OTHER, legend_by_type

ROOT = Path(__file__).resolve().parents[1]


def _page(name: str) -> str:
    return " ".join((ROOT / name).read_text(encoding="utf-8").split())


def test_the_readme_names_the_commands_that_take_limit_and_root(tmp_path: Path) -> None:
    # it said "and, but for `fmt`, `--root FOLDER`", and `fmt --help` lists --root
    said = re.search(r"The commands that load specs \(([^)]*)\) take `--limit NAME=VALUE` "
                     r"and(?:, but for ([^,]*),)? `--root FOLDER`", _page("README.md"))
    assert said, "README.md no longer says which commands take --limit and --root"
    commands = re.findall(r"`([\w ]+)`", said.group(1))
    without_root = set(re.findall(r"`([\w ]+)`", said.group(2) or ""))
    # it left out `diff --spec` and `export`, which load specs and took neither option
    assert {"diff", "export json", "export torch"} <= set(commands), commands
    for command in commands:
        code, out, _ = invoke([*command.split(), "--help"], tmp_path)
        assert code == 0 and "--limit" in out, command
        assert ("--root" in out) == (command not in without_root), command


def test_the_legend_colours_the_op_types_as_the_compare_page_says() -> None:
    # it said "the ten with the most compute time in their own colours": nine, past ten
    page = _page("docs/compare.md")
    assert "each in its own colour when there are at most ten; beyond ten, the nine with " \
           "the most compute time keep theirs and the rest are grey as `other`" in page
    for n, named in ((10, 10), (12, 9)):
        names = [f"n{i}.{chr(ord('A') + i)}" for i in range(n)]
        legend = legend_by_type(names, [float(n - i) for i in range(n)])
        kept = [c for c in legend.names if c != OTHER]
        assert kept == [chr(ord("A") + i) for i in range(named)], legend.names
        assert len(set(legend.colours[:named])) == named
        assert (OTHER in legend.names) == (n > len(CATEGORY_COLOURS))


def test_the_bounds_twin_is_the_size_the_twins_page_gives() -> None:
    # it said "98 lines, one function": the module, which has grown to 100 lines
    said = re.search(r"The bounds' twin stays, though it buys the least.\*\* It is one "
                     r"function, in a module of about (\d+) lines", _page("docs/twins.md"))
    assert said, "docs/twins.md no longer gives the bounds' twin's size"
    source = (ROOT / "planner" / "bounds" / "_kernel.py").read_text(encoding="utf-8")
    assert abs(int(said.group(1)) - len(source.splitlines())) <= 10
    functions = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]
    assert len(functions) == 1


def test_the_cost_model_page_gives_the_copy_proofs_under_both_memory_models() -> None:
    # it said "under `static` memory, counting the tensors a device must receive: E306 ...,
    # E307 ...", and `check` proves both under `liveness` too (planner/facts.py)
    page = _page("docs/cost-model.md")
    before = page[:page.index("`E306` a unit fits no device with them")]
    clause = before[before.rindex("`E305`"):]
    assert "under `static` memory" not in clause, clause
    assert "under `liveness`" in clause, clause
    spec = """cluster c { device gpu[0..1] { memory 1 GiB }
                          link gpu0 <-> gpu1 { bandwidth 10 GB/s } }
              graph g { op a { time 1 ms  output 600 MB }  op b { time 1 ms  params 600 MB }
                        a -> b }
              plan p { graph g  cluster c  memory liveness }"""
    assert [p.code for p in proofs(planner.loads(spec).plan())] == ["E306"]


def test_the_fallback_the_algorithms_page_gives_is_the_one_a_liveness_plan_gets(
        tmp_path: Path) -> None:
    # it said "m-TOPO's placement after running out of memory"; under `memory liveness`
    # the list schedulers return the best contiguous split first (listsched/retry.py)
    page = (ROOT / "docs" / "algorithms.md").read_text(encoding="utf-8")
    row = page.split("| `fallback` |")[1].split("\n")[0]
    assert "under `memory liveness`, first the best contiguous split that fits" in row, row
    (tmp_path / "t4.plan").write_text(
        "cluster t4 { device gpu[0..3] { memory 2 MiB } "
        "link gpu[0..3] <-> gpu[0..3] { bandwidth 12 GB/s  latency 5 us } }\n")
    code, _, err = invoke(["generate", "transformer", "--layers", "4", "--hidden", "64",
                           "--heads", "2", "--seq", "64", "--batch", "2", "--vocab", "100",
                           "--training", "--cluster", "t4.plan", "-o", "gpt.plan"], tmp_path)
    assert code == 0, err
    result = planner.solve(planner.load(tmp_path / "gpt.plan").plan(), "metf")
    assert result.status == "fallback"
    assert "the best contiguous split that fits" in str(result.info["reason"])


@pytest.mark.slow
def test_the_cost_model_pages_gpt_training_step_has_its_figures(tmp_path: Path) -> None:
    # it said "a 24-layer GPT, seq 1024, batch 8: 88.78 GiB static": the generator's
    # default hidden size (768) gives 66.89 GiB; 88.78 is hidden 1024, and 1.428 s needs
    # links of 25 GB/s, which it did not say
    said = "a 24-layer GPT, hidden 1024, 16 heads, seq 1024, batch 8: 88.78 GiB static; on " \
           "four 16 GiB V100s joined at 25 GB/s, a 4-way split fits under `liveness`, and " \
           "m-SCT, m-ETF, HEFT, CPOP and m-TOPO each plan it at 1.428 s, status `fallback`"
    assert said in _page("docs/cost-model.md")
    (tmp_path / "c.plan").write_text(
        "cluster c { device gpu[0..3] { kind v100  memory 16 GiB } "
        "link gpu[0..3] <-> gpu[0..3] { bandwidth 25 GB/s  latency 5 us } }\n")
    code, _, err = invoke(["generate", "transformer", "--layers", "24", "--hidden", "1024",
                           "--heads", "16", "--seq", "1024", "--batch", "8", "--training",
                           "--cluster", "c.plan", "-o", "gpt.plan"], tmp_path)
    assert code == 0, err
    text = (tmp_path / "gpt.plan").read_text(encoding="utf-8")
    assert "params + outputs 88.78 GiB" in " ".join(text.split())
    problem = planner.load(tmp_path / "gpt.plan").plan()
    assert problem.memory_model == "liveness"
    for algo in ("msct", "metf", "heft", "cpop", "mtopo"):
        result = planner.solve(problem, algo)
        assert (f"{result.makespan_s:.3f}", result.status, result.feasible) == \
            ("1.428", "fallback", True), algo


#: a row field, a low and a high value of it, per name docs/compare.md sorts the rows by
_SORTED_BY = {"spec": ("spec", "a.plan", "b.plan"), "plan": ("plan", "p", "q"),
              "objective": ("objective", "makespan", "pipeline"),
              "micro-batches": ("microbatches", "spec", "4"), "devices": ("devices", "8", "all"),
              "memory": ("memory", "100%", "4 GiB"), "bandwidth": ("bandwidth", "2x", "1 GB/s"),
              "time limit": ("time_limit_s", 1.0, 2.0),
              "algorithm in registry order": ("algorithm", "msct", "heft")}


def test_the_compare_page_gives_the_rows_and_settings_order() -> None:
    # it said "sorted (spec, plan, devices, memory, bandwidth, algorithm ...)" and nothing of
    # a setting's values, which sort shares before sizes (`50%,8GiB` is not by bytes)
    page = _page("docs/compare.md")
    said = re.search(r"Rows are sorted \(([^)]*)\)", page)
    assert said, "docs/compare.md no longer says how rows are sorted"
    fields = [_SORTED_BY[name.strip()] for name in said.group(1).split(",")]
    assert len(fields) == len(_SORTED_BY)
    for i, (first, lo1, hi1) in enumerate(fields):  # each field outranks those after it
        for later, lo2, hi2 in fields[i + 1:]:
            a, b = ({f: v[1] for f, *v in fields}, {f: v[1] for f, *v in fields})
            a.update({first: lo1, later: hi2})
            b.update({first: hi1, later: lo2})
            assert sort_key(empty_row(**a)) < sort_key(empty_row(**b)), (first, later)
    example = re.search(r"`--memory ([^`]*)` on 16 GiB devices lists `([^`]*)`", page)
    assert example, "docs/compare.md no longer gives the memory order's example"
    sweep = plan_sweep([ROOT / "specs" / "resnet.plan"], "heft", memories=example.group(1))
    order = list(dict.fromkeys(p.setting.memory for p in sweep.points))
    assert order == example.group(2).split(", ")


def test_the_limits_page_gives_the_time_limit_range_solve_and_compare_take(
        tmp_path: Path) -> None:
    # it said "from 0 (`solve`) or above 0 (`compare`)": compare takes 0 too, with solve's
    # meaning (no search or exact phase), and says so in E618's "from 0 to 1000000"
    said = re.search(r"`--time-limit` takes seconds from 0 \(([^)]*)\) up to 1,000,000",
                     _page("docs/limits.md"))
    assert said, "docs/limits.md no longer gives --time-limit's range as one for every command"
    commands = re.findall(r"`(\w+)`", said.group(1))
    assert sorted(commands) == ["compare", "solve"], commands
    spec = ROOT / "tests" / "spec" / "valid" / "example" / "tiny.plan"
    algo = {"solve": ["--algo", "auto"], "compare": ["--algos", "single", "--jobs", "1"]}
    for command in commands:
        for limit, wanted in (("0", 0), ("-1", 2), ("1000001", 2)):
            code, _, err = invoke([command, str(spec), *algo[command], "--root", str(ROOT),
                                   "--time-limit", limit], tmp_path)
            assert code == wanted, (command, limit, err)


@pytest.mark.slow
def test_the_pages_name_the_one_algorithm_that_breaks_a_pin(tmp_path: Path) -> None:
    # they said "`pin` is a hard constraint for every algorithm": `uniform` reads no pins
    # (stage k on device k), and the simulator reports the pin it breaks (E401, exit 3)
    for page, said in (("README.md", "**`pin`** is a hard constraint for every algorithm but "
                                     "the `uniform` baseline"),
                       ("docs/language.md", "`pin OPS to DEVICE` is a hard constraint for "
                                            "every algorithm but the `uniform` baseline"),
                       ("docs/algorithms.md", "`uniform` (a pipeline's even split, which "
                                              "reads neither pins nor memory)")):
        assert said in _page(page), page
    code, _, err = invoke(["generate", "transformer", "--layers", "2", "--hidden", "64",
                           "--heads", "2", "--seq", "16", "--batch", "1", "--vocab", "100",
                           "--training", "--name", "tiny", "-o", "tiny.plan", "--cluster",
                           str(ROOT / "specs" / "clusters" / "small4.plan")], tmp_path)
    assert code == 0, err
    with (tmp_path / "tiny.plan").open("a", encoding="utf-8") as spec:
        spec.write("plan tp {\n  graph tiny\n  cluster small4\n  objective pipeline\n"
                   "  microbatches 8\n  pin tokens to gpu3\n}\n")
    problem = planner.load(tmp_path / "tiny.plan").plan("tp")
    pinned = problem.graph.op_index["tokens"]
    broke = set()
    for name in planner.algorithms.names():
        info = planner.algorithms.get(name)
        if name == "expert" or not info.serves("pipeline"):  # expert: the spec's `place`
            continue
        limit = {"time_limit_s": 1.0} if name in planner.algorithms.taking("time_limit_s") \
            else {}
        try:
            result = planner.solve(problem, name, **limit)
        except InfeasibleError:  # `hybrid`: no layout in the cluster's order holds the pin
            continue
        if result.plan.placement[pinned] != problem.pins[pinned]:
            broke.add(name)
            assert not result.feasible and any("pinned" in b for b in result.breaks), name
    assert broke == {"uniform"}


def test_the_performance_pages_cpsat_stg_row_is_the_recorded_run() -> None:
    # it said "19/19 proved (max 2.7 s)": bench/results/bench_exact.json, README's source,
    # has 18 of the 19 proved (and a rerun on 2026-12-05 too)
    figures = json.loads((ROOT / "bench" / "results" / "bench_exact.json").read_text(
        encoding="utf-8"))["figures"]
    reached, proved = figures["stg_cpsat_reached"], figures["stg_cpsat_proved"]
    row = re.search(r"\| cpsat \| (\d+)/(\d+) \| (\d+)/(\d+) ", _page("docs/performance.md"))
    assert row, "docs/performance.md no longer has cpsat's STG row"
    assert [int(x) for x in row.groups()] == [reached["value"], reached["of"],
                                              proved["value"], proved["of"]]


def _schedules(text: str) -> list[str]:
    return re.findall(r"`(\w+)`", text)


def test_the_pipelines_page_says_under_which_schedules_torch_relays_a_skipping_tensor() -> None:
    # it said a skipping tensor "is relayed by it, as `torch.distributed.pipelining` passes
    # it": torch sends it straight to its readers but under the schedule the script relays
    # it for (`relay_skips`)
    from planner.schedules import TABLE

    template = (ROOT / "planner/io/pipeline_step.py-tpl").read_text(encoding="utf-8")
    relaying = set(re.findall(r'if SCHEDULE\.__name__ == "(\w+)":\n\s+relay_skips\(pipe\)',
                              template))
    assert relaying, "the script no longer says under which schedule it relays"
    relayed = [s.name for s in TABLE if s.torch_class in relaying]
    direct = [s.name for s in TABLE if s.torch_class not in relaying]
    page = _page("docs/pipelines.md")
    assert "as `torch.distributed.pipelining` passes it" not in page
    said = re.search(r"is relayed by it, under every schedule \(the simulator runs the relays "
                     r"too\)\. torch does so under ((?:`\w+`(?:, | and )?)+) only", page)
    assert said and _schedules(said[1]) == relayed, said
    straight = re.search(r"under ((?:`\w+`(?:, | and )?)+) torch sends it straight from the "
                         "stage that computes it to each stage that reads it", page)
    assert straight and sorted(_schedules(straight[1])) == sorted(direct), straight
