"""The limits on what one load of specs may ask for: every one in this table.

A spec arrives in a pull request and `planner check` runs on it in CI; a few hundred bytes
must not be able to ask for hours of CPU or gigabytes of memory. Each limit is enforced
with a located diagnostic *before* the work or the memory it bounds is spent, and each
can be raised on the command line (`--limit NAME=VALUE`, repeatable) or in code
(`with limits.using(Limits(ops=2_000_000)): ...`); a command run in-process inside such a
block starts from its limits, its own `--limit` on top. Depends on nothing of ours.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits of one load. Parsing takes about 70 bytes of memory per byte of spec, so
    the default file size (32 MiB: about 150,000 ops as `bench/bench_parse.py` writes
    them, the 100,000-op benchmark included) keeps a load near 2 GB; every real spec we
    know is far smaller."""

    #: bytes of one input file (a spec, an import, a placement file): E007
    file_bytes: int = 32 * 1024 * 1024
    #: ops of one graph: E011
    ops: int = 500_000
    #: edges (chain hops) of one graph: E012
    edges: int = 2_000_000
    #: devices of one load, all clusters together (so of one `gpu[lo..hi]` range): E246
    devices: int = 1024
    #: directed device pairs the `link` statements of one load name, in all: E013
    link_pairs: int = 4 * 1024 * 1024
    #: op names tested against glob patterns, plus the ops they select, in all: E015
    glob_names: int = 20_000_000
    #: plans of one load: E014
    plans: int = 10_000
    #: files in one chain of imports (the file itself counts): E009
    import_depth: int = 64
    #: diagnostics shown per command; the rest are counted (E000)
    diagnostics: int = 100
    #: ops and edges of the copies of a graph that the simulation of a pipeline plan
    #: makes, one per micro-batch (micro-batches x (ops + edges)): E016. About
    #: `BYTES_PER_COPIED_ITEM` bytes each, so the default keeps a simulation near 2 GB
    pipeline_copies: int = 5_000_000


#: name -> what it bounds, for `--help`, errors and the README
DESCRIPTIONS: dict[str, str] = {
    "file_bytes": "bytes of one input file",
    "ops": "ops of one graph",
    "edges": "edges of one graph",
    "devices": "devices of one load (all clusters together)",
    "link_pairs": "directed device pairs named by the links of one load",
    "glob_names": "op names tested against glob patterns, and ops they select, per load",
    "plans": "plans of one load",
    "import_depth": "files in one chain of imports",
    "diagnostics": "diagnostics shown",
    "pipeline_copies": "ops and edges of a pipeline plan's graph copied per micro-batch",
}

#: memory of a pipeline simulation per op or edge of its copies (`pipeline_copies`),
#: measured on training chains of 1,000-2,000 ops with 1.5 to 4.5 edges per op and 64 to
#: 256 micro-batches: 360 to 400 bytes, about 1 KB per copied op with its edges (the 1.2
#: MB spec of issue 40, 20,000 ops and 1,024 micro-batches, passed 2.6 GB after 60 s)
BYTES_PER_COPIED_ITEM = 400

DEFAULTS = Limits()
#: the largest value `--limit` takes for any limit: 10**15, written `1e15` too (every whole
#: number up to it is exact as a float, so both forms name the same limit); far above what
#: any machine could load, and safe for every count and read size it bounds
MAX_VALUE = 10**15
#: the accepted range, as messages and hints say it
RANGE_TEXT = f"a whole number from 1 to {MAX_VALUE:_} (1e15)"
#: the environment variable that carries `--limit` items to child processes (`compare`'s
#: workers get them with each point too, `compare.executors.Settings`: a forkserver keeps
#: the environment it started with)
ENV = "PLANNER_LIMITS"
#: the environment variable that carries `--root` to child processes (as `ENV`)
ROOT_ENV = "PLANNER_ROOT"


def active() -> Limits:
    """The limits in force (the defaults unless `using` or `configure` changed them)."""
    return _active[-1]


def configure(items: Sequence[str], base: Limits = DEFAULTS) -> Limits:
    """Put `base` (the defaults unless given) with `NAME=VALUE` `items` in force for the
    rest of the process and its child processes (the command line does this, from the
    limits its caller has in force; `ValueError` on a bad item)."""
    limits = parse_overrides(items, base)
    _active[0] = limits
    del _active[1:]
    put_env(ENV, ",".join(items_of(limits)) or None)
    return limits


def put_env(name: str, value: str | None) -> None:
    """Set the environment variable `name` to `value`, or unset it where `value` is None
    (how `ENV` and `ROOT_ENV` reach child processes, and are put back)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


@dataclass(frozen=True, slots=True)
class Saved:
    """The limits in force at one moment (`saved`), for `restore` to put back: those
    `configure` set, each `using` still open on top, and what child processes inherit."""

    stack: tuple[Limits, ...]
    env: str | None


def saved() -> Saved:
    """The limits in force now, `using`'s included, for `restore` (a command run in-process
    puts back, when it ends, those of its caller, which its `configure` replaced)."""
    return Saved(tuple(_active), os.environ.get(ENV))


def restore(state: Saved) -> None:
    """Put back the limits of `saved()`: an open `using` block's among them, which can
    then end as it began."""
    _active[:] = state.stack
    put_env(ENV, state.env)


def items_of(limits: Limits) -> list[str]:
    """The `NAME=VALUE` items that make `limits` from the defaults (`configure` takes them):
    how a worker process gets the limits its parent has in force, `using`'s included."""
    return [f"{f.name}={getattr(limits, f.name)}" for f in dataclasses.fields(limits)
            if getattr(limits, f.name) != getattr(DEFAULTS, f.name)]


@contextlib.contextmanager
def using(limits: Limits) -> Iterator[Limits]:
    """Put `limits` in force for the duration."""
    _active.append(limits)
    try:
        yield limits
    finally:
        _active.remove(limits)


def parse_overrides(items: Sequence[str], base: Limits = DEFAULTS) -> Limits:
    """`base` with `NAME=VALUE` items applied (`ops=2_000_000`, `file-bytes=1e9`).

    Raises `ValueError` with a readable message on an unknown name or a value that is not
    a whole number from 1 to `MAX_VALUE` (the message states that range).
    """
    changes: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        key = name.strip().replace("-", "_")
        if not sep or key not in DESCRIPTIONS:
            raise ValueError(f"`{item}`: expected NAME=VALUE with NAME one of "
                             + ", ".join(DESCRIPTIONS))
        number = _whole(value)
        if number is None:
            raise ValueError(f"`{item}`: the value must be {RANGE_TEXT}")
        changes[key] = number
    return dataclasses.replace(base, **changes)


def _whole(text: str) -> int | None:
    """The whole number `text` names (`2000000`, `2_000_000`, `2e6`, in ASCII) when it is
    from 1 to `MAX_VALUE`; else None. Digits are read exactly, other forms as a float."""
    text = text.strip().replace("_", "")
    if not text.isascii():  # `int` and `float` read any script's digits (`１０`, `١٠`)
        return None
    try:
        number = int(text) if text.isdigit() else float(text)
    except (ValueError, OverflowError):
        return None
    if not 1 <= number <= MAX_VALUE or number != int(number):  # nan fails the range
        return None
    return int(number)


def pipeline_copies(microbatches: int, ops: int, edges: int) -> int:
    """The ops and edges the simulation of a pipeline of `microbatches` copies of a graph
    of `ops` ops and `edges` edges holds (the `pipeline_copies` limit counts them)."""
    return microbatches * (ops + edges)


def raise_hint(name: str, need: int, suggest: int | None = None, *,
               lead: str = "raise the limit with") -> str:
    """The hint of a diagnostic over limit `name`: `{lead} --limit NAME=VALUE` with a
    VALUE that `--limit` accepts, at least `need` (the least that would do) and `suggest`
    when that is more, never above `MAX_VALUE`; when even `MAX_VALUE` is less than
    `need`, it says so instead of suggesting a value that `--limit` would refuse."""
    if need > MAX_VALUE:
        return (f"`--limit {name}` takes at most {MAX_VALUE:_} (1e15), less than the "
                f"{need:_} this needs")
    value = min(max(need, suggest or need), MAX_VALUE)
    return f"{lead} `--limit {name}={value}`"


def _from_env() -> Limits:
    items = [x for x in os.environ.get(ENV, "").split(",") if x.strip()]
    try:
        return parse_overrides(items)
    except ValueError:
        return DEFAULTS  # a stale or hand-made value: the defaults are the safe side


_active: list[Limits] = [_from_env()]
