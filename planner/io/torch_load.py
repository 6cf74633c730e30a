"""Load a PyTorch model and its example inputs for `import torch` and `export torch`.

`TARGET` is `package.module:NAME` or `path/to/file.py:NAME` (NAME defaults to `model`): an
`nn.Module`, or a callable without arguments that returns one. Loading a Python file or
module runs it, as `python` would, and `--example` is evaluated as Python: give planner
only models and expressions you would run yourself. `TARGET` may also be a saved
`torch.export` program (`model.pt2`, `torch.export.save`), which is loaded without running
code it holds (`planner.io.torch_program`: pickles read weights-only, symbolic shapes
checked before sympy reads them, guards dropped, calls only of operators).

Example inputs are `--input SHAPE[:DTYPE]` (`8x16`, `4x3x32x32:float16`, `2x10:int64`;
floats are `torch.randn` under seed 0, integers zeros), in forward()'s order, or `--example
EXPR`, a Python expression evaluated with `torch` and the target's module in scope, giving a
tensor, a tuple or list of positional inputs, or a dict of keyword inputs (`dict(input_ids=
torch.zeros(1, 64, dtype=torch.long), attention_mask=torch.ones(1, 64, dtype=torch.long))`).
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import inspect
import os
import sys
import traceback
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import Diagnostic, Span, SpecError, UsageError, did_you_mean
from ..spec.load import require_file
from ..units import format_bytes
from .torch_program import load_program


@dataclass
class Example:
    """Example inputs: positional and keyword."""

    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


def require_torch() -> ModuleType:
    """The `torch` module, or a usage error (E938) naming the extra that installs it."""
    try:
        # lazy: optional (the `torch` extra)
        import torch
    except ImportError:
        raise UsageError(Diagnostic(
            "E938", "PyTorch is not installed", None,
            ("install PyTorch's CPU build, then the extra: pip install torch --index-url "
             "https://download.pytorch.org/whl/cpu && pip install 'planner[torch]' (for a "
             "CUDA build, see https://pytorch.org/get-started/locally/)",))) from None
    module: ModuleType = torch  # (Any to mypy where torch is not installed)
    return module


# ---- loading ------------------------------------------------------------------------------


#: what TARGET may be, where it is something else
TARGET_HINT = "TARGET is `package.module:NAME` or `file.py:NAME`"
#: what to give for a folder (E002)
FOLDER_HINT = ("give the model's Python file in it, `FOLDER/FILE.py:NAME`; a folder is a "
               "package, `package.module:NAME`, only with an `__init__.py`")


def _split_target(target: str) -> tuple[str, str]:
    """`TARGET` as the module or file it names and the attribute (default `model`)."""
    where_text, sep, attr = target.rpartition(":")
    if not sep or not attr.isidentifier():
        return target, "model"
    return where_text, attr


def target_file(target: str) -> Path | None:
    """The file that `TARGET` names (`FILE.py[:NAME]`, `FILE.pt2`); None for a module."""
    if target.endswith(".pt2"):
        return Path(target)
    where_text = _split_target(target)[0]
    return Path(where_text) if where_text.endswith(".py") else None


def load_target(target: str) -> tuple[Any, dict[str, Any]]:
    """The `nn.Module` that `TARGET` names, and the namespace of the module defining it."""
    torch = require_torch()
    where_text, attr = _split_target(target)
    file = Path(where_text)
    span = Span.start_of(where_text) if where_text.endswith(".py") else None

    attr_ran: str | None = None  # the factory called, once the file is loaded

    def bad(message: str, *hints: str, raised: BaseException | None = None) -> SpecError:
        where = raised_at(raised, file, where_text) if raised is not None else None
        if where is not None:  # the user's line, not how TARGET is written, is at fault
            hints = (f"raised at this line of {where_text}, or in a library it calls"
                     + (f": `python {where_text}` shows the whole traceback" if attr_ran is None
                        else f", when planner called `{attr_ran}()`"),)
        return SpecError(Diagnostic("E939", message, where or span, hints))

    if target.endswith(".pt2"):
        return _load_program(target), {}
    try:
        module = _module_of(where_text, file)
    except SpecError:
        raise
    except SystemExit as err:  # `sys.exit()` in the model's file: not planner's exit
        raise bad(f"{where_text} exited ({_status(err)}) while it was loaded",
                  "a model file must define the model, not run a program: guard its script "
                  "part with `if __name__ == \"__main__\":`") from None
    except Exception as err:  # noqa: BLE001 - user code may raise anything
        raise bad(f"cannot import {where_text}: {_explained(err)}", TARGET_HINT,
                  raised=err) from None
    namespace = vars(module)
    if attr not in namespace:
        models = _model_names(namespace, torch.nn.Module)
        raise bad(f"{where_text} defines no `{attr}`",
                  *did_you_mean(attr, list(models) or
                                [k for k in namespace if not k.startswith("_")]),
                  *_models_hint(models, where_text))
    found = namespace[attr]
    if not isinstance(found, torch.nn.Module) and callable(found):
        attr_ran = attr
        try:
            found = found()
        except SystemExit as err:
            raise bad(f"`{attr}()` exited ({_status(err)})") from None
        except Exception as err:  # noqa: BLE001
            raise bad(f"`{attr}()` raised {_explained(err)}", raised=err) from None
    if not isinstance(found, torch.nn.Module):
        raise bad(f"`{attr}` is a {type(found).__name__}, not a torch.nn.Module (or a "
                  "function returning one)")
    return found, namespace


#: the most names `_models_hint` lists
MODELS_LISTED = 8


def _model_names(namespace: dict[str, Any], module_type: type) -> dict[str, str]:
    """The public names of `namespace` (a model file's) that TARGET's NAME may give, each
    with what it is: an `nn.Module` (`module_type`), or, defined in that file (not
    imported), an `nn.Module` class or a function callable without arguments (a factory:
    what it returns is known only once called)."""
    own = namespace.get("__name__")
    found: dict[str, str] = {}
    for name, value in namespace.items():
        if name.startswith("_"):
            continue
        if isinstance(value, module_type):
            found[name] = "an nn.Module"
        elif getattr(value, "__module__", None) != own or not callable(value):
            continue
        elif isinstance(value, type):
            if issubclass(value, module_type):
                found[name] = "an nn.Module class"
        elif _no_arguments(value):
            found[name] = "a function of no arguments"
    return found


def _no_arguments(function: Any) -> bool:
    """Whether `function` can be called without arguments (planner calls it so)."""
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in params)


def _models_hint(models: dict[str, str], where_text: str) -> tuple[str, ...]:
    """E939's hint where TARGET's NAME is not defined: what NAME may be, from `models`
    (`_model_names`), or that the file defines none of them."""
    if not models:
        return (f"NAME must name an nn.Module of {where_text}, or a function there that "
                "returns one",)
    listed = [f"`{name}` ({what})" for name, what in list(models.items())[:MODELS_LISTED]]
    more = len(models) - len(listed)
    return (f"it defines {', '.join(listed)}" + (f" and {more} more" if more else "")
            + f": give one as `{where_text}:NAME`",)


def _module_of(where_text: str, file: Path) -> ModuleType:
    """The module that TARGET's `where_text` names: Python `file` run as a module, or a
    module imported by name. A path that is no Python file (a name with a slash is a path,
    never a module's) is E001, E002, E003 or E008 (a planted link must not make planner
    run code elsewhere), as for any other input file."""
    a_path = "/" in where_text or os.sep in where_text
    if where_text.endswith(".py") or a_path:
        require_file(file, where_text, "Python", FOLDER_HINT)
    if not where_text.endswith(".py") and (a_path or file.is_file()):
        # before: Python's "No module named '/path/model'", as if a module were meant
        raise SpecError(Diagnostic(
            "E939", f"cannot import {where_text}: a model file must be Python source "
            "ending in `.py` (or a `.pt2` that torch.export saved)", Span.of_path(where_text),
            (f"rename it to `{file.stem}.py`, or give a module as `package.module:NAME`",)))
    if not where_text.endswith(".py"):
        module: ModuleType = _import_module(where_text)
        if getattr(module, "__file__", None) is None and file.is_dir():
            # Python imports a folder without `__init__.py` as an empty namespace package
            require_file(file, where_text, "Python", FOLDER_HINT)  # E002
        return module
    name = f"_planner_model_{abs(hash(str(file.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    spec.loader.exec_module(module)
    return module


def raised_at(err: BaseException, file: Path, shown: str) -> Span | None:
    """Where in the model's `file` (shown as `shown`) `err` came from: the expression of the
    innermost frame of its traceback there (a library's failure is placed at the user's
    line that called it); None when no frame is in that file."""
    if not shown.endswith(".py"):
        return None
    target = file.resolve()
    found = None
    for frame in traceback.extract_tb(err.__traceback__):
        if frame.lineno is not None and Path(frame.filename).resolve() == target:
            found = frame
    if found is None or found.lineno is None:
        return None
    line, column = found.lineno, (found.colno or 0) + 1
    one_line = found.end_lineno == line and found.end_colno is not None
    end = found.end_colno + 1 if one_line and found.end_colno is not None else column + 1
    return Span(shown, line, column, line, max(end, column + 1), 0, 0)


def _explained(err: BaseException) -> str:
    """`Type: message`, with the exception at the root of its chain when there is one: a
    library that re-raises ("Could not import module 'GPT2LMHeadModel'") hides the cause
    ("operator torchvision::nms does not exist": a torchvision built for another torch)."""
    text = f"{type(err).__name__}: {err}".rstrip(": ")
    root, seen = err, {id(err)}
    while True:
        nxt = root.__cause__ or (None if root.__suppress_context__ else root.__context__)
        if nxt is None or id(nxt) in seen:
            break
        root = nxt
        seen.add(id(nxt))
    cause = f"{type(root).__name__}: {root}".rstrip(": ")
    return text if cause in text else f"{text} (caused by {cause})"


def _status(err: SystemExit) -> str:
    """`status 0`, or the message `sys.exit("...")` was given."""
    code = err.code
    return f"status {code}" if code is None or isinstance(code, int) else repr(str(code))


def _load_program(path: str) -> Any:
    """The `ExportedProgram` saved at `path` (E001-E003 and E008 for a path that is no file
    to read, E939 when it cannot be read as one, or would run code:
    `planner.io.torch_program`)."""
    torch = require_torch()
    require_file(Path(path), path, "saved program",
                 "give the .pt2 file that torch.export.save wrote")  # E001, E002, E003, E008
    return load_program(path, torch)


def _import_module(name: str) -> Any:
    """`importlib.import_module`, also looking in the working directory, as `python -m`
    does: the `planner` script's `sys.path` lacks it, so `planner import torch mymodel:model`
    would miss `./mymodel.py`. The directory is appended (it shadows nothing installed), and
    only when the module is found nowhere else."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        cwd = os.getcwd()
        if err.name != name.partition(".")[0] or any(
                os.path.abspath(p or ".") == cwd for p in sys.path):
            raise
        sys.path.append(cwd)
        return importlib.import_module(name)


# complex: the three sources of inputs (saved with the program, --example, --input) and an
# E943 check and message for each way a user's value can be wrong
def example_inputs(shapes: Sequence[str] = (), expression: str | None = None,
                   namespace: dict[str, Any] | None = None, model: Any = None) -> Example:
    """Inputs from `--input SHAPE[:DTYPE]` options or an `--example` expression; for a saved
    program given neither, the inputs saved with it."""
    torch = require_torch()
    saved = getattr(model, "example_inputs", None)
    if not shapes and not expression and isinstance(model, torch.export.ExportedProgram) \
            and saved is not None:
        args, kwargs = saved
        return Example(tuple(args), dict(kwargs))
    if bool(shapes) == bool(expression):
        raise UsageError(Diagnostic("E943", "give the example inputs by --input or by "
                                    "--example (one of the two)", None,
                                    ("e.g. --input 8x16, or --example 'torch.randn(8, 16)', "
                                     "or --example 'dict(input_ids=torch.zeros(1, 64, "
                                     "dtype=torch.long))'",)))
    if expression:
        try:
            value = eval(expression, {"torch": torch, **(namespace or {})})
        except SystemExit as err:
            raise UsageError(Diagnostic("E943", f"--example `{expression}` exited "
                                        f"({_status(err)})", None)) from None
        except Exception as err:  # noqa: BLE001 - the user's expression
            raise UsageError(Diagnostic("E943", f"--example `{expression}` raised "
                                        f"{type(err).__name__}: {err}", None)) from None
        if isinstance(value, dict):
            bad = [k for k in value if not isinstance(k, str) or not k.isidentifier()]
            if bad:
                raise UsageError(Diagnostic("E943", f"--example gives a dict whose key "
                                            f"{bad[0]!r} is not a keyword of forward()",
                                            None))
            return Example((), dict(value))
        return Example(tuple(value) if isinstance(value, (tuple, list)) else (value,))
    return Example(_shape_inputs(torch, shapes))


def _shape_inputs(torch: Any, shapes: Sequence[str]) -> tuple[Any, ...]:
    """The tensors of `--input SHAPE[:DTYPE]` options: floats `torch.randn` under seed 0,
    others zeros. A shape or dtype PyTorch cannot make a tensor of is E943, as a malformed
    one is: the user's value, not a bug of planner's."""
    generator = torch.Generator().manual_seed(0)
    out = []
    for text in shapes:
        dims_text, _, dtype_text = text.partition(":")
        dtype = getattr(torch, dtype_text or "float32", None)
        try:
            dims = tuple(int(d) for d in dims_text.replace(",", "x").split("x"))
        except ValueError:
            dims = ()
        if not dims or any(d < 0 for d in dims) or not isinstance(dtype, torch.dtype):
            raise UsageError(Diagnostic("E943", f"--input `{text}` is not SHAPE[:DTYPE]", None,
                                        ("e.g. 8x16, 4x3x32x32:float16 or 2x10:int64",)))
        _refuse_oversized(text, dims, dtype)
        try:
            with warnings.catch_warnings():  # torch's deprecation of quantized dtypes, before
                warnings.simplefilter("ignore", UserWarning)  # its refusal of them below
                out.append(torch.randn(dims, generator=generator).to(dtype)
                           if dtype.is_floating_point else torch.zeros(dims, dtype=dtype))
        except Exception as err:  # noqa: BLE001 - torch's refusal of the user's shape or dtype
            reason = (str(err).strip().splitlines() or [""])[0][:200]
            raise UsageError(Diagnostic("E943", f"--input `{text}`: PyTorch cannot make this "
                                        f"tensor ({type(err).__name__}: {reason})", None,
                                        ("e.g. 8x16, 4x3x32x32:float16 or 2x10:int64",))
                             ) from None
    return tuple(out)


def _refuse_oversized(text: str, dims: tuple[int, ...], dtype: Any) -> None:
    """E943 for an input larger than this machine's memory: allocating it fails (or, where
    the kernel overcommits, is killed while it is filled), and no model's example input is
    so large. Checked in Python's integers, before torch sees a size it would overflow."""
    elements = 1
    for d in dims:
        elements *= d
    need = elements * int(getattr(dtype, "itemsize", 1))
    have = _memory_bytes()
    if have is not None and need > have:
        # past 2^80 B (a float's reach ends at 2^1024) the size is said as a power of two
        size = (format_bytes(need) if need.bit_length() <= 80
                else f"over 2^{need.bit_length() - 1} B")
        raise UsageError(Diagnostic(
            "E943", f"--input `{text}` is a tensor of {size}, more than this "
            f"machine's {format_bytes(have)} of memory", None,
            ("example inputs are one small batch: e.g. 8x16 or 1x3x224x224",)))


def _memory_bytes() -> int | None:
    """This machine's physical memory in bytes; None where the OS does not say."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows), or no such name
        return None


def quiet_copy(value: Any) -> Any:
    """`copy.deepcopy(value)` without the FutureWarning torch 2.13 raises while copying an
    exported graph's input specs (its own deprecation, nothing a user can act on)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return copy.deepcopy(value)
