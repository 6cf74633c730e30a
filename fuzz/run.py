"""Coverage-guided fuzzing of planner's pipeline with atheris (libFuzzer for Python).

    python fuzz/run.py --minutes 10          # needs `pip install -e '.[fuzz]'`
    python fuzz/run.py --seeds-only          # every seed once, no atheris needed

The target is `fuzz/target.py` (load -> check -> solve with metf and heft -> simulate ->
JSON and HTML). The corpus starts from the small specs of `specs/` and `tests/`
(`target.seeds()`) and grows in `fuzz/.corpus/` (not committed); reproducers of findings
go to `fuzz/findings/`, and the run's figures to `fuzz/findings/last-run.json` (written
as the run goes, since libFuzzer ends the process itself). Exit 0 when nothing but
known issues was found, 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from target import Harness, seeds

FINDINGS = HERE / "findings"
CORPUS = HERE / ".corpus"


class Recorder:
    """Wraps the harness: writes figures and reproducers as the run goes."""

    #: seconds between two saves of the figures: libFuzzer ends the process without
    #: returning, so what is not saved by then is lost (a count of runs alone, every 200,
    #: saved nothing in a short run on a busy machine, leaving an older run's file)
    EVERY_S = 1.0

    def __init__(self, harness: Harness, started: float) -> None:
        self.harness = harness
        self.started = started
        self.written = 0
        self.saved_at = 0.0

    def __call__(self, data: bytes) -> None:
        before = len(self.harness.findings)
        self.harness.one_input(data)
        if (len(self.harness.findings) != before
                or time.monotonic() - self.saved_at >= self.EVERY_S):
            self.save()

    def save(self) -> None:
        FINDINGS.mkdir(exist_ok=True)
        for f in self.harness.findings.values():
            name = f"{f.kind}-{hashlib.sha1(f.where.encode()).hexdigest()[:8]}.plan"
            (FINDINGS / name).write_bytes(f.example)
        for where, data in self.harness.known_examples.items():
            tag = hashlib.sha1(where.encode()).hexdigest()[:8]
            (FINDINGS / f"known-{tag}.plan").write_bytes(data)
        doc = {"engine": "atheris", "seconds": round(time.time() - self.started, 1),
               **self.harness.summary()}
        (FINDINGS / "last-run.json").write_text(json.dumps(doc, indent=2) + "\n")
        self.saved_at = time.monotonic()


def _seed_corpus(corpus: Path) -> None:
    corpus.mkdir(exist_ok=True)
    for path in seeds():
        data = path.read_bytes()
        (corpus / hashlib.sha1(data).hexdigest()).write_bytes(data)


def main() -> int:
    """Parse the options and fuzz (or run the seeds once)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="how long to fuzz")
    ap.add_argument("--runs", type=int, default=0, help="stop after this many inputs (0: no cap)")
    ap.add_argument("--slack", type=float, default=1.0,
                    help="multiply every phase's time bound (a loaded machine)")
    ap.add_argument("--strict", action="store_true", help="stop at the first finding")
    ap.add_argument("--seeds-only", action="store_true", help="run each seed once and stop")
    ap.add_argument("--fresh", action="store_true", help="start the corpus from the seeds again")
    # libFuzzer runs every corpus input before it mutates any, inside --minutes: a grown
    # corpus (745 inputs) took the whole of a short run (CI's test gives its own)
    ap.add_argument("--corpus", type=Path, default=CORPUS,
                    help=f"the corpus folder (default {CORPUS.relative_to(HERE.parent)})")
    args = ap.parse_args()

    harness = Harness(slack=args.slack, strict=args.strict)
    recorder = Recorder(harness, time.time())
    if args.seeds_only:
        for path in seeds():
            recorder(path.read_bytes())
        recorder.save()
        harness.close()
        print(json.dumps(harness.summary(), indent=2))
        return 1 if harness.findings else 0

    try:
        import atheris
    except ImportError:
        print("atheris is not installed: pip install -e '.[fuzz]' (or use --seeds-only)",
              file=sys.stderr)
        return 2
    with atheris.instrument_imports(include=["planner"]):
        import planner.algorithms.heft
        import planner.algorithms.metf
        import planner.bounds
        import planner.render.html
        import planner.simulate
        import planner.spec.checks
        import planner.spec.load
        import planner.strictjson  # noqa: F401
    harness.templates = True  # the structure-aware half (target.from_template)
    if args.fresh and args.corpus.exists():
        shutil.rmtree(args.corpus)
    _seed_corpus(args.corpus)
    FINDINGS.mkdir(exist_ok=True)
    os.environ.setdefault("PLANNER_FUZZ", "1")
    engine = [sys.argv[0], str(args.corpus), f"-max_total_time={max(1, int(args.minutes * 60))}",
              f"-max_len={8192}", "-timeout=120", "-rss_limit_mb=6144", "-print_final_stats=1",
              f"-dict={HERE / 'plan.dict'}",  # the language's keywords, units, operators
              f"-artifact_prefix={FINDINGS}/"]  # crash, timeout and out-of-memory inputs
    if args.runs:
        engine.append(f"-runs={args.runs}")
    atheris.Setup(engine, recorder)
    try:
        atheris.Fuzz()  # libFuzzer exits the process itself when time is up
    finally:
        recorder.save()
        harness.close()
    return 1 if harness.findings else 0


if __name__ == "__main__":
    sys.exit(main())
