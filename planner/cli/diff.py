"""`planner diff OLD.json NEW.json [--spec S] [--plan NAME] [--fail-if-slower PCT]`: what a
change did to a plan, for review, and a pull-request gate on its makespan.

Exit 0 (or 1, 2 as usual); 5 when `--fail-if-slower PCT` is given and the new plan is more
than PCT % slower than the old one, or violates the spec when the old one did not.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..errors import Diagnostic, Severity, Span, UsageError, render_all
from ..render.diagnostics import printable
from ..render.formats import OutputFormat
from ..units import format_bytes, format_bytes_of, format_seconds
from .guard import EXIT_GATE, chosen_format, guard
from .options import LimitOption, RootOption
from .plandiff import (
    DeviceLoad,
    PlanDiff,
    Side,
    compare,
    one_plan,
    read_side,
    roles,
    simulate_side,
    spec_problem,
)

#: moved ops listed in the text output (all of them are in the JSON)
SHOWN = 10


def diff_command(
    old: Annotated[Path, typer.Argument(
        help="The plan before: a plan file (solve --out) or solve/simulate --json output.")],
    new: Annotated[Path, typer.Argument(help="The plan after, in either form.")],
    spec: Annotated[Path | None, typer.Option(
        "--spec", help="Simulate both plans on this spec when a file lacks figures "
        "(makespan, bound, memory); read, and checked, in any case.")] = None,
    plan: Annotated[str | None, typer.Option(
        "--plan",
        help="The spec's plan (default: the one the old file names, or the only one).")] = None,
    fail_if_slower: Annotated[float | None, typer.Option(
        "--fail-if-slower", metavar="PCT", show_default=False,
        help="Exit 5 when the new makespan is more than PCT % above the old one (or the new "
        "plan violates the spec).")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print one JSON document on stdout.")] = False,
    output: Annotated[OutputFormat | None, typer.Option(
        "--format", "--output-format", case_sensitive=False, show_default=False,
        help="Output: text, json, github (annotations) or sarif.")] = None,
    limit: LimitOption = None,
    root: RootOption = None,
) -> None:
    """Compare two plans: makespan, bound and memory before and after, the ops that moved."""
    with guard("diff", chosen_format(output and output.value, as_json)) as report:
        if as_json and output not in (None, OutputFormat.JSON):
            raise UsageError(Diagnostic("E640", f"--json and --format {output.value} "
                                        "contradict each other", None, ("give one of them",)))
        if fail_if_slower is not None and not (
                fail_if_slower >= 0 and math.isfinite(fail_if_slower)):
            raise UsageError(Diagnostic("E643", f"--fail-if-slower: `{fail_if_slower}` is not "
                                        "a percentage of 0 or more", None,
                                        ("for example --fail-if-slower 5 (5 % slower at most)",)))
        if plan is not None and spec is None:
            raise UsageError(Diagnostic("E640", "--plan applies only with --spec", None,
                                        ("give the spec to simulate the plans on: --spec SPEC",)))
        before, after = read_side(old), read_side(new)
        report.subject = after.file
        if spec is not None:  # read even when both files carry figures: a wrong path says so
            problem, plans = spec_problem(spec, plan, before)
            if not (before.has_figures and after.has_figures):
                one_plan(before, after, plans)
                simulate_side(before, problem, plans)
                simulate_side(after, problem, plans)
        result = compare(before, after)
        report.result = result.to_json()
        verdict = _judge(result, fail_if_slower, spec is not None)
        report.diagnostics.extend(verdict)
        if report.output in ("text", "github"):
            out = sys.stdout if report.output == "text" else sys.stderr
            out.write(render_text(result))
        if report.output == "text" and verdict:
            sys.stderr.write(render_all(verdict) + "\n")
        failed = any(d.code == "E645" for d in verdict)
        report.result["gate"] = None if fail_if_slower is None else {
            "fail_if_slower_pct": fail_if_slower, "passed": not failed}
        if failed:
            raise typer.Exit(EXIT_GATE)


def _judge(d: PlanDiff, gate: float | None, have_spec: bool) -> list[Diagnostic]:
    """W645 for a slower plan or one that violates the spec; E645 when it fails the gate;
    E644 when the gate lacks the figures it needs."""
    where = Span.start_of(d.new.file)
    hint = (_what_changed(d),)
    if d.new.feasible is False and d.old.feasible is not False:  # whatever it costs
        why = (f"`planner simulate SPEC --placement {d.new.file}` lists its violations",)
        if gate is None:
            return [Diagnostic("W645", "the new plan violates the spec (the old one did not)",
                               where, why, severity=Severity.WARNING)]
        return [Diagnostic("E645", "the new plan violates the spec (the old one did not)",
                           where, why)]
    (label, a, b), pct = d.measure, d.slower_pct
    if pct is None and d.old.never_ends:  # it did not run: the new plan is no regression
        return []
    if pct is None or a is None or b is None:
        if gate is None:
            return []
        lacking = d.old if a is None else d.new
        what, advice = "", ("its plan may not run on the spec" if have_spec else
                            "give --spec SPEC to simulate the plans, or compare `planner "
                            "solve --json` outputs")
        if _one_pass(d, lacking):  # figures it has: neither --spec nor --json brings one
            what, advice = (" (a one-pass plan: no pipeline runs it)", "gate two plans of "
                            "one objective: one-pass plans' makespans or pipeline plans' "
                            "iterations")
        raise UsageError(Diagnostic(
            "E644", f"--fail-if-slower needs both {label}s, and {lacking.file} has none{what}",
            Span.start_of(lacking.file), (advice,)))  # at the file lacking them
    change = f"{a * 1e3:.6g} ms -> {b * 1e3:.6g} ms"
    if gate is not None and pct > gate:
        return [Diagnostic("E645", f"the new plan is {_pct(pct)} slower than the old one "
                           f"({change}): more than --fail-if-slower {gate:g} % allows",
                           where, hint)]
    if pct > 0:
        return [Diagnostic("W645", f"the new plan is {_pct(pct)} slower than the old one "
                           f"({change})", where, severity=Severity.WARNING)]
    return []


def _what_changed(d: PlanDiff) -> str:
    """E645's hint: where to look, among what the review lists that did change."""
    parts = [w for w, on in (("the ops that moved", d.moved),
                             ("the devices whose order changed", d.reordered),
                             ("the replicated stages regrouped", d.regrouped),
                             ("the devices that recompute", d.recompute_changed),
                             ("the devices added to or removed from the cluster",
                              d.devices_added or d.devices_removed)) if on]
    if parts:
        return (f"look at {', '.join(parts[:-1])}{' and ' if len(parts) > 1 else ''}"
                f"{parts[-1]}: `planner diff OLD NEW` prints them")
    unordered = [s.file for s in (d.old, d.new) if not s.order]
    if unordered:
        return (f"no op moved; {' and '.join(map(shown, unordered))} "
                f"give{'s' if len(unordered) == 1 else ''} no order, so the simulator "
                "chose one: `planner simulate SPEC --placement FILE --json` lists the ops each "
                "device ran, in order")
    return ("no op moved and no device's order changed: the two files' figures come from "
            "what each run was judged on (its spec, its version of planner); diff plan files "
            "with --spec SPEC to judge both on one")


def _one_pass(d: PlanDiff, side: Side) -> bool:
    """Whether `side` lacks the iteration a pipeline plan beside it has because it is a
    one-pass plan (a makespan, no pipeline), not because it was not simulated."""
    return (d.measure[0] == "iteration" and side.iteration_s is None and side.has_figures
            and not side.never_ends)


def _pct(p: float) -> str:
    """`p` %, with two significant digits where two decimals would read 0.00% (a gate of
    0 % fails a plan 0.001% slower, and says so)."""
    if math.isinf(p):
        return "infinitely"
    return f"{p:.2g}%" if 0 < abs(p) < 0.005 else f"{p:.2f}%"


def shown(name: str) -> str:
    """A name from a plan file as the review prints it: control, bidi and zero-width
    characters, newlines and tabs included, written as escapes, so that no name can start
    a line of its own (a GitHub workflow command such as `::warning::`) or recolour one."""
    return printable(name).replace("\n", "\\n").replace("\t", "\\t")


def render_text(d: PlanDiff) -> str:
    """The review for people: figures side by side, moved ops, devices whose load changed.
    Every name goes through `shown`."""
    name = shown(d.new.plan or d.old.plan or "?")
    if d.old.plan and d.new.plan and d.old.plan != d.new.plan:  # two plans of the spec
        name = f"{shown(d.old.plan)} -> {name}"
    rows = _figure_rows(d)
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [f"plan {name}: {shown(d.old.file)} -> {shown(d.new.file)}"]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
              for r in rows]
    lines += [f"  ({shown(s.file)} is a one-pass plan: no iteration to compare)"
              for s in (d.old, d.new) if _one_pass(d, s)]
    lines += [f"  ({shown(s.file)}'s pipeline never ends: its stages wait on each other)"
              for s in (d.old, d.new) if s.never_ends]
    if not (d.old.has_figures and d.new.has_figures):
        lines.append("  (no finite makespan: a plan that does not finish on the spec)"
                     if "simulated" in (d.old.source, d.new.source) else
                     "  (figures need a simulation: give --spec SPEC)")
    return "\n".join([*lines, *_op_lines(d), *_order_lines(d), *_group_lines(d),
                      *_device_lines(d)]) + "\n"


def _figure_rows(d: PlanDiff) -> list[tuple[str, str, str, str]]:
    """The table: makespan, lower bound, feasibility and each device's peak memory."""
    def sec(v: float | None) -> str:
        return "-" if v is None else format_seconds(v)

    def size(load: DeviceLoad | None) -> str:
        """The peak as `solve` shows it beside its cap: one near the cap never reads as
        the cap (5.998 GiB of 6 GiB, not 6.00 GiB)."""
        peak = load.memory_peak_bytes if load else None
        if peak is None:
            return "-"
        cap = load.memory_cap_bytes if load else None
        return format_bytes(peak) if cap is None else format_bytes_of(peak, cap)[0]

    rows: list[tuple[str, str, str, str]] = [("", "old", "new", "change")]
    pct = d.slower_pct
    change = "" if pct is None else ("+" if pct > 0 else "") + _pct(pct)
    piped = d.measure[0] == "iteration"
    if piped:  # a pipeline's plans: compared by the iteration, one pass beside it
        rows.append(("iteration", sec(d.old.iteration_s), sec(d.new.iteration_s), change))
        rows.append(("iteration bound", sec(d.old.iteration_bound_s),
                     sec(d.new.iteration_bound_s), ""))
    rows.append(("makespan (one pass)" if piped else "makespan", sec(d.old.makespan_s),
                 sec(d.new.makespan_s), "" if piped else change))
    rows.append(("lower bound (one pass)" if piped else "lower bound",
                 sec(d.old.lower_bound_s), sec(d.new.lower_bound_s), ""))
    rows.append(("feasible", _yes(d.old.feasible), _yes(d.new.feasible), ""))
    for dev in d.devices:
        a, b = d.old.devices.get(dev), d.new.devices.get(dev)
        pa, pb = a.memory_peak_bytes if a else None, b.memory_peak_bytes if b else None
        delta = "" if pa is None or pb is None or pa == pb else (
            ("+" if pb > pa else "-") + format_bytes(abs(pb - pa)))
        delta = ("removed" if dev in d.devices_removed else "added" if dev in d.devices_added
                 else delta)
        rows.append((f"peak memory {shown(dev)}", size(a), size(b), delta))
    return rows


def _op_lines(d: PlanDiff) -> list[str]:
    """The moved ops (the first `SHOWN`), then the added and removed ones."""
    common = len(set(d.old.placement) & set(d.new.placement))
    lines = [f"{len(d.moved)} of {common} op(s) moved" + (":" if d.moved else "")]
    lines += [f"  {shown(op)}: {shown(a)} -> {shown(b)}" for op, a, b in d.moved[:SHOWN]]
    if len(d.moved) > SHOWN:
        lines.append(f"  and {len(d.moved) - SHOWN} more")
    for label, ops in (("added", d.added), ("removed", d.removed)):
        if ops:
            more = f" and {len(ops) - SHOWN} more" if len(ops) > SHOWN else ""
            lines.append(f"{label} {len(ops)} ops: " + ", ".join(map(shown, ops[:SHOWN]))
                         + more)
    return lines


def _order_lines(d: PlanDiff) -> list[str]:
    """The devices whose kept ops run in another order, and how many changed position."""
    if not d.reordered:
        return []
    return [f"{len(d.reordered)} device(s) whose order changed:",
            *(f"  {shown(dev)}: {n} of {m} ops changed position" for dev, n, m in d.reordered)]


def _group_lines(d: PlanDiff) -> list[str]:
    """A hybrid plan's replica groups that changed, and the devices that recompute."""
    def names(devs: tuple[str, ...]) -> str:
        return ", ".join(map(shown, devs)) or "none"

    lines = []
    if d.regrouped:
        lines.append(f"{len(d.regrouped)} replicated stage(s) regrouped:")
        lines += [f"  stage on {shown(k)}: {names(a)} -> {names(b)}" for k, a, b in d.regrouped]
    if d.recompute_changed:
        lines.append(f"recompute: {names(d.old.recompute)} -> {names(d.new.recompute)}")
    return lines


def _device_lines(d: PlanDiff) -> list[str]:
    """Each device whose load changed: its op count, and its busy time when both have one."""
    lines = [f"{len(d.changed_devices)} device(s) whose load changed"
             + (":" if d.changed_devices else "")]
    for dev in d.changed_devices:
        a, b = d.old.devices.get(dev), d.new.devices.get(dev)
        if dev in d.devices_removed:
            lines.append(f"  {shown(dev)}: removed from the cluster (had {a.ops if a else 0} "
                         "ops)")
            continue
        if dev in d.devices_added:
            lines.append(f"  {shown(dev)}: added to the cluster ({b.ops if b else 0} ops)")
            continue
        text = f"  {shown(dev)}: {a.ops if a else 0} -> {b.ops if b else 0} ops"
        if a and b and a.busy_s is not None and b.busy_s is not None:
            text += f", busy {format_seconds(a.busy_s)} -> {format_seconds(b.busy_s)}"
        was, now = _role(d.old, dev), _role(d.new, dev)
        lines.append(text + (f"; {was} -> {now}" if was != now else ""))
    return lines


def _role(side: Side, dev: str) -> str:
    """What `dev` does beyond its placed ops in `side`: a replica of a stage, recomputing."""
    of, again = roles(side).get(dev, ("", False))
    what = [f"a replica of the stage on {shown(of)}"] if of else []
    return ", ".join([*what, *(["recomputes"] if again else [])]) or "no replica"


def _yes(v: bool | None) -> str:
    return "-" if v is None else ("yes" if v else "no")

