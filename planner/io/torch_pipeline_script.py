"""A pipeline plan as a script: one pipelined step under torch.distributed.pipelining.

`pipeline_script` writes a runnable script: every rank builds the model (seeded),
`pipeline(module, mb_args=..., mb_kwargs=..., split_spec=...)`, `pipe.build_stage(...)` for
its stage(s), the schedule with a loss, one `schedule.step(...)` and, for training, one
`optimizer.step()` over its stages' parameters: the optimizer whose state the spec counts
(`TorchPipeline.optimizer`, recorded as OPTIMIZER; SGD where the spec says none; the
script's `--optimizer` and `--lr` override it, `--optimizer none` steps none); under `torchrun`
(env://) or, with `--spawn`, under `torch.multiprocessing.spawn` (gloo on the CPU with
`--cpu`). Keyword inputs go as keywords, with those the importer's capture adds
(`torch_capture.with_defaults`: `use_cache=False`); the last stage's flat tensors are
rebuilt into the model's output (`torch.utils._pytree`, a Hugging Face ModelOutput) for the
loss: the cross-entropy of its `logits`, or the user's `--loss`. A tensor crossing stages
that is not contiguous is made so (`contiguous_boundaries`: torch sends the traced layout,
gloo contiguous tensors only). Under `interleaved`, whose runtime sends between adjacent
stages only and hands the step's keyword inputs to every stage of the first rank, a tensor
that skips stages is relayed by the stages between (`relay_skips`) and a later stage gets
only the keywords it takes (`own_inputs`). `--check` compares the loss and gradients with the
unpipelined model's, and the parameters after the same optimizer step (a tied weight's
copies equal; each copy checked, several on a rank of `interleaved`), in eval mode unless
`--mode` says otherwise, and prints what differs and by how much (exit status 1).

The script's text is the template `pipeline_step.py-tpl` beside this module (Django's
`.py-tpl`: Python that tools leave alone until it is filled). Where a plan with replicas
(a 2-D mesh) gets other lines, a region holds both: `#<name>`, the lines of a plan without
replicas, `#<hybrid>`, the hybrid script's, `#</name>`; `_script` keeps one side and
takes the markers out; a region whose second marker is `#<recompute>` holds a plan
without recomputation's lines (often none) and a plan with some's (`RECOMPUTE`, its stages
under `torch.utils.checkpoint`), so that a plan that recomputes nothing gets the text it
always had. The placeholders (`__TARGET__`, ...) are filled by
`codegen.fill`, each a literal or constant code.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from .codegen import GeneratedCodeError, docstring_text, fill, literal
from .torch_capture import with_defaults
from .torch_import import Traced
from .torch_load import Example
from .torch_loss import model_outputs
from .torch_pipeline import SCHEDULE_CLASSES, SCRIPT_LR, TorchPipeline, mesh_ranks


def pipeline_script(tp: TorchPipeline, traced: Traced, target: str,
                    shapes: Sequence[str] = (), example: str | None = None,
                    spec: str = "", name: str = "pipeline_step.py") -> str:
    """A runnable script (file `name`) for one pipelined step of `target`, the model as
    given to `planner import torch` with its `shapes` (`--input`) or `example` (the module
    docstring; the script's own says how to run it)."""
    stages = "".join(f"\n    {literal((s.rank, s.device, s.torch_device))},"
                     for s in tp.stages)
    split = "".join(f"\n    {literal(path)}: SplitPoint.BEGINNING," for path in tp.split_spec)
    note = "" if tp.exact else (
        "\nThe plan's own stages do not begin at modules; this is the nearest split that does "
        f"({len(tp.moved)} op(s)\nmoved; `planner export torch --pipeline` says which).\n")
    if tp.regrouped:
        note += f"\nOn {tp.ranks} rank(s), not the plan's {tp.plan_ranks}: " + docstring_text(
            tp.regrouped) + ".\n"
    if tp.recompute:
        note += ("\nStage(s) " + ", ".join(map(str, tp.recompute)) + " recompute their "
                 "activations, as the plan says (RECOMPUTE):\neach runs under "
                 "torch.utils.checkpoint, its forward again in the backward pass.\n")
    outputs = model_outputs(traced)
    values = {
        "__TARGET__": literal(target),
        "__INPUTS__": literal(list(shapes)),
        "__EXAMPLE__": literal(example),
        "__MICROBATCHES__": literal(tp.microbatches),
        "__SPLIT_SPEC__": "{" + split + ("\n}" if split else "}"),
        "__STAGES__": "[" + stages + "\n]",
        "__TRAINING__": literal(tp.training),
        "__OPTIMIZER__": literal(tp.script_optimizer),
        "__LR__": literal(SCRIPT_LR),
        "__OUTPUT_SHAPES__": literal(outputs.shapes),
        "__OUTPUT_SPEC__": literal(outputs.spec),
        "__LOGITS__": literal(outputs.logits),
        "__CAPTURE_KWARGS__": literal(_capture_kwargs(traced)),
        "__SCHEDULE__": SCHEDULE_CLASSES[tp.schedule],
        "__RANKS__": literal(tp.ranks),
        "__NSTAGES__": literal(len(tp.stages)),
        "__ABOUT__": docstring_text(f"`{target}`"),
        "__FROM__": docstring_text(f"plan `{tp.plan}`" + (f" of `{spec}`" if spec else "")),
        "__NAME__": docstring_text(name),
        "__NOTE__": note,
        "__TIED__": literal(tied_parameters(traced.model)),
        "__FLAT_TENSORS__": _flat_tensors_source(),
    }
    recompute = bool(tp.recompute)
    if recompute:
        values["__RECOMPUTE__"] = literal(list(tp.recompute))
    if not tp.replicas:
        # one pass: a name holding a placeholder (a device `__FROM__0`) stays that text
        return fill(_script(hybrid=False, recompute=recompute), values, name)
    mesh = "".join(f"\n    {literal((r['pp'], r['dp'], r['device'], r['torch_device']))},"
                   for r in mesh_ranks(tp))
    values.update({"__DATA_PARALLEL__": literal(tp.data_parallel),
                   "__MESH__": "[" + mesh + "\n]"})
    return fill(_script(hybrid=True, recompute=recompute), values, name)


def _flat_tensors_source() -> str:
    """`torch_values.flat_tensors`'s source, for the script (which imports torch and `Any`
    itself), read from its file: importing the module would import torch, which writing a
    script does not need."""
    path = Path(__file__).with_name("torch_values.py")
    text = path.read_text(encoding="utf-8")
    found = next(node for node in ast.parse(text).body
                 if isinstance(node, ast.FunctionDef) and node.name == "flat_tensors")
    source = ast.get_source_segment(text, found)
    assert source is not None  # the node came from this text
    return source + "\n"


def tied_parameters(model: Any) -> list[tuple[list[str], list[int], str]]:
    """Per parameter that `model` reaches under several names (tied weights: GPT-2's
    `transformer.wte.weight` and `lm_head.weight`): the names, the one `named_parameters()`
    keeps first, its shape and dtype; empty for a model that is not an `nn.Module` (a saved
    program)."""
    named = getattr(model, "named_parameters", None)
    if named is None:
        return []
    names: dict[int, tuple[list[str], Any]] = {}
    for name, p in named(remove_duplicate=False):
        names.setdefault(id(p), ([], p))[0].append(name)
    return [(group, list(p.shape), str(p.dtype).removeprefix("torch."))
            for group, p in names.values() if len(group) > 1]


def _capture_kwargs(traced: Traced) -> dict[str, Any]:
    """The keyword inputs the importer's capture adds where the example leaves them out
    (`torch_capture.with_defaults`: `use_cache=False` for a Hugging Face model), which the
    script passes the same way. None under fx, which takes positional inputs only."""
    if traced.method != "export":
        return {}
    # lazy: optional (the torch extra), and only for an exported graph: an fx one's script
    # is written without torch (tests/hardening/test_generated_names.py)
    import torch

    if not isinstance(traced.model, torch.nn.Module):
        return {}
    added = with_defaults(traced.model, Example()).kwargs
    return {k: v for k, v in added.items() if isinstance(v, (bool, int, float, str))}


#: a region of the template: `#<name>`, a plan without replicas' lines, `#<hybrid>`, a
#: plan with replicas' lines, `#</name>` (either side may be empty); or the same with
#: `#<recompute>`, the lines of a plan without and with recomputing stages
_REGION = re.compile(r"^#<(\w+)>\n(.*?)^#<(hybrid|recompute)>\n(.*?)^#</\1>\n",
                     re.MULTILINE | re.DOTALL)
#: a marker line that no region took out (a region written wrong)
_MARKER = re.compile(r"^#</?\w+/?>$", re.MULTILINE)


@functools.cache
def _template() -> str:
    return resources.files("planner.io").joinpath("pipeline_step.py-tpl").read_text("utf-8")


def _script(hybrid: bool, recompute: bool = False) -> str:
    """The template with each region's lines for a plan with replicas (`hybrid`) or
    without, and with recomputing stages (`recompute`) or without, the markers gone
    (GeneratedCodeError when a region is written wrong or named twice: the template
    changed under `_REGION`)."""
    text = _template()
    names = [m.group(1) for m in _REGION.finditer(text)]
    switch = {"hybrid": hybrid, "recompute": recompute}
    out = _REGION.sub(lambda m: m.group(4 if switch[m.group(3)] else 2), text)
    if len(set(names)) != len(names) or _MARKER.search(out):
        raise GeneratedCodeError(f"the pipeline script's template has a region written "
                                 f"wrong or twice (regions: {names})")
    return out
