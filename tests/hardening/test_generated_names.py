"""Names cannot rewrite what planner generates (issue 40, finding 1).

An adversarial set of names (quotes of both kinds, backslashes, newlines, the templates'
own placeholders such as `__FROM__`, `{}` and `%s`, `</script>`, `"` and `,`, unicode)
goes through every file planner generates: the pipeline script of `export torch
--pipeline --code` and the torch script of `export torch --code` (they compile, their
literals read back as the names, and run with `--help` or imported they run no injected
code: the marker file is never created), the JSON of `export torch` and its accelerate
device_map (round trip), the HTML reports (no markup from a name), SARIF (valid JSON, the
names intact) and CSV (round trip through the csv module).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from planner.io.codegen import GeneratedCodeError, docstring_text, fill, literal
from planner.io.torch_pipeline import (
    Cost,
    TorchPipeline,
    TorchStage,
    pipeline_script,
)

#: the file a successful injection would create (in the folder the script runs in)
MARKER = "PWNED_by_name"
_RUN = f"__import__('os').system('touch {MARKER}')"

#: names an attacker would try: every one a Python, template, HTML or CSV metacharacter
HOSTILE = [
    "__FROM__0", "__STAGES__", "__TARGET__", "__NOTE__",
    f"x', {_RUN}, '",
    f'x", {_RUN}, "',
    f"x''', {_RUN}, '''",
    f'x""", {_RUN}, """',
    f'"""\n{_RUN}\n"""',
    f"a\n{_RUN}\n#",
    "back\\slash\\", "\\'", '\\"', "\\N{BULLET}", "\\x41",
    "{}", "{0}", "{__import__}", "%s", "%(prog)s", "%d%%", "%(prog)s %d",
    "</script><script>alert(1)</script>", "<b>bold</b> & &amp;",
    '"a,b"', "a,b", '=HYPERLINK("http://x")', "+1,=2",
    "é ü 漢字 😀", "\u202eevil", "\u2028line\u2029sep",
]


# ---- the one-pass filler -------------------------------------------------------------------


def test_fill_is_one_pass_and_checks_its_placeholders() -> None:
    template = "A = __ONE__\nB = __TWO__\n"
    text = fill(template, {"__ONE__": literal("__TWO__"), "__TWO__": literal("__ONE__")})
    assert text == "A = '__TWO__'\nB = '__ONE__'\n"
    with pytest.raises(GeneratedCodeError, match="missing"):
        fill(template, {"__ONE__": "1"})
    with pytest.raises(GeneratedCodeError, match="unused"):
        fill(template, {"__ONE__": "1", "__TWO__": "2", "__THREE__": "3"})
    with pytest.raises(GeneratedCodeError, match="does not compile"):
        fill(template, {"__ONE__": "'", "__TWO__": "2"})


@pytest.mark.parametrize("name", HOSTILE)
def test_literals_and_docstrings_hold_any_name(name: str) -> None:
    code = f'"""{docstring_text(name)}"""\nX = {literal(name)}\nY = {literal([name, (1, name)])}\n'
    tree = ast.parse(code)
    assert ast.get_docstring(tree, clean=False) == name
    namespace: dict[str, Any] = {}
    exec(compile(tree, "<t>", "exec"), namespace)  # noqa: S102 - the test's own text
    assert namespace["X"] == name and namespace["Y"] == [name, (1, name)]


def test_literal_refuses_what_does_not_read_back() -> None:
    with pytest.raises(GeneratedCodeError):
        literal(float("nan"))
    with pytest.raises(GeneratedCodeError):
        literal(object())


# ---- the pipeline script (no torch needed to write it) -------------------------------------


def _pipeline(plan: str, devices: list[str], paths: list[str]) -> TorchPipeline:
    cost = Cost(1e-6, 4e-6, "gpipe", "", True)
    stages = tuple(TorchStage(k, k, d, "cpu", None if k == 0 else paths[k - 1], (f"op{k}",))
                   for k, d in enumerate(devices))
    return TorchPipeline(plan, "gpipe", 4, True, stages, dict.fromkeys(devices, "cpu"),
                         {f"op{k}": d for k, d in enumerate(devices)}, cost, True, "", (),
                         cost, tuple((d, f"op{k}") for k, d in enumerate(devices)))


_NO_GRAPH = SimpleNamespace(gm=SimpleNamespace(graph=SimpleNamespace(nodes=[])), shapes={},
                            method="fx", model=None)


def _scripts() -> list[tuple[str, str, TorchPipeline]]:
    """(file name, script, pipeline): every hostile name as the plan, a device, a split
    path, the model target, the spec's path and the script's own name, next to devices
    named after the placeholders that the plan's, the target's and the file's name fill."""
    out = []
    for k, name in enumerate(HOSTILE):
        other = HOSTILE[(k + 1) % len(HOSTILE)]
        tp = _pipeline(name, [f"__FROM__{k}", f"__ABOUT__{k}", f"__NAME__{k}", name],
                       [other, "__NOTE__", name])
        text = pipeline_script(tp, _NO_GRAPH, f"{name}.py:model",  # type: ignore[arg-type]
                               [f"{name}x8"], None, spec=other, name=f"{name}.py")
        out.append((f"pipe{k}.py", text, tp))
    return out


def _assigned(tree: ast.Module) -> dict[str, Any]:
    """The module-level `NAME = literal` assignments of a script, evaluated as literals."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                out[node.targets[0].id] = ast.unparse(node.value)
    return out


def test_pipeline_script_keeps_every_name_a_literal() -> None:
    for file, text, tp in _scripts():
        tree = ast.parse(text, file)
        values = _assigned(tree)
        assert values["STAGES"] == [(s.rank, s.device, s.torch_device) for s in tp.stages]
        assert values["MODEL"] == f"{tp.plan}.py:model"
        assert values["INPUTS"] == [f"{tp.plan}x8"]
        split = next(n.value for n in tree.body if isinstance(n, ast.Assign)
                     and getattr(n.targets[0], "id", "") == "SPLIT_SPEC")
        assert isinstance(split, ast.Dict)
        assert [ast.literal_eval(k) for k in split.keys if k is not None] == list(tp.split_spec)
        doc = ast.get_docstring(tree, clean=False) or ""
        assert f"plan `{tp.plan}`" in doc and f"`{tp.plan}.py:model`" in doc
        # the script's statements are the template's: names added none
        calls = [n for n in tree.body if isinstance(n, ast.Expr)]
        assert calls == [tree.body[0]], ast.unparse(calls[-1])


def test_pipeline_scripts_run_no_name_as_code(tmp_path: Path) -> None:
    """Each script, imported (its module level run) with torch's pipelining stubbed, creates
    no marker file: the same check as `python pipe.py --help`, without torch."""
    paths = []
    for file, text, _ in _scripts():
        (tmp_path / file).write_text(text, encoding="utf-8")
        paths.append(file)
    stub = tmp_path / "stubs" / "torch"
    (stub / "distributed" / "pipelining").mkdir(parents=True)
    (stub / "__init__.py").write_text("class nn:\n    Module = object\nTensor = object\n"
                                      "device = str\n")
    (stub / "distributed" / "__init__.py").write_text("")
    (stub / "distributed" / "pipelining" / "__init__.py").write_text(
        "ScheduleGPipe = Schedule1F1B = ScheduleInterleaved1F1B = object\n"
        "class SplitPoint:\n    BEGINNING = 'BEGINNING'\n"
        "def pipeline(*a, **k):\n    raise AssertionError\n")
    done = subprocess.run([sys.executable, "-c", _RUN_ALL, *paths], cwd=tmp_path,
                          env={"PYTHONPATH": str(stub.parent), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)
    assert not list(tmp_path.glob(f"{MARKER}*")), "a name ran as code"
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert done.stdout.count("usage:") == len(paths)


#: runs each script given with `--help`, every one even when one fails; exit 1 if any did
_RUN_ALL = """
import runpy, sys, traceback
failed = 0
for path in sys.argv[1:]:
    sys.argv = [path, '--help']
    try:
        runpy.run_path(path, run_name='__main__')
    except SystemExit as e:
        failed += e.code != 0
    except BaseException:
        failed += 1
        print(path, traceback.format_exc(limit=0))
sys.exit(1 if failed else 0)
"""
