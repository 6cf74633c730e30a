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
import csv
import html
import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest

from planner.io.codegen import GeneratedCodeError, docstring_text, fill, literal
from planner.io.torch_pipeline import Cost, TorchPipeline, TorchStage
from planner.io.torch_pipeline_script import pipeline_script
from planner.spec.names import valid_name

from .helpers import invoke

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


#: what `import torch` finds while `_scripts` writes: nothing, as on a machine without the
#: torch extra (torch_values imports torch at its top, so it is hidden too)
_NO_TORCH = {name: None for name in ("torch", "planner.io.torch_values")}


def _scripts() -> list[tuple[str, str, TorchPipeline]]:
    """(file name, script, pipeline): every hostile name as the plan, a device, a split
    path, the model target, the spec's path and the script's own name, next to devices
    named after the placeholders that the plan's, the target's and the file's name fill.
    Written without torch (`_NO_TORCH`): before, the README's test command failed here
    where torch was not installed."""
    out = []
    with mock.patch.dict(sys.modules, _NO_TORCH):
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
        # the model file, a literal resolved beside the script (698e37e)
        model = next(n.value for n in tree.body if isinstance(n, ast.Assign)
                     and getattr(n.targets[0], "id", "") == "MODEL")
        assert isinstance(model, ast.Call) and ast.unparse(model.func) == "_beside_script"
        assert [ast.literal_eval(a) for a in model.args] == [f"{tp.plan}.py:model"]
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
                                      "device = str\nclass autograd:\n"
                                      "    Function = object\n")
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


# ---- through the commands: names a spec may hold ------------------------------------------

#: the hostile names a spec accepts (E261 keeps out control, bidi and line-separator
#: characters; E264 wants NFKC)
LEGAL = [n for n in HOSTILE if valid_name(n)]


def _q(name: str) -> str:
    return json.dumps(name)  # a spec's quoted name takes JSON's escapes


def _names_spec(big: str = "1 MB") -> str:
    """Every legal hostile name as an op, on two devices named after placeholders and
    quotes, and as a plan of its own."""
    ops = "\n".join(f"  op {_q(n)} {{ time {k + 1} ms  output {big} }}"
                    for k, n in enumerate(LEGAL))
    edges = "\n".join(f"  {_q(a)} -> {_q(b)}" for a, b in zip(LEGAL, LEGAL[1:], strict=False))
    d0, d1 = _q("__FROM__0"), _q("x'\"</script>{}%s,é 1")
    plans = "\n".join(f"plan {_q(n)} {{ graph g  cluster c }}" for n in LEGAL)
    return (f"cluster c {{\n  device {d0} {{ memory 1 GiB }}\n  device {d1} {{ memory 1 GiB }}\n"
            f"  link {d0} <-> {d1} {{ bandwidth 10 GB/s }}\n}}\n"
            f"graph g {{\n{ops}\n{edges}\n}}\n{plans}\n")


@pytest.fixture()
def named(tmp_path: Path) -> Path:
    (tmp_path / "n.plan").write_text(_names_spec(), encoding="utf-8")
    (tmp_path / "big.plan").write_text(_names_spec("3 GiB"), encoding="utf-8")  # E301 each
    (tmp_path / "pipe.plan").write_text(  # a pipeline plan: the pipeline report's names
        _names_spec().replace("cluster c }", "cluster c  objective pipeline  microbatches 4 }"),
        encoding="utf-8")
    return tmp_path


def test_the_fuzz_covers_what_it_claims() -> None:
    assert len(LEGAL) >= 20
    for kind in ("__FROM__", "'", '"', "\\", "{}", "%s", "</script>", ",", "漢"):
        assert any(kind in n for n in LEGAL), kind


def test_html_shows_every_name_as_text(named: Path) -> None:
    plan = LEGAL[4]  # x', __import__(...), '
    code, _, err = invoke(["solve", "n.plan", "--plan", plan, "--algo", "metf", "--html",
                           "p.html"], named)
    assert code == 0, err
    code, _, err = invoke(["compare", "n.plan", "--algos", "metf", "--html", "c.html"], named)
    assert code == 0, err
    code, _, err = invoke(["solve", "pipe.plan", "--plan", plan, "--html", "pipe.html"], named)
    assert code == 0, err
    assert 'data-chart="pipeline"' in (named / "pipe.html").read_text(encoding="utf-8")
    for page in ("p.html", "c.html", "pipe.html"):
        text = (named / page).read_text(encoding="utf-8")
        tags = _Tags()
        tags.feed(text)
        assert tags.starts.count("script") == 1, page  # planner's own
        assert not [a for a in tags.attrs if a.startswith("on")], page
        assert "<b>bold</b>" not in text and "alert(1)</script>" not in text, page
        shown = html.unescape(text)
        assert "</script><script>alert(1)</script>" in shown and plan in shown, page
        assert "<b>bold</b> & &amp;" in shown, page


class _Tags(HTMLParser):
    """The start tags and attribute names of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: list[str] = []
        self.attrs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append(tag)
        self.attrs.extend(name for name, _ in attrs)


def test_sarif_is_valid_json_with_every_name_intact(named: Path) -> None:
    code, out, err = invoke(["check", "big.plan", "--format", "sarif"], named)
    assert code == 1, err
    doc = json.loads(out)
    messages = " ".join(r["message"]["text"] for run in doc["runs"] for r in run["results"])
    missing = [n for n in LEGAL if f"`{n}`" not in messages]
    assert not missing, missing


def test_csv_rows_round_trip_every_plan_name(named: Path) -> None:
    code, _, err = invoke(["compare", "n.plan", "--algos", "metf", "--out", "rows.csv"],
                          named)
    assert code == 0, err
    with open(named / "rows.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    # a cell that a spreadsheet would run gets a `'` before it (README); the rest as given
    plans = {r["plan"][1:] if r["plan"][:1] == "'" and r["plan"][1:2] in "=+-@'" else
             r["plan"] for r in rows}
    assert plans == set(LEGAL)
    assert all(len(r) == len(rows[0]) and None not in r for r in rows)


# ---- through `export torch`: the spec, end to end (needs torch) --------------------

PLAN = "x', __import__('os').system('touch PWNED_by_spec'), '"
DEVICES = ["__FROM__0", "x'\"</script>{}%s,é 1"]


@pytest.mark.slow
def test_export_torch_writes_names_as_data_end_to_end(tmp_path: Path) -> None:
    """Before: the plan's name ran at the pipeline script's module level (`--help`)."""
    pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                        "'planner[torch]')")
    models = Path(__file__).resolve().parents[1] / "io" / "torch_pipeline_models.py"
    code, _, err = invoke(["import", "torch", f"{models}:mlp", "--capture", "fx", "--input",
                           "8x16", "--training", "-o", "mlp.plan"], tmp_path)
    assert code == 0, err
    graph = next(line.split()[1] for line in (tmp_path / "mlp.plan").read_text().splitlines()
                 if line.startswith("graph "))
    d0, d1 = map(_q, DEVICES)
    (tmp_path / "evil.plan").write_text(
        f'import "mlp.plan"\ncluster c {{\n'
        f"  device {d0} {{ kind gpu  memory 1 GiB  flops 10 TFLOPS }}\n"
        f"  device {d1} {{ kind gpu  memory 1 GiB  flops 10 TFLOPS }}\n"
        f"  link {d0} <-> {d1} {{ bandwidth 1 TB/s }}\n}}\n"
        f"plan {_q(PLAN)} {{ graph {graph}  cluster c  objective pipeline  microbatches 4 "
        " schedule gpipe }\n", encoding="utf-8")
    for args in (["check", "evil.plan"], ["solve", "evil.plan", "--out", "p.json"]):
        code, _, err = invoke(args, tmp_path)
        assert code == 0, err
    common = ["export", "torch", "evil.plan", f"{models}:mlp", "--input", "8x16",
              "--placement", "p.json"]
    code, _, err = invoke([*common, "-o", "placed.json", "--code", "forward.py"], tmp_path)
    assert code == 0, err
    doc = json.loads((tmp_path / "placed.json").read_text(encoding="utf-8"))
    assert doc["plan"] == PLAN and list(doc["devices"]) == DEVICES
    assert set(doc["placement"].values()) <= set(DEVICES)
    assert doc["device_map"] and set(doc["device_map"].values()) <= {0, 1}
    code, _, err = invoke([*common, "--pipeline", "-o", "pipe.json", "--code", "pipe.py"],
                          tmp_path)
    assert code == 0, err
    pipe = json.loads((tmp_path / "pipe.json").read_text(encoding="utf-8"))
    assert pipe["plan"] == PLAN
    done = subprocess.run([sys.executable, "-c", _RUN_ALL, "pipe.py", "forward.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert not list(tmp_path.glob("PWNED*")), "a name ran as code"
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "usage: pipe.py" in done.stdout
    values = _assigned(ast.parse((tmp_path / "pipe.py").read_text(encoding="utf-8")))
    assert [d for _, d, _ in values["STAGES"]] == DEVICES
