"""The CLI loads a spec with the collector paused, then freezes the model out of its sight,
and collects less often after a big model (`planner.cli._load`, issue 16)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

import planner.cli as cli

RESNET = Path(__file__).resolve().parents[2] / "specs" / "resnet.plan"


@pytest.fixture(autouse=True)
def _collector_restored(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # a "big" model arms the fast exit (`cli.fastexit`); this process is pytest's
    monkeypatch.setattr(cli.fastexit, "_armed", False)
    threshold = gc.get_threshold()
    gc.unfreeze()  # what earlier tests loaded in this process
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_the_loaded_model_is_frozen_and_the_collector_left_on() -> None:
    frozen = gc.get_freeze_count()
    loaded = cli._load(RESNET)
    assert gc.isenabled()
    assert gc.get_freeze_count() > frozen
    graph = next(iter(loaded.spec.graphs.values()))
    assert not any(o is graph for o in gc.get_objects())  # in the permanent generation


def test_only_a_big_model_makes_collections_rarer(monkeypatch: pytest.MonkeyPatch) -> None:
    gc.set_threshold(700, 10, 10)
    # every object of this process may be frozen with the model: none of them is big
    monkeypatch.setattr(cli, "BIG_MODEL_OBJECTS", len(gc.get_objects()) + 100_000)
    cli._load(RESNET)
    assert gc.get_threshold() == (700, 10, 10)  # a small spec changes nothing
    cli._load(RESNET)  # what is frozen already does not count again
    assert gc.get_threshold() == (700, 10, 10)
    monkeypatch.setattr(cli, "BIG_MODEL_OBJECTS", 1)
    cli._load(RESNET)
    assert gc.get_threshold() == (100_000, 10, 10)


def test_a_failed_load_leaves_the_collector_on(tmp_path: Path) -> None:
    bad = tmp_path / "bad.plan"
    bad.write_text("graph g { op a { tiem 1 ms } }\n", encoding="utf-8")
    with pytest.raises(cli.SpecError):
        cli._load(bad)
    assert gc.isenabled()


def test_a_small_model_is_small_whatever_the_process_holds() -> None:
    # an embedding process (a test session, a notebook) holds many objects of its own: they
    # are frozen with the model but are not the model's (before: counted, so a small spec
    # made collections rarer and armed the fast exit)
    gc.set_threshold(700, 10, 10)
    held = [[k] for k in range(2 * cli.BIG_MODEL_OBJECTS)]
    cli._load(RESNET)
    assert gc.get_threshold() == (700, 10, 10)
    assert not cli.fastexit._armed
    del held
