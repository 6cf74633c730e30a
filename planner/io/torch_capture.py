"""Capture a PyTorch model as an fx graph: `torch.export` first, `torch.fx` where it works.

`capture(model, example, method)` returns a `Captured`: a `torch.fx.GraphModule` whose
nodes carry `nn_module_stack` (the module calls each node ran in), the example inputs
flattened in the order of its placeholders, and how it was captured:

- `export`: `torch.export.export(model, args, kwargs, strict=False)`, then
  `ExportedProgram.module()`: aten ops, parameters read by `get_attr`, the caller's
  positional and keyword inputs. This is the path PyTorch documents and the one Hugging Face
  models take. The graph is specialised to the example's shapes and devices (planner plans
  one step of those shapes; `torch_export.apply_plan` re-targets the baked-in devices).
  A Hugging Face model returns its key/value cache unless told not to; the cache serves
  generation, not the one forward pass planned here, so `use_cache=False` is passed when
  `forward()` takes it and the example does not set it.
- `fx`: `torch.fx.symbolic_trace(model)`: `torch.nn` modules stay leaves (`call_module`),
  Python loops unroll; positional inputs only.
- `auto` (the default): `export`, and `fx` when export fails and fx succeeds (a model whose
  forward() export cannot follow but fx can); when both fail the error is export's.
- A saved `ExportedProgram` (`TARGET.pt2`, `torch.export.save`) is captured already: its
  `module()` is used, with the example inputs saved with it unless others are given.

Errors name the cause torch reports, each with its own hint: a branch or loop on tensor
values (data-dependent control flow), a shape export could not specialise, an op without
a fake-tensor kernel, an output type export cannot flatten.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import itertools
import keyword
import sys
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ..errors import Diagnostic, SpecError, UsageError
from .torch_load import Example, require_torch
from .torch_logs import Logged, kept, without_rnn_weights

#: `--capture` values
METHODS = ("auto", "export", "fx")


@dataclass
class Captured:
    """A captured graph (see the module docstring)."""

    gm: Any  # torch.fx.GraphModule
    #: the example inputs, flattened in the order of the graph's placeholders
    inputs: tuple[Any, ...]
    method: str  # "export" or "fx"
    #: the inputs the graph takes (the example, with `use_cache=False` where added)
    example: Example
    #: why `auto` fell back to fx (export's error), or ""
    fallback: str = ""


def capture(model: Any, example: Example, method: str = "auto") -> Captured:
    """Capture `model` on `example` by `method` (see the module docstring)."""
    if method not in METHODS:
        raise UsageError(Diagnostic("E943", f"--capture `{method}` is not one of "
                                    + ", ".join(METHODS), None))
    torch = require_torch()
    if isinstance(model, torch.export.ExportedProgram):
        return Captured(model.module(), _flat(example), "export", example)
    _check_inputs(model, example)
    _check_names(model)
    if method == "fx":
        return _fx(model, example)
    try:
        return _export(model, example)
    except SpecError as export_error:
        if method == "export" or example.kwargs:
            raise
        try:
            fx = _fx(model, example)
        except SpecError:
            raise export_error from None
        fx.fallback = export_error.diagnostics[0].message
        return fx


def _check_inputs(model: Any, example: Example) -> None:
    """E943 where the example inputs do not bind to `model.forward()`'s parameters (before:
    a third input fell back from torch.export to torch.fx, which dropped it without a word;
    one too few was E944 `StopIteration:`); a forward() Python cannot read is left to the
    capture."""
    try:
        signature = inspect.signature(model.forward)
    except (AttributeError, TypeError, ValueError):
        return
    try:
        signature.bind(*example.args, **example.kwargs)
    except TypeError as err:
        given = len(example.args) + len(example.kwargs)
        raise UsageError(Diagnostic(
            "E943", f"{given} example input(s) do not match "
            f"{type(model).__name__}.forward{signature}: {err}", None,
            ("give one --input per input of forward(), in its order, or --example with its "
             "arguments",))) from None


def keyword_named(module: Any, words: Collection[str] = keyword.kwlist,
                  first: bool = False) -> str | None:
    """The first dotted name of `module`'s submodules, parameters and buffers that has one
    of `words` for a part (its first part alone with `first`; Python's keywords: `class`,
    `None`), or None: the code torch generates for a captured graph names it
    `self.class`, a SyntaxError."""
    names = itertools.chain(*(getattr(module, kind, lambda: ())() for kind in (
        "named_modules", "named_parameters", "named_buffers")))
    for name, _ in names:
        parts = name.split(".")
        if any(part in words for part in (parts[:1] if first else parts)):
            return str(name)
    return None


def _check_names(model: Any) -> None:
    """E942 for a model with a part named by a Python keyword (`keyword_named`): before,
    torch.export's module() raised a SyntaxError (E999), and torch.fx an E942 whose hint
    pointed to torch.export."""
    named = keyword_named(model)
    if named is not None:
        raise SpecError(Diagnostic(
            "E942", f"{type(model).__name__} cannot be captured: `{named}` has a Python "
            "keyword for a name, which the code torch generates for its graph cannot write "
            f"(`self.{named}`)", None,
            ("rename it (`add_module` with a name that is no keyword, such as `class_`)",)))


def with_defaults(model: Any, example: Example) -> Example:
    """`example` with `use_cache=False` where `forward()` takes `use_cache` and the example
    leaves it out (see the module docstring)."""
    try:
        takes = "use_cache" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        takes = False
    if not takes or "use_cache" in example.kwargs:
        return example
    return Example(example.args, {**example.kwargs, "use_cache": False})


def _export(model: Any, example: Example) -> Captured:
    torch = require_torch()
    example = with_defaults(model, example)
    printed = io.StringIO()
    try:
        # a kernel that rejects the shapes logs a traceback, then raises; a failure prints
        # its partial graph to stderr (twice, before E942 said why): kept, and dropped
        with kept(Logged()), without_rnn_weights(), contextlib.redirect_stderr(printed):
            program = torch.export.export(model, example.args, kwargs=example.kwargs,
                                          strict=False)
    except Exception as err:  # noqa: BLE001 - export raises many kinds, user code any
        raise capture_error(model, "torch.export", err) from None
    sys.stderr.write(printed.getvalue())  # a capture's warnings, as they came
    return Captured(program.module(), _flat(example), "export", example)


def _fx(model: Any, example: Example) -> Captured:
    torch = require_torch()
    if example.kwargs:
        raise UsageError(Diagnostic(
            "E943", "torch.fx takes positional example inputs only; these have keywords ("
            + ", ".join(example.kwargs) + ")", None,
            ("capture with torch.export (--capture export), which takes keyword inputs",)))
    try:
        gm = torch.fx.symbolic_trace(model)
    except Exception as err:  # noqa: BLE001 - fx raises TraceError, TypeError, ...
        raise capture_error(model, "torch.fx", err) from None
    return Captured(gm, tuple(example.args), "fx", example)


def _flat(example: Example) -> tuple[Any, ...]:
    # lazy: optional (the `torch` extra)
    from torch.utils import _pytree

    leaves, _ = _pytree.tree_flatten((tuple(example.args), dict(example.kwargs)))
    return tuple(leaves)


#: (words in torch's message or error type, the cause, the hint), first match wins
_CAUSES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("not a known type", "register a pytree"),
     "the model returns or takes a value whose type torch.export cannot flatten",
     "return tensors (or tuples and dicts of them), or register the type with "
     "torch.utils._pytree.register_pytree_node"),
    (("data-dependent", "datadependent", "guardondatadependent", "could not guard on",
      "dynamic control flow", "control flow that depends", "symbolic boolean",
      "proxy object cannot be iterated", "traced variables cannot be used as inputs to "
      "control flow"),
     "a branch or loop depends on the values of a tensor (data-dependent control flow)",
     "make it depend on shapes only, or express it with torch.cond; torch.fx keeps a module "
     "whole when it is a leaf (--capture fx)"),
    (("constraint", "dynamic shape", "specializ", "symint"),
     "a shape torch.export could not specialise to the example's (a dynamic shape)",
     "give example inputs of the exact shapes to plan for"),
    (("unsupportedoperator", "no fake", "fake tensor", "meta kernel", "not implemented for "
      "'meta'", "abstract impl"),
     "an op without a fake-tensor (meta) kernel, which export needs to run it symbolically",
     "register a fake kernel for it (torch.library.register_fake), or capture with "
     "--capture fx"),
    (("co_varnames", "proxy", "symbolic_trace", "traceerror"),
     "Python that symbolic tracing cannot follow",
     "capture with torch.export (--capture export), which runs the Python for real"),
)


def capture_error(model: Any, how: str, err: BaseException) -> SpecError:
    """E942 naming the cause `err` shows (see `_CAUSES`), with its hint."""
    text = str(err).strip()
    first = text.splitlines()[0] if text else ""
    if len(first) > 300:
        first = first[:297] + "..."
    haystack = f"{type(err).__name__} {text}".lower()
    other = "fx" if how == "torch.export" else "export"
    cause, hint = "", (f"capture with the other method (--capture {other}), and check the "
                       "--input shapes and dtypes against the model's forward()")
    for words, why, fix in _CAUSES:
        if any(w in haystack for w in words):
            cause, hint = why, fix
            break
    message = f"{how} cannot capture {type(model).__name__}: "
    message += f"{cause} ({type(err).__name__}: {first})" if cause else \
        f"{type(err).__name__}: {first}"
    return SpecError(Diagnostic("E942", message, None, (hint,)))
