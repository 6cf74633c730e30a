"""A pipeline layout given as its stages: `planner simulate SPEC --stages FILE`, so that
anyone's layout (PipeDream's optimizer, Megatron's, a user's) is simulated under the
spec's model next to planner's plans.

The file is JSON: a list of stages, or an object whose `stages` holds that list, or one
whose `pipeline.stages` does (`solve --json`'s `result`, or the whole `--json` document:
the report of a pipeline plan reads back as it is). A stage is `{"ops": [op names],
"devices": [device names]}`; other keys (`busy_s`, `replicas`, ...) are ignored. The
devices that recompute their activations come from the object's (or its `result`'s)
`recompute`, as `solve --json` writes it (`plan.load_recompute`).

- **Devices.** A stage's first device is its representative: every op of the stage is
  placed there. A stage of 2+ devices is replicated over them (`planner.pipeline.hybrid`:
  micro-batch m on its (m mod r)-th device, the gradients all-reduced among them; under
  `interleaved` they run as 1F1B, as a plan file's `replicas` do). A device of a
  replicated stage belongs to that stage alone; others may run several stages (those of
  `interleaved`, or of a plan whose devices form no chain: `solve --json` reads back).
- **Ops.** An op belongs to one stage, and every op to some stage, except that a backward
  op (`backward_of`) not listed goes to its forward op's stage: a layout of forward ops
  is enough.

Diagnostics point into the file (`errors.JsonSpans`): E500 not JSON, E510 not a list of
stages, E503/E504 an unknown op or device (with a did-you-mean), E511/E512 an op in two
stages, or a replicated stage's device in another, E513 a stage of no ops or no devices,
E505 ops in no stage, E518 a report's stages that its `placement` contradicts.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import (
    Diagnostic,
    DiagnosticSink,
    JsonSpans,
    Span,
    SpecError,
    did_you_mean,
    json_type,
    quoted,
)
from ..model import Problem
from ..plan import Plan, in_envelope, load_recompute
from ..spec.load import read_source
from ..strictjson import loads as strict_loads

#: a place in the file: object keys and list indices from the top
Where = tuple[str | int, ...]

_EXAMPLE = '[{"ops": ["embed", "block0"], "devices": ["gpu0", "gpu1"]}, ' \
           '{"ops": ["block1", "head"], "devices": ["gpu2"]}]'
#: the hint of a stages file's invalid JSON (E500), here and where `simulate` reads it first
JSON_HINT = f"a stages file is JSON, for example {_EXAMPLE}"
#: the ops named in a message about ops in no stage
_SHOWN = 5


@dataclass(frozen=True, slots=True)
class Layout:
    """The stages as a plan (each op on its stage's first device) and the replicated
    stages' groups (representative device -> its devices, itself first)."""

    plan: Plan
    replicas: Mapping[int, tuple[int, ...]]
    #: the devices that recompute their activations, by name
    recompute: tuple[str, ...] = ()


def read_stages(problem: Problem, path: Path, shown: str) -> Layout:
    """Read the stages file at `path` (shown as `shown`) for `problem`."""
    return parse_stages(problem, read_source(path, shown, kind="stages"), shown)


def parse_stages(problem: Problem, text: str, shown: str = "<stages>") -> Layout:
    """The layout of a stages file's `text` (module docstring); `SpecError` with every
    problem found, located in the file."""
    try:
        data = strict_loads(text)
    except json.JSONDecodeError as err:
        raise SpecError(Diagnostic("E500", f"invalid JSON: {err.msg}",
                                   Span.at_json_error(shown, err),
                                   (JSON_HINT,))) from None
    reader = _Reader(problem, text, shown)
    stages, at = _stage_list(data)
    if stages is None:
        found = _at(data, at)
        raise SpecError(Diagnostic(
            "E510", "a stages file must be a list of stages, or an object whose `stages` "
            "(or `pipeline.stages`) is one" + (f"; its `{'.'.join(map(str, at))}` is "
                                               f"{json_type(found)}" if at else ""),
            reader.span(at),
            (f"for example {_EXAMPLE}",
             "a stage's first device holds its ops; its other devices hold replicas")))
    if not stages:
        raise SpecError(Diagnostic("E510", "the file lists no stage", reader.span(at),
                                   (f"for example {_EXAMPLE}",)))
    for k, stage in enumerate(stages):
        reader.stage(stage, (*at, k))
    reader.shared_replicas()
    reader.sink.raise_if_errors()
    reader.unlisted(at)
    reader.sink.raise_if_errors()
    body, where = in_envelope(data)
    layout = reader.layout()
    if isinstance(body, Mapping) and isinstance(body.get("placement"), Mapping):
        reader.agrees(body["placement"], layout.plan.placement, (*where, "placement"))
        reader.sink.raise_if_errors()
    again = load_recompute(problem, body, shown, text, where, layout.replicas,
                           layout.plan.placement) \
        if isinstance(body, Mapping) else ()
    return dataclasses.replace(layout, recompute=again)


def _stage_list(data: Any) -> tuple[list[Any] | None, Where]:
    """The list of stages and where it is: the document, or its `stages`, or its
    `pipeline.stages` (under `result` in a `--json` document); None when none is."""
    data, at = in_envelope(data)
    for key in ("pipeline", "stages"):
        if isinstance(data, dict) and key in data:
            data, at = data[key], (*at, key)
    return (data, at) if isinstance(data, list) else (None, at)


def _at(data: Any, at: Where) -> Any:
    """The value at `at` in `data`."""
    for step in at:
        data = data[step]
    return data


class _Reader:
    """The stages read so far, and the problems found."""

    def __init__(self, problem: Problem, text: str, shown: str) -> None:
        self.problem = problem
        self.text = text
        self.shown = shown
        self.sink = DiagnosticSink()
        self.where = JsonSpans(shown, text)  # each report's place in the file
        self.stage_of: dict[int, int] = {}  # op -> stage
        self.op_at: dict[int, Where] = {}
        self.device_at: dict[int, tuple[int, Where]] = {}  # device -> (its first stage, place)
        self.listed: list[tuple[int, int, Where]] = []  # (device, stage, place), in order
        self.groups: list[tuple[int, ...]] = []

    def span(self, at: Where) -> Span:
        return self.where(*at)

    def stage(self, stage: Any, at: Where) -> None:
        """Read stage `at[-1]`."""
        k = int(at[-1])
        if not isinstance(stage, dict):
            self.sink.error("E510", f"stage {k} must be an object with `ops` and `devices`, "
                            f"not {json_type(stage)}", self.span(at), f"for example {_EXAMPLE}")
            self.groups.append(())
            return
        ops = self._names(stage, "ops", at)
        devices = self._names(stage, "devices", at)
        for key, names in (("ops", ops), ("devices", devices)):
            if names == []:
                self.sink.error("E513", f"stage {k} has no {key[:-1]}", self.span((*at, key)),
                                f"give stage {k} at least one {key[:-1]}, or leave the stage out")
        for j, name in enumerate(ops or ()):
            self._op(name, k, (*at, "ops", j))
        group = [d for j, name in enumerate(devices or ())
                 if (d := self._device(name, k, (*at, "devices", j))) is not None]
        self.groups.append(tuple(group))

    def _names(self, stage: Mapping[str, Any], key: str, at: Where) -> list[str] | None:
        """`stage[key]` if it is a list of names (None after reporting otherwise)."""
        k = at[-1]
        names = stage.get(key)
        if isinstance(names, list) and all(isinstance(n, str) for n in names):
            return names
        where = (*at, key) if key in stage else at
        shape = (f"no `{key}`" if key not in stage else
                 f"`{key}` {json_type(names)}" if not isinstance(names, list) else
                 f"`{key}` holding {json_type(next(n for n in names if not isinstance(n, str)))}")
        self.sink.error("E510", f"stage {k} must have `{key}`: a list of "
                        f"{'op' if key == 'ops' else 'device'} names; it has {shape}",
                        self.span(where), f"for example {_EXAMPLE}")
        return None

    def _op(self, name: str, k: int, at: Where) -> None:
        i = self.problem.graph.op_index.get(name)
        if i is None:
            self.sink.error("E503", f"unknown op {quoted(name)} in stage {k}", self.span(at),
                            *self._hints(name, self.problem.graph.op_index,
                                         f"the ops of graph `{self.problem.graph.name}`"))
        elif i in self.stage_of:
            first = self.stage_of[i]
            self.sink.error("E511", f"op {quoted(name)} is listed in stage {first} and "
                            f"again in stage {k}" if first != k else
                            f"op {quoted(name)} is listed twice in stage {k}", self.span(at),
                            "an op runs in one stage: list it once",
                            notes=(("first listed here", self.span(self.op_at[i])),))
        else:
            self.stage_of[i] = k
            self.op_at[i] = at

    def _device(self, name: str, k: int, at: Where) -> int | None:
        d = self.problem.cluster.device_index.get(name)
        if d is None:
            self.sink.error("E504", f"unknown device {quoted(name)} in stage {k}",
                            self.span(at), *self._hints(
                                name, self.problem.cluster.device_index,
                                f"the devices of cluster `{self.problem.cluster.name}`"))
            return None
        if d in self.device_at and self.device_at[d][0] == k:
            self.sink.error("E512", f"device {quoted(name)} is listed twice in stage {k}",
                            self.span(at), "list each device of a stage once",
                            notes=(("first listed here", self.span(self.device_at[d][1])),))
            return None
        self.device_at.setdefault(d, (k, at))
        self.listed.append((d, k, at))
        return d

    def shared_replicas(self) -> None:
        """E512 for a device of a replicated stage that another stage lists too: a device
        may run several stages (`interleaved`'s, or a plan whose devices form no chain,
        as `solve --json` reports them: before, E512 refused planner's own reports), but a
        replica runs its stage alone."""
        for d, k, at in self.listed:
            first, where = self.device_at[d]
            if first != k and (len(self.groups[first]) > 1 or len(self.groups[k]) > 1):
                self.sink.error("E512", f"device {quoted(self.problem.cluster.devices[d].name)}"
                                f" is listed in stage {first} and again in stage {k}, and a "
                                "replicated stage's devices run it alone", self.span(at),
                                "a stage's first device holds its ops, the others its "
                                "replicas: a device of a replicated stage is in no other",
                                notes=(("first listed here", self.span(where)),))

    def _hints(self, name: str, candidates: Mapping[str, int], where: str
               ) -> tuple[str, ...]:
        """Did you mean, else a few of the names there are (`where`: whose they are)."""
        if self.sink.full:
            return ()
        close = did_you_mean(name[:200], candidates)
        if close:
            return close
        names = ", ".join(quoted(n) for n in itertools.islice(candidates, _SHOWN))
        more = f" and {len(candidates) - _SHOWN} more" if len(candidates) > _SHOWN else ""
        return (f"{where}: {names}{more}",)

    def unlisted(self, at: Where) -> None:
        """Backward ops to their forward op's stage; the ops then in no stage, reported."""
        graph = self.problem.graph
        for b, f in sorted(graph.backward_of.items()):
            if b not in self.stage_of and f in self.stage_of:
                self.stage_of[b] = self.stage_of[f]
        left = [i for i in range(len(graph.ops)) if i not in self.stage_of]
        if not left:
            return
        # a backward op whose forward op is missing too follows it once that is listed
        gone = set(left)
        missing = [graph.ops[i].name for i in left if graph.backward_of.get(i, -1)
                   not in gone] or [graph.ops[i].name for i in left]
        shown = ", ".join(quoted(m) for m in missing[:_SHOWN])
        more = f" and {len(missing) - _SHOWN} more" if len(missing) > _SHOWN else ""
        backward = len(left) - len(missing)
        theirs = f" (and {backward} backward op(s) of theirs)" if backward > 0 else ""
        self.sink.error("E505", f"the stages leave {len(missing)} op(s) in no stage: "
                        f"{shown}{more}{theirs}", self.span(at),
                        f"list {quoted(missing[0])} in a stage's `ops` (a backward op not "
                        "listed goes with its forward op)")

    def agrees(self, placed: Mapping[str, Any], placement: tuple[int, ...], at: Where) -> None:
        """E518 where a report's stages put an op on another device than its `placement`
        does: its plan splits a pipeline unit (an op away from its unit's stage), which a
        list of stages cannot say (before: `--stages` ran another plan, feasible, than
        the report's, E401)."""
        names = [d.name for d in self.problem.cluster.devices]
        for i, op in enumerate(self.problem.graph.ops):
            given = placed.get(op.name)
            if isinstance(given, str) and given != names[placement[i]]:
                self.sink.error("E518", f"the stages put op {quoted(op.name)} on "
                                f"{quoted(names[placement[i]])}, and the report's placement "
                                f"on {quoted(given)}: its plan splits a pipeline unit, which "
                                "stages cannot say", self.span((*at, op.name)),
                                "simulate the report with --placement, which reads its "
                                "placement as it is")
                return

    def layout(self) -> Layout:
        placement = tuple(self.groups[self.stage_of[i]][0]
                          for i in range(len(self.problem.graph.ops)))
        replicas = {g[0]: g for g in self.groups if len(g) > 1}
        return Layout(Plan(placement), replicas)


