"""Small SVG helpers shared by the HTML report's charts: escaping, coordinates, ticks."""

from __future__ import annotations

import html
import math
import sys
from fractions import Fraction
from typing import Any

__all__ = ["byte_ticks", "coord", "esc", "log_ticks", "nice_ticks", "share", "svg_open",
           "tick_bytes", "tick_seconds"]


def esc(text: Any) -> str:
    """Text escaped for HTML and SVG, attribute values included."""
    return html.escape(str(text), quote=True)


def coord(x: float) -> str:
    """A compact SVG coordinate (two decimals at most; non-finite values become 0)."""
    return f"{x:.2f}".rstrip("0").rstrip(".") if math.isfinite(x) else "0"


def svg_open(kind: str, width: int, height: int, extra: str = "") -> str:
    """The opening tag of a chart: `<svg class="chart" data-chart=KIND ...>`."""
    return (f'<svg class="chart" data-chart="{kind}" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" role="img" '
            f'xmlns="http://www.w3.org/2000/svg"{extra}>')


def tick_seconds(t: float) -> str:
    """A short axis label for a time: `0`, `250 us`, `1.5 ms`, `2 s`."""
    if t == 0 or not math.isfinite(t):
        return "0"
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(t) >= factor * 0.9999:
            return f"{t / factor:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def tick_bytes(b: float) -> str:
    """A short axis label for a size: `0`, `512 MiB`, `16 GiB`."""
    if b <= 0 or not math.isfinite(b):
        return "0"
    for unit, factor in (("TiB", 2.0 ** 40), ("GiB", 2.0 ** 30), ("MiB", 2.0 ** 20),
                         ("KiB", 2.0 ** 10)):
        if b >= factor * 0.9999:
            return f"{b / factor:.3g} {unit}"
    return f"{b:.0f} B"


def byte_ticks(hi: float, n: int = 2) -> list[float]:
    """Round sizes in binary units (0, 4 GiB, 8 GiB) covering [0, hi], about `n` steps."""
    try:
        hi = min(float(hi), sys.float_info.max)
    except OverflowError:  # an int beyond a float's range
        hi = sys.float_info.max
    unit = next((f for f in (2.0 ** 40, 2.0 ** 30, 2.0 ** 20, 2.0 ** 10) if hi >= f), 1.0)
    return [t * unit for t in nice_ticks(0.0, hi / unit, n)]


def share(part: float, whole: float) -> float:
    """`part / whole` clamped to [0, 1]; exact for integers beyond a float's range (bytes
    of a spec at its limits), 0 when `whole` is not positive."""
    try:
        r = part / whole
    except OverflowError:  # an int too large for a float: divide exactly
        try:
            r = float(Fraction(part) / Fraction(whole))
        except (OverflowError, ValueError, ZeroDivisionError):
            return 1.0
    except ZeroDivisionError:
        return 0.0
    if math.isnan(r) or whole <= 0:
        return 0.0
    return min(1.0, max(0.0, r))


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values (1, 2, 2.5, 5 × 10^k steps) covering [lo, hi], about `n` of them
    (at most `4n + 2`, also where `hi` is near the largest float)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    if not math.isfinite(raw) or raw <= 0:
        return [lo]
    mag = 10.0 ** math.floor(math.log10(raw))  # a float: an int here overflows later
    step = next(s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw)
    first = math.ceil(lo / step) * step
    top = min(hi * (1 + 1e-9), sys.float_info.max)  # near the float limit, hi * 1.x is inf
    ticks = []
    for k in range(4 * n + 2):  # bounded: a tick that overflows must not loop for ever
        t = first + k * step
        if not math.isfinite(t) or t > top:
            break
        ticks.append(round(t, 12))
    return ticks


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks for a log axis over [lo, hi] (0 < lo < hi): 1-2-5 per decade, or every
    mantissa when the range is narrow, so that at least two ticks show."""
    for mantissas in ((1,), (1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9)):
        ticks = [m * 10.0 ** e
                 for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
                 for m in mantissas if lo <= m * 10.0 ** e <= hi]
        if len(ticks) >= 3:
            return ticks
    return ticks if len(ticks) >= 2 else [lo, hi]
