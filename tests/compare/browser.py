"""Headless Chromium for the HTML report tests: screenshots, DOM dumps, console errors,
and pixel statistics of screenshots (Pillow) to tell a blank chart from a drawn one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
)


def find_chromium() -> str | None:
    """The Chromium binary, or None (the browser tests then skip)."""
    for path in CHROMIUM_CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    return shutil.which("chromium")


@dataclass
class Run:
    """What one Chromium run printed."""

    stdout: str
    stderr: str


def run_chromium(chromium: str, url: str, *args: str, timeout: float = 60.0) -> Run:
    """Run headless Chromium with a fresh profile on `url`; console messages on stderr."""
    with tempfile.TemporaryDirectory(prefix="planner-chromium-") as profile:
        cmd = [chromium, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr",
               "--v=0", *args, url]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              check=False, env={**os.environ, "HOME": profile})
    return Run(proc.stdout, proc.stderr)


_CONSOLE = re.compile(r":(?:INFO|WARNING|ERROR):CONSOLE[^\]]*\]\s*\"(?P<msg>.*?)\", source")


def console_errors(stderr: str) -> list[str]:
    """Messages the page logged to the console that are errors (uncaught or console.error).

    Chromium prints console messages as `[...:INFO:CONSOLE(line)] "message", source: ...`.
    Lines from the browser itself (dbus, GPU probing) are not console messages.
    """
    out = []
    for line in stderr.splitlines():
        m = _CONSOLE.search(line)
        if m and ("Uncaught" in m.group("msg") or "Error" in m.group("msg")
                  or ":ERROR:CONSOLE" in line):
            out.append(m.group("msg"))
    return out


def screenshot(chromium: str, url: str, path: Path, size: tuple[int, int] = (1000, 1400)
               ) -> Run:
    """Save a PNG screenshot of `url`."""
    return run_chromium(chromium, url, f"--screenshot={path}",
                        f"--window-size={size[0]},{size[1]}")


def dump_dom(chromium: str, url: str, size: tuple[int, int] = (1000, 1400)) -> Run:
    """The DOM after scripts ran (stdout), laid out in a window of `size`."""
    return run_chromium(chromium, url, "--dump-dom", "--virtual-time-budget=2000",
                        f"--window-size={size[0]},{size[1]}")


# -- screenshots, read with Pillow ---------------------------------------------------------


@dataclass(frozen=True)
class Box:
    """Where a chart is on the page (CSS pixels from the page's top left)."""

    kind: str
    x: int
    y: int
    width: int
    height: int


def chart_boxes(attr: str) -> list[Box]:
    """The report script's `data-boxes` (`kind:x:y:w:h ...`) as boxes."""
    out = []
    for item in attr.split():
        kind, *nums = item.split(":")
        x, y, w, h = (int(n) for n in nums)
        out.append(Box(kind, x, y, w, h))
    return out


@dataclass(frozen=True)
class Pixels:
    """What a region of a screenshot holds."""

    stddev: float  # of the luminance: 0 for a flat region
    ink: float  # the share of pixels that are not (near) white
    colours: int  # distinct colours (counted up to 256)


def pixels(path: Path, box: Box | None = None) -> Pixels:
    """Statistics of the screenshot `path`, or of `box` in it."""
    from PIL import Image, ImageStat

    with Image.open(path) as img:
        rgb = img.convert("RGB")
        if box is not None:
            rgb = rgb.crop((box.x, box.y, box.x + box.width, box.y + box.height))
        grey = rgb.convert("L")
        stddev = ImageStat.Stat(grey).stddev[0]
        hist = grey.histogram()
        ink = sum(hist[:235]) / max(1, rgb.width * rgb.height)
        colours = rgb.getcolors(maxcolors=256)
    return Pixels(stddev, ink, 256 if colours is None else len(colours))


def ink_fraction(path: Path) -> float:
    """The share of pixels that are not (near) white: 0.0 for a blank page."""
    return pixels(path).ink


def distinct_colours(path: Path, limit: int = 64) -> int:
    """How many distinct pixel values the image has (stops counting at `limit`)."""
    return min(pixels(path).colours, limit)
