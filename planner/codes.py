"""Every diagnostic code planner reports, with its meaning: the one table.

A new code is one row of `ROWS` (read into `TABLE`), in order; `tests/test_codes.py` fails
on a code raised without one, and the documentation's page of codes is generated from it
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

#: a row a code, in order: `CODE EXIT meaning`, the meaning going on over indented lines;
#: a retired code's meaning ends with ` => ` and the code(s) now reported instead
ROWS = """\
E000 1   more diagnostics than the `diagnostics` limit (100) shown
W000 0   more warnings than the `diagnostics` limit (100) shown, and no error among them
E001 1   no such file, or an invalid import path
E002 1   a folder where a file is expected
E003 1   a file that cannot be read (permissions, not a regular file, bad path)
E004 1   a file that is not valid UTF-8
E005 1   an import cycle
E006 1   no `.plan` files in the paths given to `check`, `fmt` or `compare`
W006 0   a folder given to `check`, `fmt` or `compare` that holds no `.plan` file (others given do)
E007 1   a file larger than the `file_bytes` limit
E008 1   an import or a symlink that leads outside the root (`--root`)
E009 1   a chain of imports deeper than the `import_depth` limit
E010 1   a file that is not a planner spec (its content is not shown)
E011 1   a graph with more ops than the `ops` limit
E012 1   a graph with more edges than the `edges` limit
E013 1   links naming more device pairs than the `link_pairs` limit
E014 1   more plans than the `plans` limit
E015 1   glob patterns that test more op names than the `glob_names` limit
E016 1   a pipeline plan whose micro-batch copies pass the `pipeline_copies` limit
E100 1   the parser failed with no located message (a bug)
E101 1   an unexpected token
E102 1   unexpected end of file (an unclosed block)
E103 1   an unknown unit
E104 1   a bad string: unterminated, an invalid escape or a control character
E105 1   a `-` or `+` where none may be (quantities cannot be negative)
E106 1   an unexpected character
E107 1   an unmatched `}`
E108 1   `nan` or `inf` where a number is expected
E109 1   `fmt`: a `;` the canonical layout cannot drop (the statements it separates read otherwise
         without it; they are not valid as written)
E201 1   a graph, cluster or plan defined twice
E202 1   an op defined twice in a graph
E203 1   an unknown op
E204 1   a pattern that matches no op
E205 1   a device defined twice in a cluster
E206 1   a `[*]` selector that matches no device
E207 1   an unknown device
E208 1   a plan names an unknown graph or cluster
E210 1   an unknown attribute
E211 1   a `[...]` selector on an attribute that takes none
E212 1   an attribute given twice
E213 1   a number where a name is expected
E214 1   a unit where a plain number is expected
E220 1   a quantity without its unit
E221 1   a name where a quantity or a plain number is expected (`inf` and `nan` included)
E222 1   a quantity in the wrong unit (a time for a size, ...)
E223 1   a quantity above its valid range
E230 1   an edge from an op to itself
E231 1   a graph with a cycle
E232 1   an op with neither `time` nor `flops`
E233 1   `<->` in a graph (edges have one direction)
E234 1   a `backward_of` that names its own op or another backward op
E235 1   under `objective pipeline`, a backward op that comes before its forward op (no path of
         edges leads from the forward op to it)
E236 1   a `tie` of fewer than two ops
W236 0   a `colocate` of one op (it does nothing)
E237 1   a `tie` whose bytes exceed a tied op's `params` (all its ties together)
E238 1   two ops tied together twice
E239 1   Python API: colocation groups that share an op (the language merges them)
E240 1   a device without `memory`
E241 1   a `speed`, `flops` or `bandwidth` that is not positive
E242 1   `[*]` in a device declaration
E243 1   a link without `bandwidth`
E244 1   devices of a cluster with no link between them
E245 1   an empty device range
E246 1   a device range, or the clusters of one load, over the `devices` limit
E247 1   a cluster with no devices
E250 1   an op placed or pinned on two devices
E251 1   an op pinned to a device and placed on another
E252 1   colocated ops pinned (or placed by `place`) on different devices
E253 1   an op with no compute time on some device of its plan
E254 1   a plan without its `graph` or `cluster`
E255 1   an unknown memory or contention model
E256 1   an unknown objective or schedule, or a pipeline setting that does not apply
         (`data_parallel` under `interleaved`)
W256 0   `time[KIND]` names a device kind no device of the spec has
E257 1   a `microbatches`, `stages_per_device`, `data_parallel` or `microbatch_size` that is not a
         whole number in range (`data_parallel` may be `auto`, and at most the cluster's devices)
W257 0   `data_parallel N` with fewer `microbatches` than pipelines: some of them get none
E258 1   under `objective pipeline`, pins that split a pipeline unit (an op and its `backward_of`
         ops, with their colocation groups) between devices
W258 0   a pipeline plan that no split can interleave (it runs as `1f1b`)
E259 1   `stages_per_device` above the number of pipeline units of the graph
E260 1   a positive quantity below its valid range
E261 1   an empty name, or one with a control, format (bidi, zero-width) or surrogate character
E262 1   a name that mixes Latin with Cyrillic or Greek letters
E263 1   a name that looks like another, different name of the spec
E264 1   a name not in Unicode NFKC form
W265 0   a comment that holds control, bidi or zero-width characters (they can make a reviewer read
         other code than the parser does)
W266 0   a size that is not a whole number of bytes (`params 1.5 B`): read rounded up, a device's
         `memory` down
E290 1   Python API: a value that is not a number (wrong type, NaN) where a quantity is expected
E301 3   a placement unit (op or colocation group; under `objective pipeline`, a forward op
         with its backward ops and their groups) larger than any device it may use
E302 3   the ops pinned to a device need more memory than it holds
E303 3   the plan's least total memory exceeds all devices together
E304 3   a placement unit with no device (no op time applies, or pins conflict)
E305 3   an edge must cross between devices that no link joins that way
E306 3   a placement unit larger than any device it may use once the inputs it must hold (each
         producer, or a copy of its tensor) are counted
E307 3   placement units that cannot share a device two by two outnumber the devices that can take
         them
E401 3   the simulated plan violates the spec (each violation is listed)
E500 1   a placement or stages file that is not valid JSON
E501 1   a placement file without a `placement` object
E502 1   an unsupported plan file format or version
E503 1   an unknown op in a placement or stages file
E504 1   an unknown device in a placement or stages file (`replicas` included)
E505 1   a placement or stages file that leaves ops unplaced
E506 1   the spec's `place`/`pin` statements leave ops unplaced
E508 1   a placement file `order` that is not lists of op names, or lists an op under a device
         its `placement` does not put it on (or twice), or leaves out an op placed there
E509 1   a placement file `start_s` that is not finite seconds per op
E510 1   a `simulate --stages` file that is not a list of stages (`{"ops": [...], "devices": [...]}`
         each), nor an object whose `stages` or `pipeline.stages` is one
E511 1   a stages file that lists an op in two stages (or twice)
E512 1   a stages file that lists a device twice in a stage, or a replicated stage's device in
         another stage
E513 1   a stages file with a stage of no ops or no devices
E514 1   a plan file `replicas` that is not disjoint groups of devices, each named by its stage's
         device and listing it first
E515 1   a plan file `recompute` that is not a list of device names, or that names a device
         that runs no stage, or a replica without its stage's device, or any device of an
         inference graph (no backward ops)
E516 1   a placement file made for another plan of the spec (its `plan`), or for another graph
         (no op it places is the plan's)
E517 1   a `--json` report's `devices` that is not a list of device rows (`name`, `ops`), or
         that contradicts its `placement` (a device or an op listed twice, an op in another
         device's row, a device the placement uses and no row names)
E518 1   a `--json` report given to `--stages` whose stages put an op on another device than
         its `placement` (its plan splits a pipeline unit: simulate it with `--placement`)
E601 2   an unknown algorithm
E602 2   no plan of that name, or several plans and no `--plan`
E603 2   a `solve --time-limit` outside 0 to 1e6 s, or not a finite number
E604 2   an output path that cannot be written (no such folder, a folder, a path ending in
         `/`, not a regular file, a file you may not write), or `-`, which would be a file
         named `-`
E605 2   an option that does not apply to the chosen `--algo` (in Python, a `solve` option the
         algorithm does not take)
E606 2   a command-line parse error (in the `--json` envelope)
E607 130 interrupted by the user (an error whether or not the best plan so far was kept)
E608 2   a `solve --gap` that is negative or not a finite number
E609 2   `planner explain`: an unknown code
E611 2   an invalid `compare` sweep value (`--bandwidth`, `--memory`, ...)
E612 2   an unknown `--executor`
E613 2   `--executor ray` without the `ray` package
E614 2   a rows file of no rows format: `--out` or `--resume` not .csv, .json or .jsonl, or a
         `--resume` .json (rows are appended as lines)
E615 2   a `--resume` file line that is not a result row of this sweep
E616 2   `--algos` names no algorithm
E617 2   no SPEC given and no default specs folder here
E618 2   a `compare --time-limit` outside 0 to 1e6 s, or not a finite number
E619 2   nothing to compare: the spec files found define no plan (cluster libraries), or none of
         the `--plan` name
E620 2   `--jobs` not a positive number
E621 4   `compare` workers crash before finishing any point
E622 2   an output that is not a regular file when it is written (a device, a FIFO, a folder, or a
         symlink to one), or one you may not write (`chmod 444`): nothing is written
E623 4   writing an output failed (a full disk, an I/O error): the file is left as it was
E624 2   `compare --microbatches` with no point under the pipeline objective (add `--objective
         pipeline`)
E625 2   an `--algo` that does not plan for the plan's objective (`pipedp`, `pipeilp`, `hybrid` and
         `uniform` plan pipelines; `cpsat` and `ilp` one pass), or that plans one pipeline where
         the plan's `data_parallel N` asks for N (`auto`, `hybrid`, `pipeilp`, `search` plan them)
W625 0   `compare`: points left out because their algorithm does not plan for their objective
E626 2   Python API: a `solve` option that does not exist, or a value it cannot take (a time limit,
         gap or seed out of range, a value of the wrong type)
W626 0   a pipeline plan torch's schedule cannot run as placed (more stages than micro-batches under
         1f1b, ...): `export torch --pipeline` would refuse it
E640 2   options that contradict each other (`--json` with another `--format`, two outputs in one
         file, an output that would overwrite an input, ...)
W640 0   a spec not in the canonical layout (`fmt --check` and `fmt --diff` read every file, then
         exit 5)
E641 1   `fmt -`: standard input that is not valid UTF-8
E642 1   `diff`: a file that holds no plan (invalid JSON, another format, a failed run), or a
         report's figure that is no number >= 0 or null
E643 2   `diff --fail-if-slower`: not a percentage of 0 or more
E644 2   `diff --fail-if-slower` without both makespans, or iterations (plan files need `--spec`;
         a one-pass plan has no iteration)
E645 5   `diff --fail-if-slower`: the new plan is slower than allowed, or violates the spec
W645 0   `diff`: the new plan is slower than the old one, or violates the spec (the old one did not)
E646 2   `simulate --stages` on a plan without `objective pipeline`
E647 2   `diff`: two plans with no op in common (plans of different graphs)
W650 0   `compare` skipped a spec of a folder because it does not load
E701 3   the plan's least total memory exceeds all devices together => E303
W701 0   a spec skipped by `compare`; ONNX ops without a FLOP formula => W650, W940
E702 3   a placement unit larger than the largest device => E301
W702 0   ONNX tensors left without a shape => W941
E703 3   the ops pinned to a device need more memory than it holds => E302
E704 3   a heuristic found no device for an op (out of memory, or pin and group leave none)
E705 1   `--algo expert` on a plan that leaves ops unplaced => E506
E706 3   `--algo single`: no one device can hold or run every op
E707 3   `pipedp`: no contiguous pipeline split fits the devices' memory, follows the devices the
         pins leave each unit, or gives each device its `stages_per_device`
E708 3   `pipeilp`: no pipeline placement fits the devices' memory, even recomputing activations
         (the solver's proof)
E709 6   `pipeilp`: no placement found within the time limit (or among the placements its model
         covers; under `data_parallel N`, as N identical pipelines) and no contiguous split
         fits, even recomputing: not a proof that none exists
E710 4   m-SCT's LP relaxation failed
E711 4   `pipeilp`: the solver failed and no contiguous split fits, even recomputing (under
         `data_parallel N`, as N identical pipelines)
E712 3   `hybrid`: no layout of stages, replicated or not (each on N replicas under `data_parallel
         N`), fits the devices' memory and honours the devices each unit may use, in the cluster's
         order; `data_parallel N` (pipeilp): a pin to a device that starts no block of N
E810 3   a placement unit that no device may run => E304
E811 6   the exact solver found no plan (out of time, or given none) where the heuristics
         found none: not a proof that none exists (a longer `--time-limit` may find one)
E812 4   the exact solver failed (crashed, or gave an answer that the exact check or the
         simulator rejects) and no heuristic plan is left
E813 3   the exact model is infeasible (memory `static`: no plan exists)
E814 2   a model file format the solver cannot write
E815 2   the model file cannot be written
E816 3   `--algo auto`: no algorithm found a plan the simulator accepts
E817 3   ops forced onto two devices with no link between them => E305
E818 3   memory `liveness`: the exact model (static memory) is infeasible and no heuristic found a
         plan; not a proof
E819 3   memory `liveness`: `auto` or `search` simulated every placement and per-device order
         and none fits; a proof
E820 2   an unknown solver name (`--solver`, or `solver=` in Python): no profile, no Pyomo solver of
         that name, no program of that name on PATH; `asl:NAME` with no program NAME on PATH;
         a `NAME:SUBSOLVER` other than `asl:` and `gams:` (`highs:foo`) (a known solver not
         installed here falls back)
E821 6   memory `liveness`: `auto` or `search` found no plan, and the time limit cut their
         enumeration of every placement and per-device order: not a proof that none exists (a
         longer `--time-limit` tries more plans)
E901 1   an ONNX file that cannot be read => E001, E003
E902 1   not a valid ONNX model (nodes in a cycle, nothing computed from an input), or shape
         inference failed
E911 1   a malformed PipeDream profile line
E912 1   a PipeDream edge naming an unknown node
E913 1   a PipeDream edge from a node to itself
E914 1   PipeDream edges that form a cycle
E915 1   a PipeDream node defined twice
W916 0   a PipeDream size that is not a whole number of bytes: read rounded up, from its digits,
         as a spec's (W266)
E917 1   a PipeDream `__getitem__(k)` of a layer whose `activation_size` lists fewer outputs
E920 1   an imported JSON file that is not valid JSON
E921 1   JSON in none of the formats `import json` reads
E922 1   an imported JSON graph with a malformed or missing field
E923 1   an unsupported interchange format version
E924 1   interchange edges that form a cycle
E925 2   `export json`: no such graph or plan, several and none chosen, or both
E926 2   `--cluster`: two `--cluster` files give one cluster name (not one cluster both import
         from a third file), or (`import json`) the file's own cluster or plan has the name of
         a `--cluster` file's cluster or of the plan made for it
W927 0   an `import` or `generate` option that means nothing without another, ignored:
         `--optimizer` without `--training`, `--times-kind` without `--times`, `import torch`'s
         `--kind`, `--warmup`, `--repeat` or `--threads` without `--measure`
E930 2   an invalid option of a generator or importer (dtype, profile, size)
E931 2   a `--cluster` file that defines no cluster
E932 1   a generated spec that does not load (a bug)
E933 2   no such model in the ONNX model zoo
E934 1   a malformed line or value in a `--times` file
E935 1   a `--times` file in none of the formats it may take (CSV, JSON, Chrome trace)
E936 1   a `--times` file that names no op of the imported graph
W937 0   names in a `--times` file that are no op (ignored)
E938 2   `import torch` or `export torch` without the `torch` package
E939 1   a PyTorch model that cannot be loaded (module, file, factory or its result)
W940 0   ONNX op types without a FLOP formula (counted 1 FLOP per output element)
W941 0   ONNX tensors left without a shape (counted 0 bytes)
E942 1   the PyTorch model cannot be captured by torch.export or torch.fx (data-dependent control
         flow, an output type, an op without a fake kernel, ...)
E943 2   invalid example inputs (`--input`, `--example`) for a PyTorch model
E944 1   the PyTorch model fails on its example inputs
E945 1   a plan whose ops do not match the traced PyTorch model
E946 1   `export torch --pipeline`: the plan's stages do not begin at modules that torch's
         SplitPoint can name (the nearest split that does is offered; `--nearest` exports it)
E947 1   `export torch --pipeline`: a plan torch's pipeline schedules cannot run as placed (no
         `objective pipeline`, a device with several stages, too few micro-batches) or on the
         `--ranks` asked
W948 0   PyTorch ops that may do matrix work without a FLOP formula (timed by bytes moved only)
E949 1   an accelerate `device_map` that does not cover the spec's ops or names devices the cluster
         lacks
E950 1   `export torch --pipeline`: a hybrid plan's replicated stages that a 2-D DeviceMesh
         (pipeline x data) cannot run: stages replicated unequally, micro-batches that do not split
         evenly over the replicas, `--ranks`
W950 0   `export torch` without --pipeline: a hybrid plan's replicated stages are left out (the
         model is placed once)
E951 1   `export torch --nearest`: the nearest module-level plan breaks the spec (a pin, a device's
         memory): it is not exported
W952 0   `export torch` without --pipeline: a pipeline plan's activation recomputation is left out
         (the placed model and its device_map keep every activation)
W953 0   `export torch`: a `--device-map` that names some of the devices the plan places ops on
         (with --pipeline, the ranks run on) and leaves the others to the default rule (by kind)
E990 4   out of memory
E991 1   input too deeply nested
E999 4   internal error: a bug in planner
"""


def _parse_rows(rows: str) -> tuple[Code, ...]:
    """The `Code`s of a table written as `ROWS` is."""
    joined: list[str] = []
    for line in rows.splitlines():
        if line[:1].isspace():
            joined[-1] += " " + line.strip()
        else:
            joined.append(line)
    table = []
    for row in joined:
        code, exit_status, text = row.split(None, 2)
        meaning, _, retired = text.partition(" => ")
        table.append(Code(code, int(exit_status), meaning, retired))
    return tuple(table)


TABLE: tuple[Code, ...] = _parse_rows(ROWS)

CODES: dict[str, Code] = {c.code: c for c in TABLE}


#: codes outside layer 3 ("proofs that no plan exists") that prove it too: the exact
#: model's infeasibility under static memory, and the enumeration of every plan
PROOFS_ELSEWHERE = frozenset({"E813", "E819"})


def proves_none(code: str) -> bool:
    """Whether a diagnostic of this code proves that no plan exists (not only that one
    algorithm found none, as a heuristic's E704 or E811 after it)."""
    return code.startswith("E3") or code in PROOFS_ELSEWHERE


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


def near_code(code: str) -> tuple[str, ...]:
    """`explain`'s hint for an unknown code: the registered code fewest edits away (at most
    two; then one of the same letter, then the nearest number: W646 -> W645, not W266), or
    what a code looks like when none is near."""
    digits = code[1:]
    number = int(digits) if digits.isascii() and digits.isdecimal() and len(digits) < 7 \
        else None

    def rank(c: str) -> tuple[int, bool, int]:
        return (_edits(code, c), c[0] != code[:1],
                0 if number is None else abs(int(c[1:]) - number))

    best = min(CODES, key=rank, default=None)
    if best is not None and _edits(code, best) <= 2:
        return (f"did you mean `{best}`?",)
    return ("a code is E (error) or W (warning) and three digits, as diagnostics print it: "
            "`error[E645]`",)


def _edits(a: str, b: str) -> int:
    """Levenshtein distance between two short strings."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]
