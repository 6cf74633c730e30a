"""House rules that no linter checks for us.

No function in `planner/` is longer than `MAX_LINES` lines unless a comment directly above
it (above its decorators, if any) says why, in a line that starts with `# long:`. A long
function is often several steps that want names of their own; when it is one piece for a
reason (an event loop that mirrors the compiled kernel step for step, a command whose
options typer needs in one signature), the reason is written where the next reader looks.

No function is more complex than ruff's `max-complexity` (pyproject.toml) as radon counts
it, unless a comment line above it starting with `# complex:` says why. Radon counts each
`and`/`or` as a branch, which ruff's mccabe does not, so ruff's gate let functions of
complexity 51 through; one number, counted the stricter way, is the gate of both.

An import inside a function says why it is not at the top of its module (start-up time,
an optional dependency, a cycle), in a comment on the line above its block of imports or
on one of the block's lines: `# lazy: start-up`. Unexplained, such imports read as
accidents and get hoisted by the next tidy-up (or copied by the next writer).
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "planner"
MAX_LINES = 80
MARKER = "# long:"
COMPLEX_MARKER = "# complex:"


def _span(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the `def` line to the function's last line, less its docstring."""
    assert fn.end_lineno is not None
    lines = fn.end_lineno - fn.lineno + 1
    first = fn.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
        and first.end_lineno is not None
    ):
        lines -= first.end_lineno - first.lineno + 1
    return lines


def _has_reason(fn: ast.FunctionDef | ast.AsyncFunctionDef, source: list[str],
                marker: str = MARKER) -> bool:
    """A `# long: <reason>` line (or `marker`'s) in the comment block directly above the
    function."""
    top = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
    index = top - 2  # the line above `top` (1-based) as a 0-based index
    while index >= 0 and source[index].lstrip().startswith("#"):
        text = source[index].strip()
        if text.startswith(marker) and text[len(marker) :].strip():
            return True
        index -= 1
    return False


def _functions(root: Path) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef,
                                             list[str]]]:
    """Every function under `root`: its file (relative to `root`'s parent), node, lines."""
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        source = text.splitlines()
        name = path.relative_to(root.parent).as_posix()
        for node in ast.walk(ast.parse(text, filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield name, node, source


def long_functions_without_reason(root: Path = PACKAGE) -> list[str]:
    return [f"{name}:{node.lineno} {node.name} ({_span(node)} lines)"
            for name, node, source in _functions(root)
            if _span(node) > MAX_LINES and not _has_reason(node, source)]


def test_no_long_function_without_a_reason() -> None:
    offenders = long_functions_without_reason()
    assert not offenders, (
        f"functions over {MAX_LINES} lines (docstring excluded) need a `{MARKER} <reason>` "
        "comment directly above the `def` or its decorators, or a split into named "
        "helpers:\n  " + "\n  ".join(offenders)
    )


def test_the_rule_sees_long_functions(tmp_path: Path) -> None:
    # `def` plus MAX_LINES - 1 lines is exactly MAX_LINES: allowed; one line more is not
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES - 1))
    (tmp_path / "a.py").write_text(
        f'def short():\n    """Doc."""\n{body}\n\n'
        f"def long():\n    y = 0\n{body}\n\n"
        f"# long: a reason\n@staticmethod\ndef excused():\n    y = 0\n{body}\n\n"
        f"# long:\ndef empty_reason():\n    y = 0\n{body}\n",
        encoding="utf-8",
    )
    found = long_functions_without_reason(tmp_path)
    assert [entry.split(" ")[1] for entry in found] == ["long", "empty_reason"]


def max_complexity() -> int:
    """Ruff's mccabe limit, the one number both gates use."""
    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    return int(config["tool"]["ruff"]["lint"]["mccabe"]["max-complexity"])


def complex_functions_without_reason(root: Path = PACKAGE) -> list[str]:
    """Functions (methods and closures too) over `max_complexity()` as radon counts them,
    without a `# complex: <reason>` line above them."""
    # lazy: radon is the test extra's; a bare install skips this rule
    complexity = pytest.importorskip("radon.complexity", reason="radon (test extra) absent")
    limit = max_complexity()
    found = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        source = text.splitlines()
        nodes = {n.lineno: n for n in ast.walk(ast.parse(text))
                 if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        # functions and methods (classes' are listed at the top level too), then closures
        blocks = [b for b in complexity.cc_visit(text) if hasattr(b, "closures")]
        while blocks:
            block = blocks.pop()
            blocks += block.closures
            if block.complexity > limit and not _has_reason(nodes[block.lineno], source,
                                                            COMPLEX_MARKER):
                found.append(f"{path.relative_to(root.parent).as_posix()}:{block.lineno} "
                             f"{block.name} (complexity {block.complexity})")
    return sorted(found)


def test_no_complex_function_without_a_reason() -> None:
    offenders = complex_functions_without_reason()
    assert not offenders, (
        f"functions over complexity {max_complexity()} (radon's count: each branch, loop, "
        f"`and`/`or`) need a `{COMPLEX_MARKER} <reason>` comment directly above the `def` "
        "or its decorators, or a split into named steps:\n  " + "\n  ".join(offenders)
    )


def test_the_rule_sees_complex_functions(tmp_path: Path) -> None:
    limit = max_complexity()
    at_limit = "".join(f"    if x == {k}:\n        return {k}\n" for k in range(limit - 1))
    ors = " or ".join(f"x == {k}" for k in range(limit + 1))  # no branch: the `or`s count
    (tmp_path / "a.py").write_text(
        f"def simple(x):\n{at_limit}    return 0\n\n"
        f"def branchy(x):\n{at_limit}    if x:\n        return 1\n    return 0\n\n"
        f"def boolean(x):\n    return {ors}\n\n"
        f"class C:\n    # complex: a reason\n    def excused(self, x):\n        return {ors}\n\n"
        f"    def method(self, x):\n        return {ors}\n",
        encoding="utf-8",
    )
    found = complex_functions_without_reason(tmp_path)
    assert sorted(entry.split(" ")[1] for entry in found) == ["boolean", "branchy", "method"]


def _import_blocks(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[list[ast.stmt]]:
    """The runs of consecutive import statements in `fn`'s bodies (nested ones included,
    not nested functions': those are visited on their own)."""
    blocks: list[list[ast.stmt]] = []
    stack: list[ast.AST] = [fn]
    while stack:
        node = stack.pop()
        for field in ("body", "orelse", "finalbody", "handlers"):
            stmts = getattr(node, field, None)
            if not isinstance(stmts, list):
                continue
            run: list[ast.stmt] = []
            for stmt in stmts:
                if isinstance(stmt, ast.Import | ast.ImportFrom):
                    run.append(stmt)
                    continue
                if run:
                    blocks.append(run)
                    run = []
                if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    stack.append(stmt)
            if run:
                blocks.append(run)
    return blocks


def _explained(block: list[ast.stmt], source: list[str]) -> bool:
    first, last = block[0].lineno, block[-1].end_lineno or block[-1].lineno
    above = source[first - 2].strip() if first >= 2 else ""
    return above.startswith("#") or any("#" in source[k - 1] for k in range(first, last + 1))


def function_imports_without_reason(root: Path = PACKAGE) -> list[str]:
    return [f"{name}:{block[0].lineno} in {node.name}"
            for name, node, source in _functions(root)
            for block in _import_blocks(node) if not _explained(block, source)]


def test_no_import_inside_a_function_without_a_reason() -> None:
    offenders = function_imports_without_reason()
    assert not offenders, (
        "imports inside functions need a comment saying why they are not at the top "
        "(`# lazy: start-up`, `# lazy: optional, the torch extra`), or hoisting:\n  "
        + "\n  ".join(offenders)
    )


def test_the_rule_sees_unexplained_imports(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "import os\n\n"
        "def bare():\n    import json\n    import re\n    return json, re\n\n"
        "def above():\n    # lazy: start-up\n    import json\n    import re\n    return json\n\n"
        "def trailing():\n    import json  # lazy: start-up\n    return json\n\n"
        "def nested(x):\n    if x:\n        x = 1\n        import json\n    return x\n\n"
        "def second_block():\n    # lazy: start-up\n    import json\n    x = 1\n"
        "    import re\n    return json, re, x\n",
        encoding="utf-8",
    )
    found = function_imports_without_reason(tmp_path)
    assert [entry.split(" in ")[1] for entry in found] == ["bare", "nested", "second_block"]


def _top_level_names(tree: ast.Module) -> tuple[set[str], list[str] | None]:
    """The names a module binds at its top level, and its `__all__` (None without one)."""
    bound: set[str] = set()
    exported = None
    statements = list(tree.body)
    while statements:  # the module's statements, and those of its top-level `if`s and `try`s
        node = statements.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.If | ast.Try):
            statements += [*node.body, *node.orelse, *getattr(node, "finalbody", [])]
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            exported = list(ast.literal_eval(node.value))
    return bound, exported


def test_every_list_scheduling_module_says_what_it_offers() -> None:
    # the engine's parts import each other's names: `__all__` says which are meant to be
    # (read from the source: importing the compiled engine's module would load numba)
    for path in sorted((PACKAGE / "algorithms" / "listsched").glob("*.py")):
        if path.stem == "__main__":
            continue
        bound, exported = _top_level_names(ast.parse(path.read_text(encoding="utf-8")))
        assert exported is not None, f"{path.name} has no __all__"
        assert [n for n in exported if n not in bound] == [], path.name


#: each module that has a compiled twin, or is one, and the modules its docstring must name
#: in its `Twin:` paragraph (a change to a mirrored rule goes into both)
TWINS = {
    "simulate/__init__.py": ["planner.fastsim._kernel"],
    "simulate/run.py": ["planner.fastsim._kernel"],
    "simulate/memory.py": ["planner.fastsim._kernel"],
    "fastsim/_kernel.py": ["planner.simulate"],
    "algorithms/listsched/etf.py": ["planner.algorithms.listsched._engine_kernel"],
    "algorithms/listsched/floating.py": ["planner.algorithms.listsched._engine_kernel"],
    "algorithms/listsched/sct.py": ["planner.algorithms.listsched._engine_kernel"],
    "algorithms/listsched/placer.py": ["planner.algorithms.listsched._engine_kernel"],
    "algorithms/listsched/run.py": ["planner.algorithms.listsched._engine_kernel"],
    "cost.py": ["planner.algorithms.listsched._engine_kernel", "planner.fastsim._kernel"],
    "algorithms/listsched/_engine_kernel.py": [
        "planner.algorithms.listsched.etf", "`floating`", "`sct`", "`placer`", "`run`",
        "StaticMemoryTracker"],
    "bounds/__init__.py": ["planner.bounds._kernel"],
    "bounds/_kernel.py": ["planner.bounds"],
}


def test_every_mirrored_module_names_its_twin() -> None:
    for name, twins in TWINS.items():
        doc = ast.get_docstring(ast.parse((PACKAGE / name).read_text(encoding="utf-8"))) or ""
        twin = doc[doc.find("Twin: "):] if "Twin: " in doc else ""
        assert twin, f"{name}: no `Twin:` paragraph in its docstring"
        paragraph = " ".join(twin.split("\n\n")[0].split())
        assert [t for t in twins if t not in paragraph] == [], name
