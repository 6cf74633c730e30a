"""Spec texts for the pipeline tests: chains of stages, random graphs, written as users
write them (the language is part of what is tested)."""

from __future__ import annotations

import os
import random
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from planner import loads
from planner.model import Problem

ROOT = Path(__file__).resolve().parents[2]


def run_doc_commands(page: str, after: str, tmp_path: Path
                     ) -> subprocess.CompletedProcess[str]:
    """Run the first ```bash block of the documentation page `page` (README.md, or
    docs/NAME.md) after the text `after`, as written, in `tmp_path` (a checkout's root with
    specs/clusters); each must exit 0. The last one's outcome."""
    text = (ROOT / page).read_text(encoding="utf-8")
    block = text.split(after, 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line for line in block.splitlines() if line.strip()]
    assert len(commands) == 3 and commands[-1].startswith("planner solve")
    shutil.copytree(ROOT / "specs" / "clusters", tmp_path / "specs" / "clusters")
    (tmp_path / ".git").mkdir()  # the root of the spec's imports, as in a checkout
    planner = f"{shlex.quote(sys.executable)} -m planner"
    for line in commands:
        line = line.replace("planner ", planner + " ", 1) if line.startswith("planner ") else line
        proc = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True,
                              text=True, check=False, env={**os.environ, "COLUMNS": "140"})
        assert proc.returncode == 0, (line, proc.stderr)
    return proc


def chain_spec(forward_ms: list[float], backward_ms: list[float] | None = None, *,
               microbatches: int = 4, schedule: str = "1f1b", activation: str = "1 MB",
               bandwidth: str = "1000000 GB/s", latency: str = "0 s",
               contention: str = "link", memory: str = "64 GiB") -> Problem:
    """A chain of ops `f0 -> f1 -> ...`, one per device (`place`d), each with its backward
    op `fK.bwd` (`backward_of fK`, colocated) when `backward_ms` is given."""
    n = len(forward_ms)
    lines = [f"cluster c {{ device d[0..{n - 1}] {{ memory {memory} }}",
             f"  link d[0..{n - 1}] <-> d[0..{n - 1}] {{ bandwidth {bandwidth} "
             f"latency {latency} }} }}", "graph g {"]
    for k, t in enumerate(forward_ms):
        lines.append(f"  op f{k} {{ time {t} ms; output {activation} }}")
    if backward_ms is not None:
        for k, t in enumerate(backward_ms):
            lines.append(f"  op f{k}.bwd {{ time {t} ms; backward_of f{k} }}")
            lines.append(f"  f{k} -> f{k}.bwd")
            lines.append(f"  colocate f{k}, f{k}.bwd")
        for k in range(n - 1):
            lines.append(f"  f{k + 1}.bwd -> f{k}.bwd {{ bytes {activation} }}")
    for k in range(n - 1):
        lines.append(f"  f{k} -> f{k + 1}")
    lines.append("}")
    lines.append(f"plan p {{ graph g; cluster c; contention {contention}; objective pipeline; "
                 f"microbatches {microbatches}; schedule {schedule}")
    lines += [f"  place f{k} on d{k}" for k in range(n)]
    lines.append("}")
    return loads("\n".join(lines)).plan("p")


def chain_text(n: int, devices: int, *, forward_ms: list[float] | None = None,
               backward_ms: list[float] | None = None, outputs_mb: list[float] | None = None,
               training: bool = True, microbatches: int = 8, schedule: str = "1f1b",
               memory: str = "64 GiB", bandwidth: str = "10 GB/s", latency: str = "10 us",
               objective: bool = True) -> str:
    """A chain `f0 -> f1 -> ...` of `n` units (each op with its backward op, colocated,
    when `training`) on `devices` alike devices, every pair linked alike."""
    fwd = forward_ms or [4.0] * n
    bwd = backward_ms or [2 * t for t in fwd]
    out = outputs_mb or [1.0] * n
    last = devices - 1
    lines = [f"cluster c {{ device d[0..{last}] {{ memory {memory} }}",
             f"  link d[0..{last}] <-> d[0..{last}] {{ bandwidth {bandwidth} latency {latency} }}",
             "}", "graph g {"]
    for k in range(n):
        lines.append(f"  op f{k} {{ time {fwd[k]} ms; output {out[k]} MB }}")
        if training:
            lines += [f"  op f{k}.bwd {{ time {bwd[k]} ms; output 0 B; backward_of f{k} }}",
                      f"  f{k} -> f{k}.bwd", f"  colocate f{k}, f{k}.bwd"]
            if k:
                lines.append(f"  f{k}.bwd -> f{k - 1}.bwd {{ bytes {out[k - 1]} MB }}")
        if k:
            lines.append(f"  f{k - 1} -> f{k}")
    lines.append("}")
    settings = (f"; objective pipeline; microbatches {microbatches}; schedule {schedule}"
                if objective else "")
    lines.append(f"plan p {{ graph g; cluster c{settings} }}")
    return "\n".join(lines)


def random_spec(seed: int, units: int, devices: int, *, training: bool,
                microbatches: int = 4, schedule: str = "1f1b", pin: bool = False,
                tie: bool = False, memories: tuple[int, ...] = (40, 60, 200),
                settings: str = "") -> Problem:
    """A random DAG of `units` forward ops (with backward ops when `training`) on
    `devices` devices of different speeds and memories (MB, drawn from `memories`), links
    of different bandwidths; `pin` pins one op, `tie` ties the first and the last op's
    weights (when both have params), `settings` are more of the plan's (`; contention
    device`)."""
    rng = random.Random(seed)
    speeds = [rng.choice([0.5, 1.0, 1.0, 2.0]) for _ in range(devices)]
    mems = [rng.choice(memories) for _ in range(devices)]
    lines = ["cluster c {"]
    for d in range(devices):
        lines.append(f"  device d{d} {{ memory {mems[d]} MB; speed {speeds[d]} }}")
    for a in range(devices):
        for b in range(devices):
            if a != b:
                bw = rng.choice([1, 5, 20])
                lines.append(f"  link d{a} -> d{b} {{ bandwidth {bw} GB/s latency "
                             f"{rng.choice([0, 10])} us }}")
    lines += ["}", "graph g {"]
    params: list[int] = []
    for k in range(units):
        ms, out = rng.randint(1, 9), rng.randint(1, 8)
        params.append(rng.randint(0, 6))
        lines.append(f"  op u{k} {{ time {ms} ms; output {out} MB; params {params[-1]} MB }}")
        if training:
            lines.append(f"  op u{k}.bwd {{ time {rng.randint(1, 18)} ms; output "
                         f"{rng.randint(0, 4)} MB; backward_of u{k} }}")
            lines.append(f"  u{k} -> u{k}.bwd")
            lines.append(f"  colocate u{k}, u{k}.bwd")
    for k in range(1, units):
        for j in rng.sample(range(k), min(k, rng.choice([1, 1, 2]))):
            lines.append(f"  u{j} -> u{k}")
            if training:
                lines.append(f"  u{k}.bwd -> u{j}.bwd {{ bytes {rng.randint(1, 8)} MB }}")
    if tie and min(params[0], params[-1]) > 0 and units > 1:
        lines.append(f"  tie u0, u{units - 1} {{ bytes {min(params[0], params[-1])} MB }}")
    lines.append("}")
    pinned = f"; pin u{units // 2} to d{devices - 1}" if pin else ""
    lines.append(f"plan p {{ graph g; cluster c; objective pipeline; "
                 f"microbatches {microbatches}; schedule {schedule}{pinned}{settings} }}")
    return loads("\n".join(lines)).plan("p")


def tight_text(memory: str) -> str:
    """Four units of 15, 3, 15, 3 MB activations on two devices, 1F1B, 4 micro-batches: at
    34 MB only [f0 f1 | f2 f3] fits, d0 recomputing (28 MB: 18 MB once, the 3 MB it sends
    for each of its 2 micro-batches in flight, and 4 x 1 MB receive buffers of its output's
    gradient; d1 18 + 3 MB and 4 x 3 MB buffers of its input, 33 MB); at 19 MB nothing
    does. (25 MB before 2026-12-07's receive buffers.)"""
    return two_device_text(memory, [15, 3, 15, 3], "microbatches 4; schedule 1f1b")


def two_device_text(memory: str, outputs_mb: list[int], settings: str) -> str:
    """A chain of units (forward 4 ms, backward 8 ms) of these activations (MB) on two
    devices of `memory`, plan `p` a pipeline with `settings`."""
    lines = [f"cluster c {{ device d[0..1] {{ memory {memory} }}",
             "  link d[0..1] <-> d[0..1] { bandwidth 10 GB/s latency 10 us } }", "graph g {"]
    for k, mb in enumerate(outputs_mb):
        lines += [f"  op f{k} {{ time 4 ms; output {mb} MB }}",
                  f"  op f{k}.bwd {{ time 8 ms; output 0 B; backward_of f{k} }}",
                  f"  f{k} -> f{k}.bwd", f"  colocate f{k}, f{k}.bwd"]
        if k:
            lines += [f"  f{k - 1} -> f{k}", f"  f{k}.bwd -> f{k - 1}.bwd {{ bytes 1 MB }}"]
    lines += ["}", f"plan p {{ graph g; cluster c; objective pipeline; {settings} }}"]
    return "\n".join(lines)


def layers_text(layers: list[tuple[float, int, int]], devices: list[tuple[int, float]], *,
                link: str, plan: str) -> str:
    """A training chain `L0 -> L1 -> ...`: per layer (forward ms, params MiB, output MiB),
    its backward op `Lk.bwd` twice the time and the params, the same output, the backward
    ops in reverse; devices `gpuK` of (memory MiB, speed), every pair linked by `link`
    (`bandwidth ... latency ...`); `plan`: the plan's settings after its graph and cluster."""
    n = len(layers)
    lines = ["graph g {"]
    for k, (ms, params, out) in enumerate(layers):
        lines += [f"  op L{k} {{ time {ms} ms  params {params} MiB  output {out} MiB }}",
                  f"  op L{k}.bwd {{ time {2 * ms} ms  params {2 * params} MiB  output {out} "
                  f"MiB  backward_of L{k} }}"]
    lines += ["  " + " -> ".join(f"L{k}" for k in range(n)),
              "  " + " -> ".join(f"L{k}.bwd" for k in reversed(range(n))),
              *(f"  L{k} -> L{k}.bwd" for k in (n - 1, *range(n - 1))), "}", "cluster c {"]
    lines += [f"  device gpu{d} {{ memory {mem} MiB  speed {speed} }}"
              for d, (mem, speed) in enumerate(devices)]
    lines += [f"  link gpu[*] <-> gpu[*] {{ {link} }}", "}",
              f"plan p {{ graph g  cluster c  {plan} }}"]
    return "\n".join(lines) + "\n"
