"""Run the step of several scripts `planner export torch --pipeline` wrote, in one set of
processes (forked from one that imported torch once, rather than importing it once per
script and rank).

    python tests/io/torch_pipeline_runner.py JOBS.json
    python tests/io/torch_pipeline_runner.py --serve

`--serve` keeps its pool for every JOBS.json path read from its input, one a line, and
answers each with a line of JSON on its output, `{"error": TEXT or null}`; it ends at the
end of its input (torch_support.py starts one per test process, so that its files share
the ranks' processes, torch and transformers imported and torch.export warmed up once).

JOBS.json is a list of jobs, run one after the other on a pool of worker processes (rank k
of every job on worker k; the pool grows to the most ranks a job takes). Two kinds:

- `{"script": PATH, "ranks": N, "save": DIR, "rendezvous": FILE}`: each rank runs the
  script's own `run(rank, ranks, "cpu", init_method, save)` (gloo on the CPU, rendezvous in
  a file: no ports). Each rank's losses and gradients go to DIR/rankN.pt. A job with
  `"count": true` also writes DIR/callsN.json: per stage of the rank, how many times its
  module's forward ran in the step (once per micro-batch, twice where the stage recomputes:
  torch.utils.checkpoint runs it again in the backward pass); one with `"memory": true`,
  DIR/heldN.json: `{"bytes": B}`, the most the rank held in a step (`measuring`). A failed
  rank fails the run.
- `{"main": PATH, "argv": [...], "cwd": DIR, "out": FILE}`: the script's command,
  `python PATH ARGV` from DIR (`--spawn ...`), as its own `main(argv)` in this process,
  whose `torch.multiprocessing.spawn` hands each rank to its worker instead of starting
  a process. FILE gets `{"returncode", "stdout", "stderr"}`: the command's exit status,
  its output (the ranks' printed lines where the spawn returns, as a spawn's children
  print theirs before the parent goes on), its error output.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import json
import multiprocessing
import multiprocessing.forkserver
import os
import sys
import traceback
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from queue import Empty
from typing import Any

import torch.multiprocessing


@contextmanager
def counting(calls: dict[int, int]) -> Iterator[None]:
    """Count, per stage index, the calls of each stage module's forward as the stage is
    built (before the script's own wrapping, which then calls the counted forward)."""
    from torch.distributed.pipelining._IR import Pipe

    build = Pipe.build_stage

    def build_stage(self: Any, stage_index: int, *args: Any, **kwargs: Any) -> Any:
        stage = build(self, stage_index, *args, **kwargs)
        forward = stage.submod.forward
        calls[stage_index] = 0

        def counted(*a: Any, **k: Any) -> Any:
            calls[stage_index] += 1
            return forward(*a, **k)

        stage.submod.forward = counted
        return stage

    Pipe.build_stage = build_stage  # type: ignore[method-assign]
    try:
        yield
    finally:
        Pipe.build_stage = build  # type: ignore[method-assign]


@contextmanager
def measuring(held: dict[str, int]) -> Iterator[None]:
    """The most bytes a rank holds in its schedule's steps, in `held["bytes"]`: its stages'
    parameters, plus the peak of the storages a step makes (`live_bytes.Live`: received
    buffers, activations, gradients; the caller's batch where it is cut into views)."""
    from live_bytes import Live
    from torch.distributed.pipelining import schedules

    classes = (schedules.PipelineScheduleSingle, schedules.PipelineScheduleMulti)
    steps = [cls.step for cls in classes]

    def measured(step: Callable[..., Any]) -> Callable[..., Any]:
        # `wraps`: the script asks `step`'s signature for `return_outputs`
        # (`without_outputs`); before, it saw none, so a measured last rank kept and merged
        # every micro-batch's output (80.0 MiB where the run holds 56.0: helper)
        @functools.wraps(step)
        def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
            stages = getattr(self, "_stages", None) or [self._stage]
            params = [p for stage in stages for p in stage.submod.parameters()]
            live = Live(*params)
            with live:
                out = step(self, *args, **kwargs)
            storages = {p.untyped_storage().data_ptr(): p.untyped_storage().nbytes()
                        for p in params}
            held["bytes"] = max(held.get("bytes", 0), sum(storages.values()) + live.peak)
            return out
        return wrapped

    for cls, step in zip(classes, steps, strict=True):
        cls.step = measured(step)  # type: ignore[method-assign]
    try:
        yield
    finally:
        for cls, step in zip(classes, steps, strict=True):
            cls.step = step  # type: ignore[method-assign]


def load(path: str, name: str) -> Any:
    """The script at `path` as a fresh module (its functions, not its main)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_job(rank: int, job: dict[str, Any], k: int) -> None:
    script = load(job["script"], f"_pipeline_step_{k}")
    calls: dict[int, int] = {}
    held: dict[str, int] = {}
    with counting(calls) if job.get("count") else nullcontext(), \
            measuring(held) if job.get("memory") else nullcontext():
        script.run(rank, job["ranks"], "cpu", "file://" + job["rendezvous"], job["save"])
    if job.get("count"):
        (Path(job["save"]) / f"calls{rank}.json").write_text(json.dumps(calls))
    if job.get("memory"):
        (Path(job["save"]) / f"held{rank}.json").write_text(json.dumps(held))


def _call(rank: int, path: str, function: str, args: tuple[Any, ...], cwd: str, log: str,
          k: int) -> None:
    """`function(rank, *args)` of the script at `path`, as a spawned rank of its main runs
    it, from `cwd`; what it prints goes to `log`."""
    os.chdir(cwd)
    script = load(path, f"_pipeline_main_{k}")
    with open(log, "w", encoding="utf-8") as out, contextlib.redirect_stdout(out):
        getattr(script, function)(rank, *args)


def worker(rank: int, tasks: Any, done: Any) -> None:
    """Rank `rank` of every job: tasks until None; each answered (rank, traceback or None)."""
    while (task := tasks.get()) is not None:
        try:
            (_run_job if task[0] == "run" else _call)(rank, *task[1:])
            done.put((rank, None))
        except BaseException:  # SystemExit too: a rank's failure, not the worker's end
            done.put((rank, traceback.format_exc()))


class Pool:
    """Worker processes, started as a job first needs them; worker k runs rank k."""

    def __init__(self) -> None:
        # forked from a fork server that imported this module (`_preload`) once, not
        # spawned, each rank importing torch and transformers again; the server runs no
        # torch code and (OMP_NUM_THREADS=1: torch_support.py) has no other thread to fork
        self.context = multiprocessing.get_context("forkserver")
        self.context.set_forkserver_preload([Path(__file__).stem])
        # by name, from its working folder (`python -c`): Python 3.11 gives the server
        # neither the main module (its "__main__" preload is lost) nor sys.path
        here = os.getcwd()
        os.chdir(Path(__file__).parent)
        try:
            multiprocessing.forkserver.ensure_running()
        finally:
            os.chdir(here)
        self.done = self.context.Queue()
        self.workers: list[tuple[Any, Any]] = []

    def ranks(self, tasks: list[tuple[Any, ...]]) -> list[str]:
        """Task k on worker k, all at once; the traceback of the first rank that failed."""
        while len(self.workers) < len(tasks):
            queue = self.context.Queue()
            process = self.context.Process(target=worker, daemon=True,
                                           args=(len(self.workers), queue, self.done))
            process.start()
            self.workers.append((process, queue))
        for (_, queue), task in zip(self.workers, tasks, strict=False):
            queue.put(task)
        left = len(tasks)
        while left:
            try:
                _, error = self.done.get(timeout=5)
            except Empty:
                dead = [k for k, (p, _) in enumerate(self.workers) if not p.is_alive()]
                if dead:
                    raise RuntimeError(f"worker(s) {dead} died") from None
                continue
            left -= 1
            if error is not None:  # as a spawn, end the other ranks (they may wait on it)
                self.close(kill=True)
                return [error]
        return []

    def close(self, kill: bool = False) -> None:
        for process, queue in self.workers:
            if kill:
                process.kill()
            else:
                queue.put(None)
            process.join()
        self.workers = []
        if kill:  # answers of the killed ranks' tasks must not reach the next job
            self.done = self.context.Queue()


def _main_job(pool: Pool, job: dict[str, Any], k: int) -> None:
    """The script's command `python MAIN ARGV` from CWD, its spawn on the pool."""
    out, err = io.StringIO(), io.StringIO()
    logs = Path(job["out"]).with_suffix(".ranks")
    logs.mkdir(exist_ok=True)

    def spawn(fn: Callable[..., Any], args: tuple[Any, ...] = (), nprocs: int = 1,
              **_: Any) -> None:
        paths = [str(logs / f"rank{r}.txt") for r in range(nprocs)]
        failed = pool.ranks([("call", job["main"], fn.__name__, args, job["cwd"], paths[r], k)
                             for r in range(nprocs)])
        for path in paths:
            if Path(path).exists():  # a rank ended with a failed one may have none
                print(Path(path).read_text(encoding="utf-8"), end="")
        if failed:
            raise RuntimeError("a spawned rank failed:\n" + "\n".join(failed))

    code: int = 0
    here, argv, spawned = os.getcwd(), sys.argv, torch.multiprocessing.spawn
    os.chdir(job["cwd"])
    sys.argv = [job["main"], *job["argv"]]
    torch.multiprocessing.spawn = spawn  # type: ignore[assignment]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                load(job["main"], f"_pipeline_main_{k}").main(job["argv"])
            except SystemExit as stop:  # sys.exit(1) of a failed check, argparse's 2
                if isinstance(stop.code, str):
                    print(stop.code, file=sys.stderr)
                code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
            except Exception:
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(here)
        sys.argv = argv
        torch.multiprocessing.spawn = spawned
    Path(job["out"]).write_text(json.dumps({"returncode": code, "stdout": out.getvalue(),
                                            "stderr": err.getvalue()}))


def run_file(pool: Pool, path: str) -> None:
    """Run the jobs listed in the JSON file `path` on `pool`; SystemExit with the failed
    ranks' tracebacks."""
    with open(path, encoding="utf-8") as f:
        jobs = json.load(f)
    for k, job in enumerate(jobs):
        if "main" in job:
            _main_job(pool, job, k)
            continue
        failed = pool.ranks([("run", job, k)] * job["ranks"])
        if failed:
            raise SystemExit("\n".join(failed))


def main(path: str) -> None:
    """Run the jobs listed in the JSON file `path`."""
    pool = Pool()
    try:
        run_file(pool, path)
    finally:
        pool.close()


def serve() -> None:
    """Run each JOBS.json named on standard input, answering on standard output; what the
    jobs and ranks print goes to standard error, not into the answers."""
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # fd 1 of this process and of the workers it starts: standard error
    pool = Pool()
    try:
        for line in sys.stdin:
            error = None
            try:
                run_file(pool, line.strip())
            except (Exception, SystemExit) as failed:  # answered; the next file runs
                error = str(failed) if isinstance(failed, SystemExit) else \
                    traceback.format_exc()
                pool.close(kill=True)  # a rank may be stuck on one that failed
            sys.stdout.flush()
            answers.write(json.dumps({"error": error}) + "\n")
            answers.flush()
    finally:
        pool.close()


def _preload() -> None:
    """What the ranks' fork server imports for them: torch's pipelining, and Hugging Face's
    GPT-2 (most pipeline tests' model) where transformers is installed. Spawned, each of 4
    ranks imported them itself (about 4 s of CPU time a rank)."""
    import torch.distributed.pipelining  # noqa: F401

    # as torch_pipeline_models.gpt2 does: transformers imports torchvision, whose PyPI
    # build fails beside the CPU torch while it registers kernels no model here uses
    sys.modules.setdefault("torchvision._meta_registrations",
                           types.ModuleType("torchvision._meta_registrations"))
    # optional (the GPT-2 tests skip without it); any failure here only costs the ranks
    # the import, where they need it, and must not end the server
    with contextlib.suppress(Exception):
        from transformers import GPT2Config, GPT2LMHeadModel  # noqa: F401


if __name__ == Path(__file__).stem:  # imported by the fork server (`Pool`)
    _preload()
elif __name__ == "__main__":
    serve() if sys.argv[1] == "--serve" else main(sys.argv[1])
