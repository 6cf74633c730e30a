"""The algorithm registry is the one list: the CLI's `--algo` (help, validation, which
options apply, completion), `compare --algos` (help, default, validation) and `auto`'s
candidates all read `planner.algorithms.ALGORITHMS`, so an algorithm is added by its module
and one registry line, and reading the table imports no algorithm module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import planner.algorithms as registry
from planner.algorithms import TUNABLE, AlgorithmInfo, Options
from planner.cli.applies import APPLIES, applicable_to

ROOT = Path(__file__).resolve().parents[2]
SPEC = "tests/algorithms/specs/diamond.plan"

#: a new algorithm in a module of its own: `single`'s placement under another name
FAKE_MODULE = '''
from planner.algorithms.baselines.single import place as _single


def place(problem, options):
    solution = _single(problem, options)
    return solution.with_plan(solution.plan.with_algorithm(""))
'''

#: the CLI with one more registry line: what editing `planner/algorithms/__init__.py` does
PROBE = '''
import sys
from types import MappingProxyType

import planner.algorithms as registry
from planner.algorithms import AlgorithmInfo

fake = AlgorithmInfo("fake", "fake_algo", "a test double of single", options=("seed",),
                     constructive=True, compare_default=True)
registry.ALGORITHMS = MappingProxyType({**registry.ALGORITHMS, "fake": fake})

from planner.cli import main

sys.argv = ["planner", *sys.argv[1:]]
main()
'''


def _with_fake(tmp_path: Path, *args: str, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:
    (tmp_path / "fake_algo.py").write_text(FAKE_MODULE)
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])]), "COLUMNS": "100",
        **(env or {})}
    return subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=240, check=False)


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.slow
def test_a_new_registry_line_is_in_the_help_of_solve_and_compare(tmp_path: Path) -> None:
    solve = _with_fake(tmp_path, "solve", "--help")
    assert solve.returncode == 0, solve.stderr
    shown = _flat(solve.stdout)
    assert ("Algorithm: auto, msct, metf, mtopo, heft, cpop, search, pipedp, pipeilp, hybrid, "
            "uniform, single, roundrobin, random, expert, cpsat, ilp, fake.") in shown
    assert "Seed for --algo fake, random and search." in shown
    compare = _with_fake(tmp_path, "compare", "--help")
    assert compare.returncode == 0, compare.stderr
    shown = _flat(compare.stdout)
    assert "random, expert, cpsat, ilp, fake." in shown
    assert "msct,metf,heft,cpop,single,fake" in shown.replace(" ", "")  # the default


@pytest.mark.slow
def test_a_new_registry_line_is_accepted_by_solve(tmp_path: Path) -> None:
    done = _with_fake(tmp_path, "solve", SPEC, "--algo", "fake", "--seed", "3", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    assert (result["algorithm"], result["feasible"]) == ("fake", True)
    # its capabilities decide which options apply: it takes no --gap
    refused = _with_fake(tmp_path, "solve", SPEC, "--algo", "fake", "--gap", "0.1")
    assert refused.returncode == 2
    assert "error[E605]: --gap does not apply to --algo fake" in refused.stderr


def test_a_new_constructive_line_is_a_candidate_of_auto(tmp_path: Path) -> None:
    done = _with_fake(tmp_path, "solve", SPEC, "--algo", "auto", "--time-limit", "0", "--json")
    assert done.returncode == 0, done.stderr
    assert list(json.loads(done.stdout)["result"]["candidates"]) == [
        "msct", "metf", "mtopo", "heft", "cpop", "single", "roundrobin", "fake"]


def test_a_new_registry_line_runs_in_compare(tmp_path: Path) -> None:
    done = _with_fake(tmp_path, "compare", SPEC, "--algos", "heft,fake", "--executor",
                      "inline", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["result"]
    assert sorted(r["algorithm"] for r in rows) == ["fake", "heft"]
    for r in rows:  # a plan that meets its bound is optimal, whatever algorithm made it
        assert r["status"] == ("optimal" if r["gap"] == 0 else "feasible"), r


def test_a_new_registry_line_is_completed(tmp_path: Path) -> None:
    words = "planner solve x.plan --algo f"
    done = _with_fake(tmp_path, env={"_PLANNER_COMPLETE": "complete_bash",
                                     "COMP_WORDS": words,
                                     "COMP_CWORD": str(len(words.split(" ")) - 1)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["fake"]


def test_reading_the_registry_imports_no_algorithm_module() -> None:
    probe = ("import sys, json\n"
             "from planner.algorithms import compare_defaults, constructive, get, names\n"
             "from planner.cli.applies import applicable_to, check_applicable\n"
             "facts = [names(), constructive(), compare_defaults(), get('ilp').summary,\n"
             "         [applicable_to(o) for o in ('--gap', '--solver')]]\n"
             "check_applicable('cpsat', ['--emit'])\n"
             "print(json.dumps(sorted(m for m in sys.modules\n"
             "    if m.startswith('planner.algorithms.')\n"
             "    and m not in ('planner.algorithms.base', 'planner.algorithms.lpsize')\n"
             "    or m in ('numpy', 'highspy', 'ortools', 'pyomo'))))\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    assert json.loads(out) == []


def test_every_entry_names_a_module_with_place() -> None:
    for name, info in registry.ALGORITHMS.items():
        assert info.name == name
        assert callable(info.place), name
        assert set(info.options) <= set(TUNABLE), name


def test_the_tunable_options_are_fields_of_options() -> None:
    assert set(TUNABLE) <= set(Options.__dataclass_fields__)
    assert set(APPLIES.values()) <= set(TUNABLE)


def test_the_capabilities_and_the_options_agree() -> None:
    with pytest.raises(ValueError, match="exact needs emit"):
        AlgorithmInfo("x", "m", "s", options=("time_limit_s", "gap"), exact=True)
    with pytest.raises(ValueError, match="needs_solver needs solver"):
        AlgorithmInfo("x", "m", "s", needs_solver=True)
    with pytest.raises(ValueError, match="anytime needs time_limit_s"):
        AlgorithmInfo("x", "m", "s", anytime=True)
    with pytest.raises(ValueError, match="not in TUNABLE"):
        AlgorithmInfo("x", "m", "s", options=("time_limit",))


def test_the_registry_answers_what_the_cli_needs() -> None:
    assert registry.constructive() == ("msct", "metf", "mtopo", "heft", "cpop", "single",
                                       "roundrobin")
    assert registry.compare_defaults() == ("msct", "metf", "heft", "cpop", "single")
    assert applicable_to("--gap") == ["auto", "pipeilp", "cpsat", "ilp"]
    assert registry.taking("seed") == ("search", "random")
    assert [registry.display_name(n) for n in ("msct", "metf", "heft", "cpop", "single")] == [
        "m-SCT", "m-ETF", "HEFT", "CPOP", "single"]
    assert registry.display_name("unregistered") == "unregistered"
    assert [n for n, _ in registry.completions("m")] == ["msct", "metf", "mtopo"]


def _complete(words: str) -> list[str]:
    env = {**os.environ, "_PLANNER_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split(" ")) - 1)}
    code = "import sys; sys.argv[0] = 'planner'; from planner.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60, check=True).stdout.split()


@pytest.mark.slow
def test_algorithm_names_complete_from_the_registry() -> None:
    assert _complete("planner solve x.plan --algo m") == ["msct", "metf", "mtopo"]
    assert _complete("planner compare x.plan --algos msct,h") == ["msct,heft", "msct,hybrid"]
