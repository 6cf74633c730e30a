"""The fuzz target: load -> check -> solve (metf, heft) -> simulate -> JSON and HTML, and
the same bytes read as each data file a command takes and written out in each format.

`one_input(data)` runs the pipeline on one input and asserts:

- no exception but planner's own diagnostics (`PlannerError` and subclasses, which must
  also render);
- every phase within `BASE_S + PER_BYTE_S * len(data)` seconds (times `Harness.slack`);
- `check` ok => every later stage succeeds or raises a `PlannerError`;
- `surfaces`: the bytes as a `--times` file, a `--placement` file (simulated on a fixed
  spec) and a side of `planner diff` (rendered as text and as GitHub annotations) are
  read or refused with a diagnostic; the input spec's diagnostics as GitHub annotations
  and SARIF, and its names in `compare` rows as CSV, are written so that no line is a
  workflow command of the input's making, the SARIF parses strictly, and every CSV cell
  reads back as it was with none that a spreadsheet would run.

A finding is recorded (`Harness.findings`, one per exception type and place) and, in
strict mode, raised so the engine stops on it. Exceptions that match `KNOWN_ISSUES` are
counted, not reported: they belong to the spec layer, which is another change's work.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import re
import shutil
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: seeds: the small specs of specs/ and tests/ (broken ones included)
SEED_GLOBS = ("specs/**/*.plan", "tests/spec/broken/*.plan", "tests/spec/valid/**/*.plan",
              "tests/algorithms/specs/*.plan",
              # the data files of `surfaces`: times, placements, plan files, envelopes
              "fuzz/seeds/*")
SEED_MAX_BYTES = 8192
#: time bound of one phase: BASE_S + PER_BYTE_S * input bytes (then times the slack)
BASE_S = 3.0
PER_BYTE_S = 1e-3
ALGORITHMS = ("metf", "heft")
#: plans solved per input (a spec may define many)
MAX_PLANS = 2

#: Crashes another change is fixing, counted apart instead of reported: (exception type, a
#: regex over the innermost planner frame `file:function`, why); remove an entry once its
#: fix lands, so that the fuzz test guards it. Empty
#: since the spec layer range-checks every quantity and restricts names (part A of issue
#: 13 fixed what was listed: overflows from `time 1e308 s` or `output 9000000 TiB`,
#: subnormal rates, huge integers in the exact models, lone surrogates, deep nesting).
KNOWN_ISSUES: tuple[tuple[str, str, str], ...] = ()

_IMPORT = re.compile(rb'import\s*"([^"]*)"')

#: The structure-aware half: a valid spec whose numbers, units, names and options come
#: from the input's bytes, so extreme values (1e308, 1e-320, huge counts) reach the
#: solvers, the simulator and the writers instead of dying in the parser.
TEMPLATE = """cluster k {{
  device gpu[0..{ndev}] {{ kind v100  memory {mem}  flops {dflops}  speed {speed} }}
  device {devname} {{ kind cpu  memory {mem2}  flops {dflops2} }}
  link gpu[*] <-> gpu[*] {{ bandwidth {bw}  latency {lat} }}
  link {devname} <-> gpu[*] {{ bandwidth {bw2} }}
}}
graph g {{
  op a {{ time {t1}  output {b1} }}
  op {opname} {{ flops {flops}  params {b2}  output {b3}  temp {b4} }}
  op c {{ time {t2}  time[cpu] {t3}  output {b5} }}
  op d {{ time {t4} }}
  a -> {opname}  a -> c {{ bytes {b6} }}  {opname} -> d  c -> d
}}
plan p {{ graph g  cluster k  contention {contention}  memory {memory}{extra} }}
"""
_UNITS = {"time": ("s", "ms", "us", "ns"), "bytes": ("B", "KiB", "MB", "GiB", "TiB"),
          "rate": ("B/s", "GB/s", "Gbps"), "flops": ("FLOP", "GFLOP", "TFLOP"),
          "flop_rate": ("FLOPS", "GFLOPS", "TFLOPS")}
_EXTREMES = (0.0, 1e-320, 5e-324, 1e-9, 1.0, 1e15, 1e300, 1.7e308, 1e308, 9e18, 2.0 ** 63)


def from_template(data: bytes) -> str:
    """A spec built from TEMPLATE with values drawn from `data` (atheris's provider)."""
    import atheris

    fdp = atheris.FuzzedDataProvider(data)

    def number() -> str:
        pick = fdp.ConsumeIntInRange(0, 15)
        if pick == 0:
            x = _EXTREMES[fdp.ConsumeIntInRange(0, len(_EXTREMES) - 1)]
        elif pick == 1:
            x = abs(fdp.ConsumeRegularFloat())
        else:  # ordinary sizes, so that most specs load and reach the later stages
            x = float(fdp.ConsumeIntInRange(1, 4096))
        return repr(x) if math.isfinite(x) else "1"

    def qty(kind: str) -> str:
        units = _UNITS[kind]
        return f"{number()} {units[fdp.ConsumeIntInRange(0, len(units) - 1)]}"

    def name(default: str) -> str:
        raw = fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 6))
        ok = "".join(ch for ch in raw if ch.isascii() and (ch.isalnum() or ch == "_"))
        return ok if ok[:1].isalpha() and ok not in ("gpu", "a", "c", "d") else default

    values = dict(  # noqa: C408 - keyword arguments read as a template's fields
        ndev=fdp.ConsumeIntInRange(0, 7), mem=qty("bytes"), dflops=qty("flop_rate"),
        speed=number(), devname=name("cpu0"), dflops2=qty("flop_rate"), mem2=qty("bytes"),
        bw=qty("rate"),
        lat=qty("time"), bw2=qty("rate"), t1=qty("time"), b1=qty("bytes"), opname=name("b"),
        flops=qty("flops"), b2=qty("bytes"), b3=qty("bytes"), b4=qty("bytes"),
        t2=qty("time"), t3=qty("time"), b5=qty("bytes"), t4=qty("time"), b6=qty("bytes"),
        contention=("none", "link", "device")[fdp.ConsumeIntInRange(0, 2)],
        memory=("static", "liveness")[fdp.ConsumeIntInRange(0, 1)],
        extra=("", "  pin a to gpu0", "  pin d to gpu0", "  place a, c on gpu0")[
            fdp.ConsumeIntInRange(0, 3)])
    return TEMPLATE.format(**values)


def seeds() -> list[Path]:
    """The seed files, sorted, each at most SEED_MAX_BYTES."""
    found = {p for g in SEED_GLOBS for p in ROOT.glob(g)
             if p.is_file() and p.stat().st_size <= SEED_MAX_BYTES}
    return sorted(found)


@dataclass
class Finding:
    """One class of unexpected failure: where, what, and a reproducer."""

    kind: str
    where: str
    message: str
    example: bytes
    count: int = 1


@dataclass
class Harness:
    """Runs inputs through the pipeline and keeps the figures of a run."""

    slack: float = 1.0
    strict: bool = False
    #: also run each input through `from_template` (needs atheris)
    templates: bool = False
    executions: int = 0
    findings: dict[tuple[str, str], Finding] = field(default_factory=dict)
    known: Counter[str] = field(default_factory=Counter)
    known_examples: dict[str, bytes] = field(default_factory=dict)
    outcomes: Counter[str] = field(default_factory=Counter)
    sandbox: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="planner-fuzz-")))

    def __post_init__(self) -> None:
        # imports in the seeds (`import "clusters/small4.plan"`) resolve inside a sandbox
        shutil.copytree(ROOT / "specs" / "clusters", self.sandbox / "clusters",
                        dirs_exist_ok=True)

    def close(self) -> None:
        """Remove the sandbox."""
        shutil.rmtree(self.sandbox, ignore_errors=True)

    def one_input(self, data: bytes) -> None:
        """Run `data` through the pipeline (module docstring)."""
        self.executions += 1
        if not _safe_imports(data):
            self.outcomes["skipped: import outside the sandbox"] += 1
            return
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:  # the file reader's own path: E004, located
            try:
                self.outcomes[_load_bytes(data, self.sandbox)] += 1
            except Exception as err:  # noqa: BLE001
                self._record(err, data)
            return
        try:
            self.outcomes[_pipeline(text, self.sandbox, self._bound(len(data)))] += 1
        except Exception as err:  # noqa: BLE001 - classifying every escape is the point
            self._record(err, data)
        try:
            self.outcomes["surfaces " + surfaces(data, self.sandbox)] += 1
        except Exception as err:  # noqa: BLE001
            self._record(err, data)
        if self.templates:
            spec = from_template(data)
            try:
                self.outcomes["template " + _pipeline(spec, self.sandbox,
                                                      self._bound(len(spec)))] += 1
            except Exception as err:  # noqa: BLE001
                self._record(err, spec.encode("utf-8"))

    def _bound(self, size: int) -> float:
        return (BASE_S + PER_BYTE_S * size) * self.slack

    def _record(self, err: Exception, data: bytes) -> None:
        kind = type(err).__name__
        where = _place(err)
        for known_kind, pattern, why in KNOWN_ISSUES:
            if kind == known_kind and re.search(pattern, where):
                self.known[f"{why} [{kind} at {where}]"] += 1
                self.known_examples.setdefault(f"{kind} at {where}", data)
                return
        key = (kind, where)
        if key in self.findings:
            self.findings[key].count += 1
            if len(data) < len(self.findings[key].example):
                self.findings[key].example = data  # keep the smallest reproducer
        else:
            self.findings[key] = Finding(kind, where, str(err)[:300], data)
        if self.strict:
            raise err

    def summary(self) -> dict[str, Any]:
        """The run's figures, JSON-ready."""
        return {
            "executions": self.executions,
            "outcomes": dict(self.outcomes.most_common()),
            "known_issues": dict(self.known),
            "findings": [
                {"kind": f.kind, "where": f.where, "message": f.message, "count": f.count,
                 "example_sha1": hashlib.sha1(f.example).hexdigest()[:12]}
                for f in self.findings.values()],
        }


class PhaseTooSlow(AssertionError):
    """A phase took longer than its bound for the input's size."""


def _pipeline(text: str, base: Path, bound: float) -> str:
    """One input's trip; returns how it ended (for the figures)."""
    from planner.errors import PlannerError, render_all

    def timed(phase: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            took = time.perf_counter() - t0
            if took > bound:
                raise PhaseTooSlow(f"{phase} took {took:.2f} s (bound {bound:.2f} s)")

    from planner.spec.checks import memory_diagnostics
    from planner.spec.load import load_text

    try:
        loaded = timed("load", load_text, text, "fuzz.plan", base)
    except PlannerError as err:
        timed("render", render_all, err.diagnostics, {"fuzz.plan": text})
        return "load: diagnostics"
    problems = list(loaded.spec.plans.values())[:MAX_PLANS]
    diags = []
    for problem in problems:
        diags += timed("check", memory_diagnostics, problem, loaded.locations)
    if diags:
        timed("render", render_all, diags, {"fuzz.plan": text})
        return "check: diagnostics"
    if not problems:
        return "check: ok, no plan"
    # check is ok: from here every stage must succeed or raise a PlannerError
    for problem in problems:
        for algo in ALGORITHMS:
            _solve_one(problem, algo, timed)
    return "solved"


def _solve_one(problem: Any, algo: str, timed: Any) -> None:
    from planner.algorithms import Options, run
    from planner.bounds import lower_bound
    from planner.errors import PlannerError, render_all
    from planner.render.html import plan_report_html
    from planner.render.report import report_json
    from planner.simulate import simulate
    from planner.strictjson import dumps

    try:
        solution = timed(f"solve {algo}", run, algo, problem, Options(time_limit_s=1.0))
    except PlannerError as err:
        timed("render", render_all, err.diagnostics)
        return
    result = timed("simulate", simulate, problem, solution.plan)
    bounds = timed("bounds", lower_bound, problem)
    timed("json", dumps, report_json(problem, result, bounds))
    timed("plan json", solution.plan.dumps, problem)
    timed("html", plan_report_html, problem, result)


def _load_bytes(data: bytes, base: Path) -> str:
    """Load bytes that are not UTF-8 from a file: a located diagnostic is expected."""
    from planner.errors import PlannerError, render_all
    from planner.spec.load import load_path

    path = base / "input.plan"
    path.write_bytes(data)
    try:
        load_path(path)
    except PlannerError as err:
        render_all(err.diagnostics)
        return "not UTF-8: diagnostics"
    return "not UTF-8: loaded"


def _safe_imports(data: bytes) -> bool:
    """Imports stay in the sandbox: no absolute path, no `..`, no device (confining them
    is the spec layer's job; the fuzzer must not read /dev/zero meanwhile)."""
    for path in _IMPORT.findall(data):
        if path.startswith(b"/") or b".." in path or b"\\" in path or b"~" in path:
            return False
    return True


def _place(err: BaseException) -> str:
    """The innermost frame inside planner (file:function), else the innermost frame."""
    frames = traceback.extract_tb(err.__traceback__)
    ours = [f for f in frames if "/planner/" in f.filename] or frames
    if not ours:
        return "?"
    f = ours[-1]
    name = f.filename
    if name.startswith(str(ROOT)):
        name = Path(name).relative_to(ROOT).as_posix()
    return f"{name}:{f.name}"


#: the spec that `--placement` and `diff --spec` inputs are read against
SURFACE_SPEC = """cluster c {
  device gpu0 { memory 1 GiB }
  device gpu1 { memory 1 GiB }
  link gpu0 <-> gpu1 { bandwidth 10 GB/s }
}
graph g {
  op a { time 1 ms  output 1 MB }
  op b { time 2 ms }
  a -> b
}
plan p { graph g  cluster c }
"""


class ForgedOutput(AssertionError):
    """An output that lets input text act as something planner did not write."""


def surfaces(data: bytes, base: Path) -> str:
    """`data` as each data file a command reads, and as names in each output format
    (module docstring); returns how it ended."""
    from planner.errors import PlannerError, render_all

    path = base / "data.input"
    path.write_bytes(data)
    ended = []
    for name, reader in (("times", _times), ("placement", _placement), ("diff", _diff)):
        try:
            reader(path)
            ended.append(f"{name} ok")
        except PlannerError as err:
            render_all(err.diagnostics)
            ended.append(f"{name} refused")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return ", ".join(ended)
    _written(text, base)
    return ", ".join(ended)


def _times(path: Path) -> None:
    from planner.io.times import read_times

    read_times(path)


def _placement(path: Path) -> None:
    from planner.cli.given import read_placed  # the command line's own reader
    from planner.simulate import simulate
    from planner.spec.load import load_text

    problem = load_text(SURFACE_SPEC).spec.plan()
    simulate(problem, read_placed(problem, path)[0])


def _diff(path: Path) -> None:
    from planner.cli.diff import render_text
    from planner.cli.plandiff import compare, read_side
    from planner.render.formats import github_annotations

    side = read_side(path)
    text = render_text(compare(side, read_side(path)))
    _no_forged_command(text + github_annotations([]), "diff")


def _written(text: str, base: Path) -> None:
    """The input's diagnostics in GitHub and SARIF form, and names from it in CSV rows."""
    from planner.compare.rows import dumps_rows, empty_row, parse_rows
    from planner.errors import PlannerError
    from planner.render.formats import github_annotations
    from planner.render.sarif import dumps_sarif
    from planner.spec.load import load_text
    from planner.strictjson import loads

    try:
        loaded = load_text(text, "fuzz.plan", base)
        diags = list(loaded.warnings)
        names = [*loaded.spec.plans, *(o.name for g in loaded.spec.graphs.values()
                                       for o in g.ops)][:20]
    except PlannerError as err:
        diags, names = list(err.diagnostics), []
    _no_forged_command(github_annotations(diags), "github")
    loads(dumps_sarif(diags, 1))
    lines = text.splitlines()[:5]
    names += [x for x in lines if x and all(ch.isprintable() for ch in x)]
    rows = [empty_row(spec="fuzz.plan", plan=n, algorithm="metf", status="feasible",
                      bandwidth="1x", memory="100%", devices="all", objective="spec",
                      microbatches="spec") for n in names]
    if rows:
        back, _ = parse_rows(dumps_rows(rows, "csv"), "csv")
        if [r["plan"] for r in back] != names:
            raise ForgedOutput("a CSV cell did not read back as written")
        cells = [c for row in csv.reader(io.StringIO(dumps_rows(rows, "csv"))) for c in row]
        if any(cell[:1] in ("=", "+", "-", "@", "\t", "\r") for cell in cells):
            raise ForgedOutput("a CSV cell a spreadsheet would run")


def _no_forged_command(text: str, where: str) -> None:
    for line in text.splitlines():
        if line.startswith("::") and not line.startswith(("::error ", "::warning ",
                                                          "::notice ")):
            raise ForgedOutput(f"{where}: a line is a workflow command of the input's: "
                               f"{line[:60]!r}")
