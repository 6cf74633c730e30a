"""The registry of diagnostic codes (`planner/codes.py`) against the source that raises them."""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType

from planner.codes import CODES, LAYERS, TABLE, layer

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "planner"
CODE = re.compile(r"\b[EW]\d{3}\b")
EXITS = {"SpecError": 1, "UsageError": 2, "InfeasibleError": 3, "SolverError": 4,
         "SearchLimitError": 6,
         "OutputError": 4}

# Codes used in several modules, each for the one meaning they share there.
SHARED = {
    "E601": "unknown algorithm: `solve --algo` and `compare --algos`",
    "E602": "no such plan: `--plan` of solve/simulate, of compare and of diff, and the "
            "library's `Spec.plan(NAME)` (model.py)",
    "E612": "unknown executor: compare checks it before the sweep, the executor again",
    "E614": "a rows file in a format it cannot take: any rows file by its suffix (rows.py), "
            "a .json one array for --resume, which appends (resume.py)",
    "E640": "contradicting options: `--json` with another `--format`, `fmt`'s `-`, two "
            "outputs in one file (files.py)",
    "E920": "invalid JSON: the Baechi and the `import json` readers",
    "E922": "a malformed imported JSON graph: the Baechi and the `import json` readers",
    "E930": "an invalid option of any generator or importer",
    "E008": "a file outside the root: an import or a symlinked spec (spec/load.py), a file "
            "`fmt` was given (cli/fmt.py)",
    "E943": "invalid example inputs of a PyTorch model: loading them, capturing with them, or "
            "the --granularity they are grouped by",
    "E939": "a PyTorch model that cannot be loaded: a Python file or module (io/torch_load.py), "
            "a saved program (io/torch_program.py)",
}
# The Python API (`planner/api/`; `model.py` for indices out of range) reports the mistakes
# a spec can make with the spec's codes: one meaning, in a spec or in a Problem built in Python.
SHARED.update(dict.fromkeys(
    ("E103", "E105", "E202", "E203", "E205", "E207", "E210", "E213", "E220", "E221", "E222",
     "E223", "E230", "E231", "E232", "E234", "E241", "E244", "E250", "E251", "E252", "E253",
     "E255", "E256", "E257", "E235", "E258", "E259", "E247", "E260", "E236", "E237", "E233",
     "E240"),
    "the same mistake in a spec (spec/) and in a Problem built in Python (api/, model.py)"))
SHARED.update(dict.fromkeys(
    ("E007", "E011", "E012"),
    "the same limit: a file or graph loaded (spec/), and a spec `import` or `generate` makes, "
    "refused before it is written (cli/io_commands.py)"))
SHARED.update(dict.fromkeys(
    ("W236", "W256", "W257", "W258", "W266"),
    "the same warning about a spec (spec/lower/) and about a Problem built in Python "
    "(api/advice.py, api/builder.py), which `warnings.warn` issues"))
SHARED.update({  # one meaning each, raised in two places
    "E642": ("`diff` cannot read a side as a plan: a file that holds none (cli/plandiff.py) "
             "and a report whose figures are none (cli/difffigures.py, kept apart for size)"),
    "E709": ("pipeilp found no placement and this is no proof: its own verdict "
             "(pipeilp/verdict.py) and its run of N identical pipelines under "
             "`data_parallel N` (algorithms/pipeblocks.py)"),
    "E016": ("the `pipeline_copies` limit, checked where a pipeline's micro-batches are "
             "set: a spec (spec/lower/), a compare point's --microbatches "
             "(compare/settings.py), a Problem built in Python (api/checks.py)"),
    "E301": ("a unit larger than any device it may use: under the one-pass memory "
             "models (facts.py) and a pipeline's (stagefacts.py)"),
    "E214": ("a plain number written with a unit: a block's attributes (spec/lower/attrs.py) "
             "and a pipeline's counts (spec/lower/plan.py)"),
    "E707": ("no pipeline split of the plan: pipedp's search (algorithms/pipedp.py) and "
             "its check that one can exist whatever the memory (algorithms/pipecheck.py, "
             "moved out of pipedp.py)"),
    "E712": ("no layout of N replicated pipelines honours the plan: the hybrid DP's "
             "(algorithms/pipehybrid.py), and a pin to a device that starts no block of N "
             "under `data_parallel N` (algorithms/pipeblocks.py, moved out of pipehybrid.py)"),
    "E502": ("a plan file in a format planner cannot read as a plan: an unknown format or "
             "version (plan.py), an `export torch --pipeline` document of replicated stages, "
             "whose `placement` holds one replica of each (cli/given.py)"),
    "E947": ("a pipeline torch's schedules cannot run: the export's checks "
             "(io/torch_pipeline.py) and the regrouping on --ranks (io/torch_ranks.py)"),
    "E605": ("an option the algorithm does not take: `solve`'s flags (cli/applies.py) and "
             "`planner.solve`'s options (algorithms/__init__.py)"),
    "E625": ("an algorithm that does not plan for the objective: `solve` and the library "
             "(algorithms/__init__.py), `compare` before its sweep (compare/sweep.py)"),
    "E290": ("not a number: a builder's argument (api/builder.py) or a model field "
             "(api/checks.py)"),
})
SHARED.update(dict.fromkeys(
    ("E500", "E503", "E504", "E505"),
    "the same mistake in a placement or plan file (plan.py, cli, `planner.read_plan`: "
    "api/result.py) and in a `simulate --stages` file (io/stages.py): not JSON, an unknown op "
    "or device, ops left unplaced"))

# Where each layer's codes may come from: module path prefixes under planner/.
HOMES = {
    # limits on a graph's ops and edges and on plans are counted where the syntax tree is
    # lowered; "not a planner spec" is decided where a syntax error is; the limit on a
    # pipeline's copies wherever micro-batches are set (SHARED["E016"])
    "0": ("spec/load.py", "errors.py", "cli", "spec/lower/", "spec/syntax.py", "api/checks.py",
          "compare/settings.py"),
    "1": ("spec/syntax.py", "spec/larkparse.py", "spec/fastparse.py", "spec/fmtcheck.py",
          "api/"),
    "2": ("spec/lower/", "spec/names.py", "api/", "model.py"),
    # a pipeline plan's proofs follow its own memory rule (stagefacts.py, SHARED["E301"])
    "3": ("facts.py", "stagefacts.py"),
    "4": ("cli", "simulate/"),
    "5": ("plan.py", "reportrows.py", "cli", "io/stages.py", "api/result.py"),
    # `Spec.plan(NAME)` (model.py) is the library's `--plan`: E602 as on the command line;
    # W626 is built where torch's refusal is decided, for `check`, `solve` and `planner.solve`
    "6": ("cli/", "compare/", "algorithms/__init__.py", "files.py", "model.py",
          "pipeline/runnable.py"),
    "7": ("algorithms/",),
    # the registry refuses a model format an exact solver cannot write (E814) before any work;
    # the enumeration of every plan under liveness is exact too (E819)
    "8": ("algorithms/exact/", "algorithms/auto.py", "algorithms/infeasible.py",
          "algorithms/__init__.py", "algorithms/enumeration.py"),
    "9": ("io/", "generate/", "workload/", "cli/io_commands.py", "cli/export_commands.py",
          "cli/clashes.py", "cli/ignored.py"),
    "99": ("cli/guard.py",),
}


@dataclass
class Scan:
    """What one pass over source text finds."""

    mentioned: set[str] = field(default_factory=set)  # anywhere, comments included
    used: set[str] = field(default_factory=set)  # in string literals that are not docstrings
    compared: set[str] = field(default_factory=set)  # only tested for (`d.code == "E704"`)
    exits: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    warnings: set[str] = field(default_factory=set)  # codes given a warning severity
    built: list[int] = field(default_factory=list)  # lines that build a code at run time


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for n in ast.walk(tree):
        body = getattr(n, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            out.add(id(body[0].value))
    return out


def _name(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def scan(text: str) -> Scan:
    """The codes a module mentions, uses, raises with an exit status, or gives as warnings."""
    tree = ast.parse(text)
    docs = _docstrings(tree)
    found = Scan(mentioned=set(CODE.findall(text)))
    tested = {id(c) for n in ast.walk(tree) if isinstance(n, ast.Compare) for c in ast.walk(n)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            (found.compared if id(n) in tested else found.used).update(CODE.findall(n.value))
        if isinstance(n, ast.JoinedStr):
            for a, b in zip(n.values, n.values[1:], strict=False):
                if isinstance(a, ast.Constant) and isinstance(b, ast.FormattedValue) \
                        and re.search(r"(?<![A-Za-z])[EW]\d{0,2}$", str(a.value)):
                    found.built.append(n.lineno)
        if not isinstance(n, ast.Call):
            continue
        name = _name(n)
        if name in EXITS:
            for s in _strings(n):
                for c in CODE.findall(s):
                    found.exits[c].add(EXITS[name])
        warns = name == "warning" or any(
            k.arg == "severity" and "WARNING" in ast.unparse(k.value) for k in n.keywords)
        first = n.args[0] if n.args else None
        if warns and isinstance(first, ast.Constant) and CODE.fullmatch(str(first.value)):
            found.warnings.add(first.value)
    return found


@cache
def modules() -> dict[str, Scan]:
    """Every planner module's scan, made on first use: at import it cost every xdist
    worker about 3 s of collection, though one worker runs these tests."""
    return {p.relative_to(PACKAGE).as_posix(): scan(p.read_text(encoding="utf-8"))
            for p in sorted(PACKAGE.rglob("*.py")) if p.name != "codes.py"}


def _where(code: str) -> set[str]:
    return {m for m, s in modules().items() if code in s.used}


def test_the_scanner_finds_codes_and_their_exits_and_skips_docstrings() -> None:
    found = scan('"""Docstring: E111."""\n'
                 'def f(n):\n'
                 '    """E222 too."""\n'
                 '    warn(Diagnostic("W333", "m", severity=Severity.WARNING))\n'
                 '    raise UsageError(Diagnostic("E444", f"x {n}"))  # E555\n'
                 '    return f"E{n}" if n.code in ("E666",) else None\n')
    assert found.mentioned == {"E111", "E222", "W333", "E444", "E555", "E666"}
    assert found.used == {"W333", "E444"} and found.compared == {"E666"}
    assert dict(found.exits) == {"E444": {2}}
    assert found.warnings == {"W333"} and found.built == [6]


def test_the_table_is_in_order_without_duplicates() -> None:
    for c in TABLE:
        assert re.fullmatch(r"[EW]\d{3}", c.code), c.code
    keys = [(int(c.code[1:]), c.code[0]) for c in TABLE]
    assert keys == sorted(set(keys)), "keep TABLE sorted by number, one line per code"


def test_every_code_in_the_source_is_registered() -> None:
    unknown = {f"{c} in planner/{m}" for m, s in modules().items() for c in s.mentioned
               if c not in CODES}
    assert not unknown, "add a Code(...) line to planner/codes.py for each"


def test_no_code_is_built_at_run_time() -> None:
    built = [f"planner/{m}:{line}" for m, s in modules().items() for line in s.built]
    assert not built, "write codes as literals, so the registry tests can see them"


def test_every_registered_code_is_used_and_retired_ones_are_not() -> None:
    for c in TABLE:
        where = _where(c.code)
        if not c.retired:
            assert where, f"{c.code} is raised nowhere: mark it retired or remove it"
            continue
        tested = {m for m, s in modules().items() if c.code in s.compared}
        assert not where | tested, f"{c.code} is retired (now {c.retired}): {where | tested}"
        for new in re.findall(r"[EW]\d{3}", c.retired):
            assert new in CODES and not CODES[new].retired, f"{c.code} -> {new}"


def test_a_code_lives_in_one_module_unless_shared_for_one_meaning() -> None:
    several = {c.code for c in TABLE if len(_where(c.code)) > 1}
    unexplained = {c: sorted(_where(c)) for c in several - set(SHARED)}
    assert not unexplained, "give the new meaning its own code, or explain it in SHARED"
    assert set(SHARED) <= several, "SHARED lists a code that one module uses alone"


def test_codes_come_from_the_modules_of_their_layer() -> None:
    assert set(HOMES) == set(LAYERS)
    strays = {f"{c} ({layer(c)}) in planner/{m}"
              for m, s in modules().items() for c in s.used
              if c in CODES and not m.startswith(HOMES[_prefix(c)])}
    assert not strays, "pick a code in the module's range, or add the module to HOMES"


def _prefix(code: str) -> str:
    return next(p for p in sorted(LAYERS, key=len, reverse=True) if code[1:].startswith(p))


def test_exit_statuses_match_the_errors_that_carry_the_codes() -> None:
    wrong = {f"{c} in planner/{m}: raised with exit {sorted(e)}, registered {CODES[c].exit}"
             for m, s in modules().items() for c, e in s.exits.items()
             if c in CODES and e != {CODES[c].exit}}
    assert not wrong


def test_warnings_and_only_warnings_are_w_codes() -> None:
    for c in TABLE:
        assert (c.code[0] == "W") == (c.exit == 0), c.code
    given = {c for s in modules().values() for c in s.warnings}
    assert given and all(c.startswith("W") for c in given), given


def _gen_codes() -> ModuleType:
    """docs/gen_codes.py, the script that writes docs/codes.md (docs/ is no package)."""
    spec = importlib.util.spec_from_file_location("gen_codes", ROOT / "docs" / "gen_codes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_codes_page_is_generated_from_the_registry() -> None:
    gen_codes = _gen_codes()
    page = (ROOT / "docs" / "codes.md").read_text(encoding="utf-8")
    assert page == gen_codes.page(), f"run `{gen_codes.COMMAND}`, never edit the page by hand"
    assert all(f"| `{c.code}` |" in page for c in TABLE)
    assert "`E0xx` files and imports" in page and "`E99x` internal" in page


def test_the_generator_prints_the_page() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "docs" / "gen_codes.py")],
                          capture_output=True, text=True, check=True)
    assert done.stdout == _gen_codes().page()
