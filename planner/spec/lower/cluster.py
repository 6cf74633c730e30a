"""A cluster's declaration lowered: its devices (ranges expanded) and links.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ... import limits
from ...errors import DiagnosticSink, did_you_mean
from ...model import (
    Cluster,
    Device,
    Link,
)
from .. import ast
from ..ast import DEVICE_ATTRS, LINK_ATTRS
from .attrs import Attrs, device_hints
from .locations import Locations
from .resolve import Budget

_TRAILING_DIGITS = re.compile(r"[0-9]+\Z")


def _flop_rate(sink: DiagnosticSink, attrs: Attrs) -> float | None:
    """A device's `flops` rate, None where not given; one refused (said: E241 and the
    quantity's errors) is a stand-in rate, so that no op reads as unrunnable for it (before:
    an E253 per op with `flops`, "device has no `flops` rate")."""
    flop_rate = attrs.quantity("flops")
    if flop_rate is not None and flop_rate <= 0:
        sink.error("E241", "`flops` must be positive", attrs.values["flops"].value.span,
                   "for example `flops 15.7 TFLOPS`, or remove it (ops then need `time`)")
        flop_rate = None
    return 1.0 if flop_rate is None and "flops" in attrs.values else flop_rate


# complex: validates each device statement: a check and a message per attribute and rule
# (E240, E241, E242, E246, E205), E247, then the links and the E244 pairs without one
def lower_cluster(sink: DiagnosticSink, decl: ast.ClusterDecl, loc: Locations,
                  budget: Budget) -> Cluster | None:
    """The cluster of `decl` (None when its devices or links are past the load's
    budget), its devices' spans in `loc`."""
    cname = decl.name.text
    loc.clusters[cname] = decl.name.span
    if budget.devices < 0 or budget.link_pairs < 0:  # an earlier cluster used them up (said)
        return None
    devices: list[Device] = []
    index: dict[str, int] = {}
    failed: set[str] = set()  # prefixes of ranges refused (said): links to them say no more
    for d in decl.devices:
        attrs = Attrs(sink, d.attrs, DEVICE_ATTRS, "a device")
        memory = attrs.size("memory", down=True)
        if memory is None and attrs.missing("memory"):
            sink.error("E240", "device needs `memory`", d.ref.span,
                       "for example `memory 16 GiB`")
        speed = attrs.number("speed")
        if speed is not None and speed <= 0:
            sink.error("E241", "`speed` must be positive", attrs.values["speed"].value.span,
                       "`speed` divides `time` (default 1): for example `speed 0.5` for a "
                       "device half as fast")
            speed = None
        flop_rate = _flop_rate(sink, attrs)
        kind = attrs.name("kind")
        if d.ref.kind == "wild":
            sink.error("E242", "`[*]` selects existing devices; declare a range instead",
                       d.ref.span, f"for example `device {d.ref.name.text}[0..3]`")
            failed.add(d.ref.name.text)
            continue
        names = _expand_decl(sink, d.ref)
        if not names:
            failed.add(d.ref.name.text)
        if len(names) > budget.devices:
            max_devices = limits.active().devices
            where = (f"cluster `{cname}` would have" if len(devices) + len(names) > max_devices
                     else "the clusters of this load would have")
            need = max(budget.devices_written, devices_written(decl))  # lets the load through
            sink.error("E246", f"{where} more than {max_devices} devices",
                       d.ref.span, limits.raise_hint("devices", need, 2 * max_devices))
            budget.devices = -1  # said once: later clusters are not expanded
            return None  # nor this one's links (each would be an unknown device)
        budget.devices -= len(names)
        for name in names:
            if name in index:
                sink.error("E205", f"device `{name}` is defined twice in cluster `{cname}`",
                           d.ref.span, notes=(("first definition", loc.devices[(cname, name)]),))
                continue
            index[name] = len(devices)
            loc.devices[(cname, name)] = d.ref.span
            devices.append(Device(name, memory or 0, kind, speed or 1.0, flop_rate))
    if not decl.devices:  # no plan could run on it (every algorithm divides by its size)
        sink.error("E247", f"cluster `{cname}` has no devices", decl.name.span,
                   "declare them, for example `device gpu[0..3] { memory 16 GiB }`")
    links = _lower_links(sink, decl, index, budget, failed)
    if links is None:
        return None
    # counted, not listed: 1,024 devices and no link miss a million pairs (every key of
    # `links` is a pair of two devices of this cluster)
    n = len(devices)
    n_missing = n * (n - 1) - len(links)
    if n_missing and not sink.has_errors:
        pairs = ((a, b) for a in range(n) for b in range(n) if a != b and (a, b) not in links)
        first = [next(pairs) for _ in range(min(4, n_missing))]
        shown = ", ".join(f"{devices[a].name} -> {devices[b].name}" for a, b in first)
        more = f" and {n_missing - 4} more" if n_missing > 4 else ""
        sink.error("E244", f"cluster `{cname}` has devices with no link between them: "
                   f"{shown}{more}", decl.name.span,
                   "a transfer between them would be impossible; add a `link` statement")
    ordered = tuple(links[k] for k in sorted(links))
    return Cluster(cname, tuple(devices), ordered)


def _lower_links(sink: DiagnosticSink, decl: ast.ClusterDecl, index: dict[str, int],
                 left: Budget, failed: set[str]) -> dict[tuple[int, int], Link] | None:
    """The links of a cluster by (src, dst); None (reported, E013) when its statements,
    with those of the load's clusters before it, name more device pairs than the
    `link_pairs` limit, counted before any pair is built. A device listed twice on one side
    (`gpu[*], gpu[*]`) counts once."""
    budget = start = left.link_pairs
    cname = decl.name.text
    groups: dict[str, list[int]] = {}  # `gpu[*]` -> the devices `gpu` + digits, found once
    for name, i in index.items():
        m = _TRAILING_DIGITS.search(name)
        if m:  # `gpu12` is `gpu` + digits and `gpu1` + digits
            for cut in range(m.start(), m.end()):
                groups.setdefault(name[:cut], []).append(i)
    links: dict[tuple[int, int], Link] = {}
    for lk in decl.links:
        attrs = Attrs(sink, lk.attrs, LINK_ATTRS, "a link")
        bw = attrs.quantity("bandwidth")
        if bw is None and attrs.missing("bandwidth"):
            sink.error("E243", "link needs `bandwidth`", lk.span, "for example `bandwidth 25 GB/s`")
        if bw is not None and bw <= 0:
            sink.error("E241", "`bandwidth` must be positive", attrs.values["bandwidth"].value.span,
                       "for example `bandwidth 25 GB/s`")
            bw = None
        lat = attrs.quantity("latency") or 0.0
        srcs = _resolve_side(sink, lk.srcs, index, groups, cname, failed)
        dsts = _resolve_side(sink, lk.dsts, index, groups, cname, failed)
        pairs = len(srcs) * len(dsts) * (2 if lk.both_ways else 1)
        if pairs > budget:
            lim = limits.active().link_pairs
            whose = (f"cluster `{cname}`" if start - budget + pairs > lim
                     else "the clusters of this load")
            sink.error("E013", f"the links of {whose} name more than {lim:_} device "
                       f"pairs", lk.span, f"this statement alone names {pairs:_}; "
                       + limits.raise_hint("link_pairs", pairs, 2 * lim))
            left.link_pairs = -1  # said once: later clusters' links are not built
            return None
        budget -= pairs
        if bw is None:
            continue
        for a in srcs:
            for b in dsts:
                if a != b:
                    links[(a, b)] = Link(a, b, bw, lat)
                    if lk.both_ways:
                        links[(b, a)] = Link(b, a, bw, lat)
    left.link_pairs = budget
    return links


def _resolve_side(sink: DiagnosticSink, refs: Sequence[ast.DevRef], index: dict[str, int],
                  groups: dict[str, list[int]], cname: str, failed: set[str]) -> list[int]:
    """The devices one side of a link names, each once, in order of first mention; the
    same reference written again is not expanded again, and one of a range whose
    declaration was refused (`failed`: E242, E245, E246, said there) is not reported."""
    out: dict[int, None] = {}
    done: set[tuple[str, str, int, int, int]] = set()
    for r in refs:
        key = (r.kind, r.name.text, r.lo, r.hi, r.width)
        if key in done:
            continue
        done.add(key)
        digits = _TRAILING_DIGITS.search(r.name.text) if r.kind == "name" else None
        if (r.name.text if digits is None else r.name.text[: digits.start()]) in failed:
            continue
        if r.kind == "wild":
            hits = groups.get(r.name.text, [])
            if not hits:
                sink.error("E206", f"`{r.name.text}[*]` matches no device of cluster `{cname}`",
                           r.span, *_wild_hints(sink, r.name.text, index, groups, cname))
            out.update(dict.fromkeys(hits))
        else:
            out.update(dict.fromkeys(_resolve_devs(sink, r, index, cname)))
    return list(out)


def _wild_hints(sink: DiagnosticSink, prefix: str, index: dict[str, int],
                groups: dict[str, list[int]], cname: str) -> tuple[str, ...]:
    """E206's hint: a close prefix that `[*]` would match, else the cluster's devices."""
    close = () if sink.full else did_you_mean(prefix, groups)  # the prefixes alone: a
    if close:  # shared `[*]` made `x[*]` look like `tpu[*]`
        return (close[0].replace("`?", "[*]`?"),)
    return (f"`{prefix}[*]` selects the devices named `{prefix}` and digits",
            *device_hints(sink, prefix, index, cname)[-1:]) if index else ()


def devices_written(decl: ast.ClusterDecl) -> int:
    """The devices `decl` declares, counted without expanding its ranges."""
    return sum(1 if d.ref.kind == "name" else max(d.ref.hi - d.ref.lo + 1, 0)
               for d in decl.devices if d.ref.kind != "wild")


def _expand_decl(sink: DiagnosticSink, ref: ast.DevRef) -> list[str]:
    if ref.kind == "name":
        return [ref.name.text]
    if ref.lo > ref.hi:
        sink.error("E245", f"empty range `{ref.name.text}{ref.bounds()}`", ref.span,
                   f"write the smaller bound first: `{ref.name.text}{ref.bounds(ref.hi, ref.lo)}`")
        return []
    max_devices = limits.active().devices
    if ref.hi - ref.lo >= max_devices:  # `gpu[0..99999999]` would exhaust memory
        sink.error("E246", f"range `{ref.name.text}{ref.bounds()}` has "
                   f"{ref.hi - ref.lo + 1} devices; at most {max_devices} are allowed", ref.span,
                   limits.raise_hint("devices", ref.hi - ref.lo + 1))
        return []
    return [ref.member(i) for i in range(ref.lo, ref.hi + 1)]


def _resolve_devs(sink: DiagnosticSink, ref: ast.DevRef, index: dict[str, int],
                  cname: str) -> list[int]:
    """The devices `ref` names; one E207 for a name or a range, however many of its
    devices the cluster lacks (`gpu[0..7]` of four GPUs was four errors, each hinting at
    `gpu0`, which the range already holds)."""
    names = _expand_decl(sink, ref)
    missing = [name for name in names if name not in index]
    if not missing:
        return [index[name] for name in names]
    if ref.kind == "name":
        sink.error("E207", f"unknown device `{missing[0]}` in cluster `{cname}`", ref.span,
                   *device_hints(sink, missing[0], index, cname))
        return []
    prefix = ref.name.text
    held = [i for i in range(ref.lo, ref.hi + 1) if ref.member(i) in index]
    shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4
                                      else "")
    hint = (f"cluster `{cname}` has `{prefix}{ref.bounds(held[0], held[-1])}` of this range"
            if held and held == list(range(held[0], held[-1] + 1)) else
            f"cluster `{cname}` has none of them" if not held else
            "cluster `{}` has {} of them".format(cname, ", ".join(map(ref.member, held))))
    more = device_hints(sink, missing[0], index, cname) if not held else ()
    sink.error("E207", f"`{prefix}{ref.bounds()}` names devices cluster `{cname}` lacks: "
               f"{shown}", ref.span, hint, *more)
    return [index[name] for name in names if name in index]
