"""Headless Chromium for the HTML report tests: screenshots, DOM dumps, console errors.

Also a tiny PNG reader (zlib + struct, no Pillow) to tell a blank screenshot from a page.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
import zlib
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


def dump_dom(chromium: str, url: str) -> Run:
    """The DOM after scripts ran (stdout)."""
    return run_chromium(chromium, url, "--dump-dom", "--virtual-time-budget=2000")


# -- PNG ----------------------------------------------------------------------------------


def read_png(path: Path) -> tuple[int, int, int, bytes]:
    """(width, height, channels, pixels) of an 8-bit RGB/RGBA/grey PNG, rows unfiltered."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat = 8, []
    width = height = channels = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or interlace != 0:
                raise ValueError(f"unsupported PNG: depth {depth}, interlace {interlace}")
            channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(color, 0)
            if not channels:
                raise ValueError(f"unsupported PNG colour type {color}")
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    out = bytearray(stride * height)
    prev = bytearray(stride)
    bpp = channels
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        elif f != 0:
            raise ValueError(f"bad PNG filter {f}")
        out[y * stride:(y + 1) * stride] = line
        prev = line
    return width, height, channels, bytes(out)


def ink_fraction(path: Path) -> float:
    """The share of pixels that are not (near) white: 0.0 for a blank page."""
    w, h, ch, px = read_png(path)
    inked = 0
    step = ch
    for i in range(0, len(px), step):
        if px[i] < 235 or (ch >= 3 and (px[i + 1] < 235 or px[i + 2] < 235)):
            inked += 1
    return inked / (w * h) if w and h else 0.0


def distinct_colours(path: Path, limit: int = 64) -> int:
    """How many distinct pixel values the image has (stops counting at `limit`)."""
    _, _, ch, px = read_png(path)
    seen: set[bytes] = set()
    for i in range(0, len(px), ch * 7):  # a sample is enough to tell charts from blank
        seen.add(px[i:i + min(ch, 3)])
        if len(seen) >= limit:
            break
    return len(seen)
