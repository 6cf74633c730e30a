"""PyTorch in and out on six real models, through the CLI: import, split on two GPUs, export.

    python bench/bench_torch_models.py                 # every model, each import timed once
    python bench/bench_torch_models.py --repeat 3      # the median of 3 imports per granularity
    python bench/bench_torch_models.py --only gpt2,bert --time-limit 2
    python bench/bench_torch_models.py --keep /tmp/out  # keep the specs, plans, exports

Models, random weights (no downloads), `torch.manual_seed(0)`, `.eval()`: torchvision's
`resnet18()`, `mobilenet_v3_small()` and `vit_b_16()` on a 1x3x224x224 input, and small
transformers models (4 layers, width 256, vocabulary 1000) on
`dict(input_ids=1x64 zeros, attention_mask=1x64 ones)`: GPT-2 (`GPT2LMHeadModel`), BERT
(`BertModel`) and a Llama (`LlamaForCausalLM`, 2 key-value heads). The script writes their
factories to a models file in a temporary folder, and runs every step as a fresh
`python -m planner` process, as a user would:

1. `import torch models.py:NAME --granularity op` and `--granularity module:DEPTH`, DEPTH
   the depth of the model's repeated blocks (3 for ViT, whose blocks sit in the Sequential
   `encoder.layers`; 2 for the others): wall time
   (median of `--repeat`), ops (lines `op ...` of the spec), the capture (torch.export or
   torch.fx, from the spec's header).
2. A cluster of two GPUs (12 GB/s, 5 us) each holding 60% of the spec's static footprint
   (params + outputs, summed from `export json`), so that memory forces a split; 70%, 80%,
   90% when `solve` finds no plan that fits. The spec is imported again with `--cluster`.
3. `solve --json` (`auto`): the simulated makespan of the plan. One device: `solve --algo
   single`, which cannot hold the model here, so the sum of the ops' `time` (`export json`),
   which is one device's makespan (no transfers) were there room.
4. `export torch --placement`: the `.to()` copies, whether an accelerate `device_map` came
   out, and for op-level plans that cut outside modules, the nearest module-level plan's
   simulated makespan (`nearest_module_plan`).

Needs torch, plus torchvision and transformers for the models (a model whose library does
not import is skipped, with the reason). A failing command is shown below the table, and
the other models go on. Roughly 3 to 5 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SHARES = (0.6, 0.7, 0.8, 0.9)
IMAGE = ["--input", "1x3x224x224"]
TOKENS = ["--example", "dict(input_ids=torch.zeros(1, 64, dtype=torch.long), "
          "attention_mask=torch.ones(1, 64, dtype=torch.long))"]
CLUSTER = """cluster two {{
  device gpu[0..1] {{ memory {memory} B }}
  link gpu0 <-> gpu1 {{ bandwidth 12 GB/s  latency 5 us }}
}}
"""

# PyPI's torchvision wheels are built against a CUDA torch: with the CPU torch, importing
# torchvision (and transformers, which imports it) fails with "operator torchvision::nms
# does not exist" while torchvision._meta_registrations registers fake kernels for those
# ops. Stubbing that module out first lets the import finish; the models never call nms.
# The models file below starts with the same lines, since the CLI imports it afresh.
STUB = ('import sys, types\n'
        'sys.modules.setdefault("torchvision._meta_registrations", '
        'types.ModuleType("torchvision._meta_registrations"))\n')
sys.modules.setdefault("torchvision._meta_registrations",
                       types.ModuleType("torchvision._meta_registrations"))

MODELS_PY = STUB + '''
import torch


def _vision(name):
    import torchvision

    torch.manual_seed(0)
    return getattr(torchvision.models, name)().eval()


def resnet18():
    return _vision("resnet18")


def mobilenet_v3_small():
    return _vision("mobilenet_v3_small")


def vit_b_16():
    return _vision("vit_b_16")


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=1000,
                                      n_positions=128)).eval()


def bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    return BertModel(BertConfig(num_hidden_layers=4, hidden_size=256, num_attention_heads=4,
                                intermediate_size=1024, vocab_size=1000,
                                max_position_embeddings=128)).eval()


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(num_hidden_layers=4, hidden_size=256,
                                        num_attention_heads=4, num_key_value_heads=2,
                                        intermediate_size=688, vocab_size=1000,
                                        max_position_embeddings=128)).eval()
'''

# name: (the library it needs, the example inputs' flags, the depth of its repeated blocks)
MODELS = {
    "resnet18": ("torchvision", IMAGE, 2),  # layer1.0 ... layer4.1
    "mobilenet_v3_small": ("torchvision", IMAGE, 2),  # features.0 ... features.12
    "vit_b_16": ("torchvision", IMAGE, 3),  # encoder.layers.encoder_layer_0 ...
    "gpt2": ("transformers", TOKENS, 2),  # transformer.h.0 ...
    "bert": ("transformers", TOKENS, 2),  # encoder.layer.0 ...
    "llama": ("transformers", TOKENS, 2),  # model.layers.0 ...
}
#: side -> the spec files' tag; the module side's granularity is `module:DEPTH` (above)
GRANULARITIES = {"op": "op", "module": "mod"}
MEMORY_CODES = {"E301", "E302", "E303", "E701", "E702", "E703", "E704", "E706", "E811", "E813",
                "E816"}


class Failed(Exception):
    """A planner command exited non-zero: the command and what it said."""

    def __init__(self, argv: list[str], proc: subprocess.CompletedProcess[str]) -> None:
        self.argv, self.proc = argv, proc
        super().__init__(f"exit {proc.returncode}")

    def report(self) -> str:
        said = (self.proc.stderr.strip() or self.proc.stdout.strip()).splitlines()
        said = [line for line in said if not line.startswith("[transformers]")]
        return (f"$ planner {shlex.join(self.argv)}\n  exit {self.proc.returncode}: "
                + "\n  ".join(said[-8:]))


def planner(argv: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run `python -m planner ARGV` in a fresh process: what it printed and its wall time."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "planner", *argv], cwd=cwd, text=True,
                          capture_output=True, timeout=900)
    return proc, time.perf_counter() - t0


def ok(argv: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    proc, seconds = planner(argv, cwd)
    if proc.returncode != 0:
        raise Failed(argv, proc)
    return proc, seconds


@dataclass
class Side:
    """One granularity's figures."""

    ops: int = 0
    capture: str = "?"
    import_s: float = math.nan
    footprint: int = 0
    share: float | None = None  # the memory per device, a share of the footprint
    makespan_s: float | None = None
    one_device_s: float | None = None
    one_device_how: str = ""  # "single" or "sum" (of the ops' times)
    copies: int | None = None
    device_map: str = "?"
    nearest_s: float | None = None
    error: str = ""  # what stopped this side, for the table
    granularity: str = "op"


@dataclass
class Row:
    name: str
    sides: dict[str, Side] = field(default_factory=dict)
    skipped: str = ""


def graph_json(spec: str, cwd: Path) -> dict[str, Any]:
    proc, _ = ok(["export", "json", spec], cwd)
    graph: dict[str, Any] = json.loads(proc.stdout)
    return graph


def measure_side(name: str, inputs: list[str], gran: str, tag: str, args: argparse.Namespace,
                 cwd: Path, failures: list[str]) -> Side:
    side = Side()
    model = f"models.py:{name}"
    spec = f"{name}.{tag}.plan"
    try:
        # 1. the import alone, timed
        times = []
        for _ in range(args.repeat):
            _, seconds = ok(["import", "torch", model, *inputs, "--granularity", gran,
                             "-o", spec], cwd)
            times.append(seconds)
        side.import_s = statistics.median(times)
        text = (cwd / spec).read_text()
        side.ops = len(re.findall(r"^\s*op ", text, re.MULTILINE))
        found = re.search(r"captured\s+with\s+(torch\.export|torch\.fx)", text)
        side.capture = found.group(1) if found else "?"
        graph = graph_json(spec, cwd)
        side.footprint = sum(op["params_bytes"] + op["output_bytes"] for op in graph["ops"])
        serial = sum(op["time_s"] or 0.0 for op in graph["ops"])

        # 2.-3. two GPUs that memory forces to split; more memory while no plan fits
        placed = f"{name}.{tag}.two.plan"
        cluster = f"{name}.{tag}.cluster.plan"  # the spec imports it: one per spec
        plan_json = f"{name}.{tag}.placement.json"
        limit = [] if args.time_limit is None else ["--time-limit", str(args.time_limit)]
        for share in SHARES:
            (cwd / cluster).write_text(CLUSTER.format(
                memory=math.ceil(side.footprint * share)))
            ok(["import", "torch", model, *inputs, "--granularity", gran,
                "--cluster", cluster, "-o", placed], cwd)
            argv = ["solve", placed, "--out", plan_json, "--json", *limit]
            proc, _ = planner(argv, cwd)
            if proc.returncode == 0:
                side.share = share
                side.makespan_s = json.loads(proc.stdout)["result"]["makespan_s"]
                break
            if not memory_error(proc):
                raise Failed(argv, proc)
        else:
            first = json.loads(proc.stdout)["diagnostics"][0]
            side.error = f"no plan fits at {SHARES[-1]:.0%}: {first['code']}"
            shares = ", ".join(f"{share:.0%}" for share in SHARES)
            failures.append(f"{name}, {gran}: no plan fits at {shares} (expected when one "
                            "unit outweighs a device):\n$ planner "
                            f"{shlex.join(argv)}\n  exit {proc.returncode}: {first['code']} "
                            f"{first['message']}")
            return side
        argv = ["solve", placed, "--algo", "single", "--json"]
        proc, _ = planner(argv, cwd)
        if proc.returncode == 0:
            side.one_device_s, side.one_device_how = (
                json.loads(proc.stdout)["result"]["makespan_s"], "single")
        elif memory_error(proc):
            side.one_device_s, side.one_device_how = serial, "sum"
        else:
            raise Failed(argv, proc)

        # 4. the plan applied to the model
        out = f"{name}.{tag}.export.json"
        ok(["export", "torch", placed, model, *inputs, "--placement", plan_json, "-o", out],
           cwd)
        exported = json.loads((cwd / out).read_text())
        side.copies = len(exported.get("copies") or [])
        side.device_map = "null" if exported.get("device_map") is None else "yes"
        nearest = exported.get("nearest_module_plan")
        if nearest and nearest.get("makespan_s") is not None:
            side.nearest_s = nearest["makespan_s"]
    except Failed as failed:
        failures.append(f"{name}, {gran}:\n{failed.report()}")
        side.error = f"`{failed.argv[0]}` failed"
    except subprocess.TimeoutExpired as timeout:
        failures.append(f"{name}, {gran}: timed out: planner {shlex.join(timeout.cmd[3:])}")
        side.error = "timed out"
    return side


def memory_error(proc: subprocess.CompletedProcess[str]) -> bool:
    """Whether `solve --json` said that no plan fits the devices' memory (exit 3, a
    memory diagnostic: E301-E303, E701-E704 and E706 say so outright, E811/E813/E816 when the
    heuristics and the exact model find nothing)."""
    if proc.returncode != 3:
        return False
    try:
        diagnostics = json.loads(proc.stdout).get("diagnostics") or []
    except (json.JSONDecodeError, AttributeError):
        return False
    return any(d.get("code") in MEMORY_CODES for d in diagnostics)


def us(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e6:,.1f} us"


def cells(row: Row) -> list[str]:
    if row.skipped:
        return [row.name, f"skipped: {row.skipped}"] + [""] * 10
    op, mod = row.sides["op"], row.sides["module"]

    def makespan(side: Side) -> str:
        if side.makespan_s is None:
            return side.error or "n/a"
        return (f"{us(side.makespan_s)} ({side.share:.0%} of "
                f"{side.footprint / 2**20:.1f} MiB)")

    def device_map(side: Side) -> str:
        if side.copies is None:
            return side.error or "n/a"
        text = side.device_map
        if side.nearest_s is not None:
            text += f" (nearest module plan {us(side.nearest_s)})"
        return text

    vs = "n/a"
    if op.makespan_s and mod.makespan_s:
        vs = f"{(mod.makespan_s / op.makespan_s - 1) * 100:+.1f}%"
    capture = op.capture if op.capture == mod.capture else f"{op.capture} / {mod.capture}"

    def one(side: Side) -> str:
        return "n/a" if side.one_device_s is None else (
            us(side.one_device_s) + ("" if side.one_device_how == "single" else " *"))

    def copies(side: Side) -> str:
        return "n/a" if side.copies is None else str(side.copies)

    return [row.name, capture, mod.granularity, f"{op.ops} / {mod.ops}",
            f"{op.import_s:.1f} / {mod.import_s:.1f}", makespan(op), makespan(mod), vs,
            f"{one(op)} / {one(mod)}", f"{copies(op)} / {copies(mod)}", device_map(op),
            device_map(mod)]


def importable(library: str, seen: dict[str, str]) -> str:
    """'' when `library` imports (torchvision needs the stub above), else why not."""
    if library not in seen:
        try:
            __import__(library)
            seen[library] = ""
        except Exception as error:  # noqa: BLE001 - any failure means: skip its models
            seen[library] = f"`import {library}` failed: {type(error).__name__}: {error}"
    return seen[library]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1, help="timed imports per granularity")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="solve's --time-limit (default: the CLI's, 10 s for auto)")
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--keep", type=Path, default=None,
                    help="work in this folder and keep its specs, plans and exports")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("torch not installed (pip install -e '.[torch]'): nothing to measure")
        sys.exit(0)
    names = [n for n in args.only.split(",") if n] or list(MODELS)
    unknown = set(names) - set(MODELS)
    if unknown:
        ap.error(f"unknown model(s) {sorted(unknown)}; known: {', '.join(MODELS)}")
    started = time.perf_counter()
    libraries: dict[str, str] = {}
    rows: list[Row] = []
    failures: list[str] = []
    print(f"torch {torch.__version__}; two GPUs (12 GB/s, 5 us), roofline times (v100); "
          f"import times: median of {args.repeat} run(s)", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_torch_models.") as tmp:
        cwd = Path(tmp) if args.keep is None else args.keep.resolve()
        cwd.mkdir(parents=True, exist_ok=True)
        (cwd / "models.py").write_text(MODELS_PY)
        for name in names:
            library, inputs, depth = MODELS[name]
            row = Row(name)
            row.skipped = importable(library, libraries)
            if not row.skipped:
                t0 = time.perf_counter()
                for side, tag in GRANULARITIES.items():
                    gran = "op" if side == "op" else f"module:{depth}"
                    row.sides[side] = measure_side(name, inputs, gran, tag, args, cwd,
                                                   failures)
                    row.sides[side].granularity = gran
                print(f"  {name}: {time.perf_counter() - t0:.0f} s", flush=True)
            else:
                print(f"  {name}: skipped: {row.skipped}", flush=True)
            rows.append(row)
    print()
    print("| model | capture | module granularity | ops (op / module) "
          "| import s (op / module) | plan makespan op-level | plan makespan module "
          "| module vs op (%) | one device (op / module) | copies (op / module) "
          "| device_map op-level | device_map module |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(cells(row)) + " |")
    total = time.perf_counter() - started
    sums = any(s.one_device_how == "sum" for r in rows for s in r.sides.values())
    print()
    print(f"Measured {datetime.date.today().isoformat()} on {platform.machine()} "
          f"{platform.system()}, {os.cpu_count()} cores, torch {torch.__version__}, "
          f"{total:.0f} s in all. Each step is a fresh `python -m planner` process; import "
          "times include starting Python, importing torch and the model's library, building "
          "the model and capturing it. Makespans are `solve` (auto)'s simulation under the "
          "static memory model on two GPUs whose memory is the given share of that spec's "
          "params + outputs (the op-level spec counts every node's output, so its "
          "footprint is larger). module vs op: the module-level plan's makespan against the "
          "op-level plan's. device_map: whether `export torch` wrote one (null: the plan cuts "
          "outside modules), with the simulated makespan of its `nearest_module_plan`.")
    if sums:
        print("* one device: `solve --algo single` finds no device that holds the model, "
              "so this is the sum of the ops' `time` (`export json`), one device's makespan "
              "without memory limits.")
    if failures:
        print()
        where = "the temporary folder" if args.keep is None else cwd
        print(f"Commands that failed (in {where}):")
        for failure in failures:
            print()
            print(failure)


if __name__ == "__main__":
    main()
