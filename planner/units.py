"""Physical quantities in specs: parsing units, converting to base units, formatting back.

Base units: seconds, bytes, bytes per second, FLOP, FLOP per second. Bit rates are
converted to bytes per second (1 Gbps = 125,000,000 B/s).
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Collection
from decimal import MAX_EMAX, MIN_EMIN, ROUND_CEILING, ROUND_FLOOR, Context, Decimal
from typing import Final

#: dimension name -> {unit: factor to the base unit}
UNITS: Final[dict[str, dict[str, float]]] = {
    "time": {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0},
    "size": {
        "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
        "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4,
    },
    "bandwidth": {
        "B/s": 1, "KB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12,
        "KiB/s": 1024, "MiB/s": 1024**2, "GiB/s": 1024**3, "TiB/s": 1024**4,
        "bps": 1 / 8, "Kbps": 1e3 / 8, "Mbps": 1e6 / 8, "Gbps": 1e9 / 8, "Tbps": 1e12 / 8,
    },
    "work": {
        "FLOP": 1, "KFLOP": 1e3, "MFLOP": 1e6, "GFLOP": 1e9, "TFLOP": 1e12, "PFLOP": 1e15,
    },
    "rate": {
        "FLOPS": 1, "KFLOPS": 1e3, "MFLOPS": 1e6, "GFLOPS": 1e9, "TFLOPS": 1e12,
        "PFLOPS": 1e15,
    },
}

#: unit -> (dimension, factor)
UNIT_TABLE: Final[dict[str, tuple[str, float]]] = {
    unit: (dim, factor) for dim, table in UNITS.items() for unit, factor in table.items()
}

#: an example per dimension, for hints ("expected a size such as `16 GiB`")
EXAMPLES: Final[dict[str, str]] = {
    "time": "1.5 ms",
    "size": "16 GiB",
    "bandwidth": "25 GB/s",
    "work": "2.4 GFLOP",
    "rate": "15.7 TFLOPS",
}


#: dimension -> (smallest positive, largest) value in base units that a spec may give; 0
#: is valid where the attribute allows it (`speed`, `flops` rates and `bandwidth` must
#: be positive). The bounds keep every later stage exact and finite: sizes stay far
#: below 2**63 bytes when summed over 500,000 ops (CP-SAT's integers), and the longest
#: step (1e6 s of compute at the slowest `speed`, the largest tensor over the slowest
#: link) stays finite in every simulator, bound, LP and report.
RANGES: Final[dict[str, tuple[float, float]]] = {
    "time": (1e-12, 1e6),               # 1 ps .. about 11.6 days (op times, latencies)
    "size": (1.0, float(2**50)),        # 1 B .. 1 PiB (memory, params, output, temp, bytes)
    "bandwidth": (1.0, 1e15),           # 1 B/s .. 1 PB/s
    "work": (1.0, 1e18),                # 1 FLOP .. 1 EFLOP
    "rate": (1e6, 1e18),                # 1 MFLOPS .. 1 EFLOPS
}
#: the range of a device's unitless `speed`
SPEED_RANGE: Final[tuple[float, float]] = (1e-6, 1e6)
#: each dimension as messages name it ("above the valid range of a size")
DIM_WORDS: Final[dict[str, str]] = {"time": "time", "size": "size", "bandwidth": "bandwidth",
                                    "work": "work (FLOP)", "rate": "FLOP rate",
                                    "speed": "speed"}
#: the dimensions whose quantities are all positive (`bandwidth`, a device's `flops`)
POSITIVE_DIMS: Final[frozenset[str]] = frozenset({"bandwidth", "rate"})
#: names that read as numbers to a person but are not numbers in a spec
NON_FINITE: Final[frozenset[str]] = frozenset({"nan", "inf", "infinity", "-inf", "+inf"})


def closest_unit(unit: str, dims: Collection[str] = ()) -> str | None:
    """The unit `unit` most likely meant, or None: the same letters in another case (`gb`:
    `GB`, `MS`: `ms`; difflib compares case and finds nothing there), else the closest by
    spelling (`sec`: `s`); among the units of `dims` (the key's dimensions) first."""
    fitting = [u for u, (d, _) in UNIT_TABLE.items() if d in dims]
    same = [u for u in (fitting or UNIT_TABLE) if u.lower() == unit.lower()]
    close = same or difflib.get_close_matches(unit, fitting, n=1, cutoff=0.5) \
        or difflib.get_close_matches(unit, list(UNIT_TABLE), n=1, cutoff=0.5)
    return close[0] if close else None


def parse_number(text: str) -> float:
    """Parse a spec number (`1_000`, `1.5`, `2e-3`)."""
    return float(text.replace("_", ""))


def underflows(text: str) -> bool:
    """Whether the spec number `text`, which read as 0 (alone, or times its unit's
    factor: `1e-320 ns` is a subnormal number of ns, 0 s), is not zero: it has a digit
    other than 0 before its exponent (`1e-400`, `0.000…1`). Asked only about a value
    that is 0, so a number in range never pays for it."""
    mantissa = text.partition("e")[0].partition("E")[0]
    return mantissa.strip("0._") != ""


def whole_bytes(number: str, factor: float, value: float, down: bool = False
                ) -> tuple[int, bool]:
    """The size `number` (a spec number) times `factor` (its size unit's) in whole bytes,
    rounded up (a demand: an op's or an edge's size), or down (`down`: a memory cap, which
    whole-byte demands fit exactly when they fit the fraction); and whether it was whole.
    `value` is the size's float, in range: the answer is computed from the decimal text,
    not from it (`1.001 KB` reads as 1000.9999999999999 B), unless the float cannot hide
    a fraction (an integer literal; or a short one whose float is whole and small
    enough that its error stays below the literal's last digit)."""
    if value.is_integer() and "e" not in number and "E" not in number and (
            "." not in number or len(number) < 16 and value * 10.0 ** len(number) < 4e15):
        return int(value), True
    exact = Decimal(number.replace("_", ""))
    ctx = Context(prec=len(number) + 32, Emax=MAX_EMAX, Emin=MIN_EMIN)
    exact = ctx.multiply(exact, int(factor))
    n = int(exact.to_integral_value(ROUND_FLOOR if down else ROUND_CEILING, ctx))
    return n, n == exact


def to_base(value: float, unit: str) -> tuple[str, float]:
    """Return (dimension, value in base units) of `value unit`; KeyError if unknown."""
    dim, factor = UNIT_TABLE[unit]
    return dim, value * factor


def range_side(value: float, dim: str, positive: bool = False) -> str | None:
    """"above" or "below" where `value` (base units of `dim`, or the unitless `speed`) lies
    outside what a spec may give (`RANGES`, `SPEED_RANGE`; 0 is inside unless `positive`
    or `dim` is in `POSITIVE_DIMS`), None where it lies inside. Infinity is above: an
    importer asks before it writes a value that the spec's lowering would refuse."""
    lo, hi = SPEED_RANGE if dim == "speed" else RANGES[dim]
    if dim != "size":  # whole bytes, exact: others, a bound met but for the rounding of
        # number x unit (`1e15 ns` is 1000000.0000000001 s)
        lo, hi = lo * _ROUNDING_DOWN, hi * _ROUNDING_UP
    if not value <= hi:
        return "above"
    if value == 0 and not (positive or dim in POSITIVE_DIMS):
        return None
    return "below" if value < lo else None


_ROUNDING_UP, _ROUNDING_DOWN = 1 + 4 * sys.float_info.epsilon, 1 - 4 * sys.float_info.epsilon


def range_text(dim: str) -> str:
    """The range of `dim` as hints give it: `0 or from 1 B to 1024 TiB` (no 0 for the
    positive dimensions), `from 1e-06 to 1e+06` for `speed`."""
    if dim == "speed":
        lo, hi = SPEED_RANGE
        return f"from {lo:g} to {hi:g}"
    lo, hi = RANGES[dim]
    zero = "" if dim in POSITIVE_DIMS else "0 or "
    return f"{zero}from {format_quantity(lo, dim)} to {format_quantity(hi, dim)}"


def format_quantity(value: float, dim: str) -> str:
    """Format a base-unit value as `number unit`, in the largest unit that reads short.

    The text parses back to `value` within a relative 1e-12 (the float noise of unit
    factors such as 1e-3); importers and generators use it to write specs.
    """
    if value == 0:
        return f"0 {_PRINT_UNITS[dim][-1]}"
    for unit in _PRINT_UNITS[dim]:
        factor = UNITS[dim][unit]
        scaled = round(value / factor, 9)
        if abs(scaled) < 1 or (dim == "size" and scaled != int(scaled)):
            continue
        text = repr(scaled)
        text = text.removesuffix(".0")
        if "e" not in text and len(text) <= 14:
            back = parse_number(text) * factor
            if abs(back - value) <= 1e-12 * abs(value):
                return f"{text} {unit}"
    unit = _PRINT_UNITS[dim][-1]
    return f"{float(value) / UNITS[dim][unit]!r} {unit}"


# Preferred units for printing, largest first.
_PRINT_UNITS: Final[dict[str, tuple[str, ...]]] = {
    "time": ("s", "ms", "us", "ns"),
    "size": ("TiB", "GiB", "MiB", "KiB", "TB", "GB", "MB", "KB", "B"),
    "bandwidth": ("TB/s", "GB/s", "GiB/s", "Gbps", "MB/s", "MiB/s", "KB/s", "KiB/s", "B/s"),
    "work": ("PFLOP", "TFLOP", "GFLOP", "MFLOP", "KFLOP", "FLOP"),
    "rate": ("PFLOPS", "TFLOPS", "GFLOPS", "MFLOPS", "KFLOPS", "FLOPS"),
}


#: the units durations are printed in, largest first, with their digits
_SECONDS: Final = ((1.0, "s", 3), (1e-3, "ms", 3), (1e-6, "us", 1), (1e-9, "ns", 0))


def format_seconds(seconds: float) -> str:
    """Human-readable duration for reports (not for round trips): in the largest unit it
    reaches once rounded to that unit's digits (999.9999 us is `1.000 ms`, not `1000.0
    us`); a time below a nanosecond keeps two digits (`0.4 ns`, not `0 ns`)."""
    if seconds < 0:
        return "-" + format_seconds(-seconds)
    for scale, unit, digits in _SECONDS:
        shown = f"{seconds / scale:.{digits}f}"
        if float(shown) >= 1:
            return f"{shown} {unit}"
    return f"{seconds * 1e9:.2g} ns"


def format_bytes(n: float, decimals: int = 2) -> str:
    """Human-readable size for reports (binary units)."""
    return _bytes_shown(n, decimals)[0]


def _bytes_shown(n: float, decimals: int) -> tuple[str, float]:
    """`format_bytes`' text and the number of bytes it reads as."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        f = UNITS["size"][unit]
        if abs(n) >= f:
            return f"{n / f:.{decimals}f} {unit}", round(n / f, decimals) * f
    return f"{int(n)} B", float(int(n))


def format_bytes_of(peak: float, cap: float) -> tuple[str, str]:
    """`format_bytes` of a peak and its cap, with as many more decimals as a peak above the
    cap takes to read above it (`1.00098 GiB` of `1.00000 GiB`, not `1.00 GiB` of `1.00
    GiB` beside a violation), and a peak below it to read below it (a plan that fits never
    reads as full); the peak `>` (`<`) the cap where no float shows the difference."""
    for decimals in range(2, 17):
        (a, shown_a), (b, shown_b) = _bytes_shown(peak, decimals), _bytes_shown(cap, decimals)
        if peak == cap or (shown_a > shown_b) == (peak > cap) and shown_a != shown_b:
            return a, b
    return f"{'>' if peak > cap else '<'} {format_bytes(cap)}", format_bytes(cap)


def format_percent_of(peak: float, cap: float, decimals: int = 1) -> str:
    """`100 * peak / cap` with `decimals` digits, and as many more as a peak above the cap
    takes to read above 100 (`100.04`, not `100.0`, for 0.04% over), and a peak below it
    to read below 100 (`99.96`, not `100.0`); `>100` (`<100`) where no float shows the
    difference, `∞` for a peak beyond a float's range."""
    try:
        pct = 100 * peak / cap
    except OverflowError:  # whole bytes beyond a float's range
        return "∞"
    for digits in range(decimals, 17):
        shown = f"{pct:.{digits}f}"
        if peak == cap or (float(shown) > 100 if peak > cap else float(shown) < 100):
            return shown
    return ">100" if peak > cap else "<100"
