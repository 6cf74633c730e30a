"""Read a saved `torch.export` program (`model.pt2`) without running code the file holds.

`torch.export.load` and `module()` would run a file's code five ways; `load_program`
closes each:

- **pickles.** The weights, constants and example inputs are `torch.save` pickles, and
  torch falls back to `weights_only=False` (a full unpickler: any callable) when the
  weights-only one refuses. Here every `torch.load` is weights-only
  (`TORCH_FORCE_WEIGHTS_ONLY_LOAD`: tensors, containers and plain values, nothing that
  imports), and an audit hook refuses every `pickle.find_class` (the plain `pickle.loads`
  torch uses for a constant that is a Python object) and every process start
  (`os.system`, `subprocess.Popen`, `os.exec*`, `os.posix_spawn`, ...) for the load's
  length. A pickle that would import is E939, naming what it would import.
- **symbolic shapes.** torch reads each `expr_str` of the program's JSON with
  `sympy.sympify`, which evaluates it as Python. Before torch reads the file, every one
  must be a sympy expression as torch writes them: calls of sympy's and torch's symbolic
  functions (`Symbol`, `Integer`, `FloorDiv`, `Max`, ...), numbers, names of symbols in
  quotes, `True`/`False`, arithmetic; no attribute, no other name. Else E939.
- **guards.** `ExportedProgram.module()` compiles and runs the program's `guards_code`
  (checks of the inputs, Python text). It is dropped: planner runs the program only on
  the inputs saved with it or its own.
- **attribute paths.** `module()` writes the paths of parameters, buffers, constants and
  submodules into Python source (`getattr(self.l, "NAME")`, the quote not escaped), which
  runs when the module does. Every one must be identifiers and indices (`layers.0.weight`);
  else E939.
- **calls.** A node may name any attribute of `torch`, `operator` or `math` as its target
  (`torch.serialization.os.system`), and torch checks targets only under the verifiers the
  file lists (maybe none). Every call must be a torch operator (`aten`, higher-order, custom
  ops registered in this process), a builtin of `operator` or `math`, or one of torch's
  symbolic functions (`torch.sym_max`...); else E939 names it. The graph does not run here.

Problems are E939 located at the file's start (a binary file: never quoted). torch's own
log records and warnings during the load are not printed: the diagnostic says what went
wrong (the first exception torch logged, when it then raised a message that points at
its log).
"""

from __future__ import annotations

import inspect
import io
import json
import math
import operator
import os
import re
import sys
import tokenize
import warnings
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import Diagnostic, Span, SpecError
from .torch_logs import Logged, kept

__all__ = ["load_program"]

#: audit events refused while a program loads: a pickle importing, a process starting
_REFUSED_EVENTS = ("pickle.find_class", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                   "os.fork", "os.forkpty", "os.startfile", "subprocess.Popen", "pty.spawn",
                   "ctypes.dlopen")
#: members of the archive read as JSON for `expr_str` (the program and its configs)
_JSON_LIMIT = 256 << 20
#: sympy's and torch's names that torch's serializer writes in an `expr_str`
_SYMPY_NAMES = frozenset({
    "Symbol", "Dummy", "Integer", "Rational", "Float", "Add", "Mul", "Pow", "Mod", "Abs",
    "Max", "Min", "Eq", "Ne", "Lt", "Le", "Gt", "Ge", "StrictLessThan", "StrictGreaterThan",
    "LessThan", "GreaterThan", "Equality", "Unequality", "And", "Or", "Not", "Xor",
    "Piecewise", "ExprCondPair", "floor", "ceiling", "sqrt", "oo", "zoo", "nan", "pi", "E",
    "Infinity", "NegativeInfinity", "true", "false", "BooleanTrue", "BooleanFalse", "Half",
    "One", "Zero", "NegativeOne", "IntInfinity", "NegativeIntInfinity", "int_oo",
    "CeilDiv", "CeilToInt", "CleanDiv", "FloatPow", "FloatTrueDiv", "FloorDiv", "FloorToInt",
    "Identity", "IntTrueDiv", "IsNonOverlappingAndDenseIndicator", "LShift", "RShift",
    "ModularIndexing", "PowByNatural", "PythonMod", "RoundDecimal", "RoundToInt", "ToFloat",
    "TruncToFloat", "TruncToInt", "Where", "True", "False", "None",
    # keyword arguments of Symbol and of the numbers
    "positive", "negative", "nonnegative", "nonpositive", "integer", "real", "finite",
    "infinite", "zero", "nonzero", "even", "odd", "prime", "commutative", "precision",
    "evaluate",
})
_GENERATED_SYMPY_NAME = re.compile(r"(?:OpaqueUnaryFn|BitwiseFn)_[a-z0-9_]+")
#: one part of an attribute path: an identifier or an index (`layers.0.weight`)
_PATH_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_SYMBOL_STRING = re.compile(r"""(['"])[A-Za-z][A-Za-z0-9_]*\1""")
_OPERATORS = frozenset({"(", ")", ",", "+", "-", "*", "/", "//", "%", "**", "=", "<", ">",
                        "<=", ">=", "==", "!=", "&", "|", "~", "^"})
#: `operator` builtins a graph may call (what torch's verifier allows, `operator.call` not)
_OPERATOR_CALLS = frozenset({
    "getitem", "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "pos", "abs",
    "eq", "ne", "lt", "le", "gt", "ge", "and_", "or_", "xor", "not_", "invert", "lshift",
    "rshift", "matmul", "truth", "index"})
#: torch's functions a graph may call (torch's verifier's list): `module.attribute` paths
_TORCH_CALLS = ("sym_int", "sym_float", "sym_ite", "sym_max", "sym_min", "sym_not", "sym_sqrt",
                "sym_sum", "_assert", "_check", "_check_is_size", "_C._set_grad_enabled",
                "autograd.grad_mode.set_grad_enabled", "amp.autocast_mode._enter_autocast",
                "amp.autocast_mode._exit_autocast")


class _Refused(BaseException):
    """An audited action the load may not take (a BaseException: torch's `except
    Exception` fallbacks must not swallow it)."""


_active = False
_refused: list[str] = []
_hooked = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _active or not event.startswith(_REFUSED_EVENTS):
        return
    what = (f"import `{args[0]}.{args[1]}` from a pickle" if event == "pickle.find_class"
            else f"start a process ({event})")
    _refused.append(what)
    raise _Refused(what)


@contextmanager
def _guarded(logged: Logged) -> Iterator[None]:
    """While torch loads: weights-only pickles, the audit hook armed, torch's log records
    kept by `logged` instead of printed, warnings silenced."""
    global _active, _hooked  # noqa: PLW0603 - one audit hook per process, armed per load
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True
    saved = {k: os.environ.get(k) for k in ("TORCH_FORCE_WEIGHTS_ONLY_LOAD",
                                            "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")}
    os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = "1"
    os.environ.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)
    _refused.clear()
    _active = True
    try:
        with kept(logged), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        _active = False
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _error(path: str, message: str, *hints: str) -> SpecError:
    return SpecError(Diagnostic("E939", message, Span.start_of(path), hints))


_RESAVE = "save the program with torch.export.save(torch.export.export(model, args), PATH)"
_NO_CODE = ("save the program again with tensors as its example inputs, or give planner the "
            "model's Python file (FILE.py:NAME), which it runs as Python")


def load_program(path: str, torch: Any) -> Any:
    """The `ExportedProgram` saved at `path`, read as the module docstring says (E939 when
    it cannot be, or would run code)."""
    _check_archive(path)
    logged = Logged()
    try:
        with _guarded(logged):
            program = torch.export.load(path)
    except _Refused as err:
        raise _error(path, f"{path} would {err} while it loads; planner runs no code from "
                     "a saved program", _NO_CODE) from None
    except Exception as err:  # noqa: BLE001 - a file that is no saved program
        reason = _torch_reason(logged.errors[0] if logged.errors else err)
        raise _error(path, f"cannot load {path} as a torch.export program: {reason}",
                     _NO_CODE if "would import" in reason else _RESAVE) from None
    if _refused:  # refused inside torch, which caught it and went on
        raise _error(path, f"{path} would {_refused[0]} while it loads; planner runs no "
                     "code from a saved program", _NO_CODE)
    program._guards_code = []  # Python text that `module()` would compile and run
    _check_names(program, path)
    _check_calls(program, path, torch)
    return program


def _torch_reason(err: BaseException) -> str:
    """torch's complaint, one line: a weights-only refusal names the global it refused."""
    text = str(err)
    found = re.search(r"(?:Unsupported global: )?GLOBAL ([\w.]+)", text)
    if found:
        return (f"a pickle in it would import `{found.group(1)}` (planner reads pickles "
                "weights-only: tensors and plain values)")
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return f"{type(err).__name__}: {first[:200]}"


def _check_archive(path: str) -> None:
    """E939 unless `path` is a zip archive whose symbolic expressions are plain sympy."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError):
        raise _not_an_archive(path) from None
    with archive:
        for info in archive.infolist():
            if not info.filename.endswith(".json") or info.file_size > _JSON_LIMIT:
                continue
            try:
                doc = json.loads(archive.read(info))
            except (ValueError, zipfile.BadZipFile, OSError, RecursionError):
                continue  # torch reports what it cannot read
            for text in _expressions(doc):
                why = _unsafe_expression(text)
                if why:
                    shown = text if len(text) <= 60 else text[:60] + "…"
                    raise _error(path, f"{path}: the symbolic shape {shown!r} in "
                                 f"{info.filename} is {why}; torch would evaluate it as "
                                 "Python", _NO_CODE)


#: how a Git LFS pointer file starts (its specification: the first line names it)
_LFS_POINTER = b"version https://git-lfs.github.com/spec/"


def _not_an_archive(path: str) -> SpecError:
    """E939 for a file that is no zip archive, in words (not zipfile's exception's name),
    saying what it is where that helps: empty, or a Git LFS pointer (a clone without
    `git lfs pull`), which is text that the diagnostic does not quote (`.pt2`: binary)."""
    try:
        with open(path, "rb") as f:
            head: bytes | None = f.read(len(_LFS_POINTER))
    except OSError:  # it was readable a moment ago: say only what it is not
        head = None
    if head == b"":
        return _error(path, f"{path} is no torch.export program: the file is empty", _RESAVE)
    if head == _LFS_POINTER:
        return _error(path, f"{path} is a Git LFS pointer, not the program it stands for",
                      "fetch the file itself: `git lfs pull` (with Git LFS installed)")
    return _error(path, f"{path} is no torch.export program: not a zip archive, as "
                  "torch.export.save writes", _RESAVE)


def _expressions(doc: Any) -> Iterator[str]:
    """Every `expr_str` of a JSON document (what torch hands to `sympy.sympify`)."""
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "expr_str" and isinstance(value, str):
                    yield value
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)


def _unsafe_expression(text: str) -> str:
    """Why `text` is not a plain sympy expression ("" when it is)."""
    if len(text) > 100_000:
        return "too long"
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return "not an expression"
    for tok in tokens:
        kind, value = tok.type, tok.string
        if kind in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER):
            continue
        if kind == tokenize.NUMBER:
            continue
        if kind == tokenize.NAME:
            if value not in _SYMPY_NAMES and not _GENERATED_SYMPY_NAME.fullmatch(value):
                return f"naming `{value}`, no sympy function"
            continue
        if kind == tokenize.STRING:
            if not _SYMBOL_STRING.fullmatch(value):
                return "holding a string that is no symbol's name"
            continue
        if kind == tokenize.OP and value in _OPERATORS:
            continue
        return f"holding `{value}`"
    return ""


def _check_names(program: Any, path: str) -> None:
    """E939 for an attribute path (a parameter's, a buffer's, a constant's, a module's)
    that is not dotted identifiers and indices: torch.fx writes such paths into the
    module's Python source (`getattr(self.l, "NAME")`, the quote not escaped)."""
    sig = program.graph_signature
    names = [*program.state_dict, *program.constants,
             *(s.target for s in (*sig.input_specs, *sig.output_specs)),
             *(entry.fqn for entry in program.module_call_graph)]
    for module in program.graph_module.modules():
        graph = getattr(module, "graph", None)
        names.extend(n.target for n in getattr(graph, "nodes", ())
                     if n.op in ("get_attr", "call_module"))
    for name in names:
        if isinstance(name, str) and name and not all(
                _PATH_PART.fullmatch(part) for part in name.split(".")):
            shown = name if len(name) <= 60 else name[:60] + "…"
            raise _error(path, f"{path} names the attribute {shown!r}, which is no path of "
                         "identifiers; torch would write it into the module's Python source",
                         _NO_CODE)


def _check_calls(program: Any, path: str, torch: Any) -> None:
    """E939 for a node calling anything but an operator (see the module docstring)."""
    base = (torch._ops.OperatorBase, torch._ops.OpOverloadPacket)
    for module in program.graph_module.modules():
        graph = getattr(module, "graph", None)
        for node in getattr(graph, "nodes", ()):
            if node.op == "call_function" and not _allowed_call(node.target, base, torch):
                name = getattr(node.target, "__qualname__", None) or repr(node.target)[:80]
                owner = getattr(node.target, "__module__", None)
                shown = f"{owner}.{name}" if isinstance(owner, str) else name
                raise _error(path, f"{path}: node `{node.name}` calls `{shown}`, which is no "
                             "torch operator; planner runs no code from a saved program",
                             _NO_CODE)


def _allowed_call(target: Any, base: tuple[type, ...], torch: Any) -> bool:
    if isinstance(target, base):
        return True
    name = getattr(target, "__name__", None)
    if inspect.isbuiltin(target) and isinstance(name, str):
        if target is getattr(operator, name, None):
            return name in _OPERATOR_CALLS
        if target is getattr(math, name, None):
            return True
    return any(target is _attribute(torch, path) for path in _TORCH_CALLS)


def _attribute(root: Any, path: str) -> Any:
    """`root.a.b` for `path` "a.b", or None where torch lacks it."""
    for part in path.split("."):
        root = getattr(root, part, None)
    return root
