"""Every diagnostic code planner reports, with its meaning: the one table.

A new code is one `Code(...)` line in `TABLE`, in order; `tests/test_codes.py` fails on a
code raised without one, and the documentation's page of codes is generated from it
(`python docs/gen_codes.py > docs/codes.md`). `planner explain CODE` prints one entry.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Code:
    """One diagnostic code. `exit` is the status of a command it stops (0: a warning)."""

    code: str
    exit: int
    meaning: str
    #: the code(s) now reported instead; a retired code is no longer raised
    retired: str = ""


#: number prefix -> layer; the longest matching prefix wins ("99" before "9")
LAYERS: dict[str, str] = {
    "0": "files and imports",
    "1": "syntax",
    "2": "names, units and structure",
    "3": "proofs that no plan exists (`check` and every algorithm)",
    "4": "plan verification",
    "5": "placement files",
    "6": "command-line usage (`compare` included)",
    "7": "heuristics' infeasibility",
    "8": "exact solvers",
    "9": "importers and generators",
    "99": "internal",
}

TABLE: tuple[Code, ...] = (
    Code("E000", 1, "more diagnostics than the `diagnostics` limit (100) shown"),
    Code("E001", 1, "no such file, or an invalid import path"),
    Code("E002", 1, "a folder where a file is expected"),
    Code("E003", 1, "a file that cannot be read (permissions, not a regular file, bad path)"),
    Code("E004", 1, "a file that is not valid UTF-8"),
    Code("E005", 1, "an import cycle"),
    Code("E006", 1, "no `.plan` files in the paths given to `check`"),
    Code("E007", 1, "a file larger than the `file_bytes` limit"),
    Code("E008", 1, "an import or a symlink that leads outside the root (`--root`)"),
    Code("E009", 1, "a chain of imports deeper than the `import_depth` limit"),
    Code("E010", 1, "a file that is not a planner spec (its content is not shown)"),
    Code("E011", 1, "a graph with more ops than the `ops` limit"),
    Code("E012", 1, "a graph with more edges than the `edges` limit"),
    Code("E013", 1, "links naming more device pairs than the `link_pairs` limit"),
    Code("E014", 1, "more plans than the `plans` limit"),
    Code("E015", 1, "glob patterns that test more op names than the `glob_names` limit"),
    Code("E016", 1, "a pipeline plan whose micro-batch copies pass the `pipeline_copies` limit"),
    Code("E100", 1, "the parser failed with no located message (a bug)"),
    Code("E101", 1, "an unexpected token"),
    Code("E102", 1, "unexpected end of file (an unclosed block)"),
    Code("E103", 1, "an unknown unit"),
    Code("E104", 1, "a bad string: unterminated, an invalid escape or a control character"),
    Code("E105", 1, "a `-` or `+` where none may be (quantities cannot be negative)"),
    Code("E106", 1, "an unexpected character"),
    Code("E107", 1, "an unmatched `}`"),
    Code("E108", 1, "`nan` or `inf` where a number is expected"),
    Code("E201", 1, "a graph, cluster or plan defined twice"),
    Code("E202", 1, "an op defined twice in a graph"),
    Code("E203", 1, "an unknown op"),
    Code("E204", 1, "a pattern that matches no op"),
    Code("E205", 1, "a device defined twice in a cluster"),
    Code("E206", 1, "a `[*]` selector that matches no device"),
    Code("E207", 1, "an unknown device"),
    Code("E208", 1, "a plan names an unknown graph or cluster"),
    Code("E210", 1, "an unknown attribute"),
    Code("E211", 1, "a `[...]` selector on an attribute that takes none"),
    Code("E212", 1, "an attribute given twice"),
    Code("E213", 1, "a number where a name is expected"),
    Code("E214", 1, "a unit where a plain number is expected"),
    Code("E220", 1, "a quantity without its unit"),
    Code("E221", 1, "a name where a quantity is expected"),
    Code("E222", 1, "a quantity in the wrong unit (a time for a size, ...)"),
    Code("E223", 1, "a quantity above its valid range"),
    Code("E230", 1, "an edge from an op to itself"),
    Code("E231", 1, "a graph with a cycle"),
    Code("E232", 1, "an op with neither `time` nor `flops`"),
    Code("E233", 1, "`<->` in a graph (edges have one direction)"),
    Code("E234", 1, "a `backward_of` that names its own op or another backward op"),
    Code("E235", 1, "under `objective pipeline`, a backward op that comes before its forward "
                    "op (no path of edges leads from the forward op to it)"),
    Code("E236", 1, "a `tie` of fewer than two ops"),
    Code("E237", 1, "a `tie` whose bytes exceed a tied op's `params` (all its ties together)"),
    Code("E238", 1, "two ops tied together twice"),
    Code("E240", 1, "a device without `memory`"),
    Code("E241", 1, "a `speed`, `flops` or `bandwidth` that is not positive"),
    Code("E242", 1, "`[*]` in a device declaration"),
    Code("E243", 1, "a link without `bandwidth`"),
    Code("E244", 1, "devices of a cluster with no link between them"),
    Code("E245", 1, "an empty device range"),
    Code("E246", 1, "a device range, or the clusters of one load, over the `devices` limit"),
    Code("E250", 1, "an op placed or pinned on two devices"),
    Code("E251", 1, "an op pinned to a device and placed on another"),
    Code("E252", 1, "colocated ops pinned to different devices"),
    Code("E253", 1, "an op with no compute time on some device of its plan"),
    Code("E254", 1, "a plan without its `graph` or `cluster`"),
    Code("E255", 1, "an unknown memory or contention model"),
    Code("E256", 1, "an unknown objective or schedule, or a pipeline setting that does not apply "
         "(`data_parallel` under `interleaved`)"),
    Code("W256", 0, "`time[KIND]` names a device kind no device of the spec has"),
    Code("E257", 1, "a `microbatches`, `stages_per_device`, `data_parallel` or `microbatch_size` "
         "that is not a whole number in range (`data_parallel` may be `auto`, and at most the "
         "cluster's devices)"),
    Code("E258", 1, "under `objective pipeline`, pins that split a pipeline unit (an op and its "
                    "`backward_of` ops, with their colocation groups) between devices"),
    Code("W258", 0, "a pipeline plan that no split can interleave (it runs as `1f1b`)"),
    Code("E259", 1, "`stages_per_device` above the number of pipeline units of the graph"),
    Code("E260", 1, "a positive quantity below its valid range"),
    Code("E261", 1, "an empty name, or one with a control, format (bidi, zero-width) or "
                    "surrogate character"),
    Code("E262", 1, "a name that mixes Latin with Cyrillic or Greek letters"),
    Code("E263", 1, "a name that looks like another, different name of the spec"),
    Code("E264", 1, "a name not in Unicode NFKC form"),
    Code("W265", 0, "a comment that holds control, bidi or zero-width characters (they can "
                    "make a reviewer read other code than the parser does)"),
    Code("E290", 1, "Python API: a value that is not a number (wrong type, NaN) where a "
                    "quantity is expected"),
    Code("E301", 3, "a placement unit (op or colocation group) larger than any device it may use"),
    Code("E302", 3, "the ops pinned to a device need more memory than it holds"),
    Code("E303", 3, "the plan's least total memory exceeds all devices together"),
    Code("E304", 3, "a placement unit with no device (no op time applies, or pins conflict)"),
    Code("E305", 3, "an edge must cross between devices that no link joins that way"),
    Code("E306", 3, "a placement unit larger than any device it may use once the inputs it "
                    "must hold (each producer, or a copy of its tensor) are counted"),
    Code("E307", 3, "placement units that cannot share a device two by two outnumber the "
                    "devices that can take them"),
    Code("E401", 3, "the simulated plan violates the spec (each violation is listed)"),
    Code("E500", 1, "a placement or stages file that is not valid JSON"),
    Code("E501", 1, "a placement file without a `placement` object"),
    Code("E502", 1, "an unsupported plan file format or version"),
    Code("E503", 1, "an unknown op in a placement or stages file"),
    Code("E504", 1, "an unknown device in a placement or stages file (`replicas` included)"),
    Code("E505", 1, "a placement or stages file that leaves ops unplaced"),
    Code("E506", 1, "the spec's `place`/`pin` statements leave ops unplaced"),
    Code("E508", 1, "a placement file `order` that is not lists of op names"),
    Code("E509", 1, "a placement file `start_s` that is not finite seconds per op"),
    Code("E510", 1, "a `simulate --stages` file that is not a list of stages (`{\"ops\": [...], "
                    "\"devices\": [...]}` each), nor an object whose `stages` or "
                    "`pipeline.stages` is one"),
    Code("E511", 1, "a stages file that lists an op in two stages (or twice)"),
    Code("E512", 1, "a stages file that lists a device in two stages (or twice)"),
    Code("E513", 1, "a stages file with a stage of no ops or no devices"),
    Code("E514", 1, "a plan file `replicas` that is not disjoint groups of devices, each named "
                    "by its stage's device and listing it first"),
    Code("E601", 2, "an unknown algorithm"),
    Code("E602", 2, "no plan of that name, or several plans and no `--plan`"),
    Code("E603", 2, "a `solve --time-limit` outside 0 to 1e6 s, or not a finite number"),
    Code("E604", 2, "an output path that cannot be written (no such folder, a folder, not a "
                    "regular file)"),
    Code("E605", 2, "an option that does not apply to the chosen `--algo`"),
    Code("E606", 2, "a command-line parse error (in the `--json` envelope)"),
    Code("E607", 130, "interrupted by the user (a warning when the best plan so far was kept)"),
    Code("E608", 2, "a `solve --gap` that is negative or not a finite number"),
    Code("E609", 2, "`planner explain`: an unknown code"),
    Code("E611", 2, "an invalid `compare` sweep value (`--bandwidth`, `--memory`, ...)"),
    Code("E612", 2, "an unknown `--executor`"),
    Code("E613", 2, "`--executor ray` without the `ray` package"),
    Code("E614", 2, "a `--resume` file ending in `.json` (rows are JSON lines)"),
    Code("E615", 2, "a `--resume` file line that is not a result row of this sweep"),
    Code("E616", 2, "`--algos` names no algorithm"),
    Code("E617", 2, "no SPEC given and no default specs folder here"),
    Code("E618", 2, "an invalid `compare --time-limit` (above 0, at most 1e6 s)"),
    Code("E619", 2, "nothing to compare: no plan found"),
    Code("E620", 2, "`--jobs` not a positive number"),
    Code("E621", 4, "`compare` workers crash before finishing any point"),
    Code("E622", 2, "an output that is not a regular file when it is written (a device, a "
                    "FIFO, a folder, or a symlink to one): nothing is written"),
    Code("E623", 4, "writing an output failed (a full disk, an I/O error): the file is left "
                    "as it was"),
    Code("E624", 2, "`compare --microbatches` with no point under the pipeline objective "
                    "(add `--objective pipeline`)"),
    Code("E625", 2, "an `--algo` that does not plan for the plan's objective (`pipedp`, "
                    "`pipeilp`, `hybrid` and `uniform` plan pipelines; `cpsat` and `ilp` one "
                    "pass)"),
    Code("W625", 0, "`compare`: points left out because their algorithm does not plan for "
                    "their objective"),
    Code("W626", 0, "a pipeline plan torch's schedule cannot run as placed (more stages than "
                    "micro-batches under 1f1b, ...): `export torch --pipeline` would refuse it"),
    Code("E640", 2, "options that contradict each other (`--json` with another `--format`, ...)"),
    Code("W640", 0, "a spec not in the canonical layout (`fmt --check`, `fmt --diff`)"),
    Code("E641", 1, "`fmt -`: standard input that is not valid UTF-8"),
    Code("E642", 1, "`diff`: a file that holds no plan (invalid JSON, another format, a "
                    "failed run)"),
    Code("E643", 2, "`diff --fail-if-slower`: not a percentage of 0 or more"),
    Code("E644", 2, "`diff --fail-if-slower` without both makespans (plan files need "
                    "`--spec`)"),
    Code("E645", 5, "`diff --fail-if-slower`: the new plan is slower than allowed, or "
                    "violates the spec"),
    Code("W645", 0, "`diff`: the new plan is slower than the old one"),
    Code("E646", 2, "`simulate --stages` on a plan without `objective pipeline`"),
    Code("W650", 0, "`compare` skipped a spec of a folder because it does not load"),
    Code("E701", 3, "the plan's least total memory exceeds all devices together", "E303"),
    Code("W701", 0, "a spec skipped by `compare`; ONNX ops without a FLOP formula",
         "W650, W940"),
    Code("E702", 3, "a placement unit larger than the largest device", "E301"),
    Code("W702", 0, "ONNX tensors left without a shape", "W941"),
    Code("E703", 3, "the ops pinned to a device need more memory than it holds", "E302"),
    Code("E704", 3, "a heuristic found no device for an op (out of memory, or pin and group "
         "leave none)"),
    Code("E705", 1, "`--algo expert` on a plan that leaves ops unplaced", "E506"),
    Code("E706", 3, "`--algo single`: no one device can hold or run every op"),
    Code("E707", 3, "`pipedp`: no contiguous pipeline split fits the devices' memory, follows "
                    "the devices the pins leave each unit, or gives each device its "
                    "`stages_per_device`"),
    Code("E708", 3, "`pipeilp`: no pipeline placement fits the devices' memory, even "
                    "recomputing activations (the solver's proof)"),
    Code("E709", 6, "`pipeilp`: no placement found within the time limit (or among the "
                    "placements its model covers) and no contiguous split fits, even "
                    "recomputing: not a proof that none exists"),
    Code("E710", 4, "m-SCT's LP relaxation failed"),
    Code("E711", 4, "`pipeilp`: the solver failed and no contiguous split fits, even "
                    "recomputing"),
    Code("E712", 3, "`hybrid`: no layout of stages, replicated or not, fits the devices' "
                    "memory and honours the devices each unit may use, in the cluster's order; "
                    "`data_parallel N` (pipeilp): a pin to a device that starts no block of N"),
    Code("E810", 3, "a placement unit that no device may run", "E304"),
    Code("E811", 3, "the exact solver found no plan after the heuristics' proof"),
    Code("E812", 4, "the exact solver failed and no heuristic plan is left"),
    Code("E813", 3, "the exact model is infeasible (memory `static`: no plan exists)"),
    Code("E814", 2, "a model file format the solver cannot write"),
    Code("E815", 2, "the model file cannot be written"),
    Code("E816", 3, "`--algo auto`: no algorithm found a plan the simulator accepts"),
    Code("E817", 3, "ops forced onto two devices with no link between them", "E305"),
    Code("E818", 3, "memory `liveness`: the exact model (static memory) is infeasible and no "
                    "heuristic found a plan; not a proof"),
    Code("E901", 1, "an ONNX file that cannot be read", "E001, E003"),
    Code("E902", 1, "not a valid ONNX model, or shape inference failed"),
    Code("E911", 1, "a malformed PipeDream profile line"),
    Code("E912", 1, "a PipeDream edge naming an unknown node"),
    Code("E913", 1, "a PipeDream edge from a node to itself"),
    Code("E914", 1, "PipeDream edges that form a cycle"),
    Code("E915", 1, "a PipeDream node defined twice"),
    Code("E920", 1, "an imported JSON file that is not valid JSON"),
    Code("E921", 1, "JSON in none of the formats `import json` reads"),
    Code("E922", 1, "an imported JSON graph with a malformed or missing field"),
    Code("E923", 1, "an unsupported interchange format version"),
    Code("E924", 1, "interchange edges that form a cycle"),
    Code("E925", 2, "`export json`: no such graph or plan, or several and none chosen"),
    Code("E930", 2, "an invalid option of a generator or importer (dtype, profile, size)"),
    Code("E931", 2, "a `--cluster` file that defines no cluster"),
    Code("E932", 1, "a generated spec that does not load (a bug)"),
    Code("E933", 2, "no such model in the ONNX model zoo"),
    Code("E934", 1, "a malformed line or value in a `--times` file"),
    Code("E935", 1, "a `--times` file in none of the formats it may take (CSV, JSON, Chrome "
         "trace)"),
    Code("E936", 1, "a `--times` file that names no op of the imported graph"),
    Code("W937", 0, "names in a `--times` file that are no op (ignored)"),
    Code("E938", 2, "`import torch` or `export torch` without the `torch` package"),
    Code("E939", 1, "a PyTorch model that cannot be loaded (module, file, factory or its result)"),
    Code("W940", 0, "ONNX op types without a FLOP formula (counted 1 FLOP per output element)"),
    Code("W941", 0, "ONNX tensors left without a shape (counted 0 bytes)"),
    Code("E942", 1, "the PyTorch model cannot be captured by torch.export or torch.fx "
                    "(data-dependent control flow, an output type, an op without a fake "
                    "kernel, ...)"),
    Code("E943", 2, "invalid example inputs (`--input`, `--example`) for a PyTorch model"),
    Code("E944", 1, "the PyTorch model fails on its example inputs"),
    Code("E945", 1, "a plan whose ops do not match the traced PyTorch model"),
    Code("E946", 1, "`export torch --pipeline`: the plan's stages do not begin at modules that "
                    "torch's SplitPoint can name (the nearest split that does is offered; "
                    "`--nearest` exports it)"),
    Code("E947", 1, "`export torch --pipeline`: a plan torch's pipeline schedules cannot run as "
                    "placed (no `objective pipeline`, a device with several stages, too few "
                    "micro-batches) or on the `--ranks` asked"),
    Code("W948", 0, "PyTorch ops that may do matrix work without a FLOP formula (timed by "
                    "bytes moved only)"),
    Code("E949", 1, "an accelerate `device_map` that does not cover the spec's ops or names "
                    "devices the cluster lacks"),
    Code("E950", 1, "`export torch --pipeline`: a hybrid plan's replicated stages that a 2-D "
                    "DeviceMesh (pipeline x data) cannot run: stages replicated unequally, "
                    "micro-batches that do not split evenly over the replicas, `--ranks`"),
    Code("E990", 4, "out of memory"),
    Code("E991", 1, "input too deeply nested"),
    Code("E999", 4, "internal error: a bug in planner"),
)

CODES: dict[str, Code] = {c.code: c for c in TABLE}


def layer(code: str) -> str:
    """The layer a code's number belongs to (KeyError for a number outside every range)."""
    digits = code[1:]
    return LAYERS[digits[:2] if digits[:2] in LAYERS else digits[:1]]


def describe(c: Code) -> str:
    """What `planner explain CODE` prints: meaning, layer, exit status or replacement."""
    prefix = c.code[:3] if c.code[1:3] == "99" else c.code[:2]
    status = f"exit status {c.exit}" if c.exit else "a warning: the command goes on"
    rng = prefix + "x" * (4 - len(prefix))
    lines = [f"{c.code}: {c.meaning}", f"layer: {layer(c.code)} ({rng})", status]
    if c.retired:
        lines.append(f"retired: now reported as {c.retired}")
    return "\n".join(lines)

