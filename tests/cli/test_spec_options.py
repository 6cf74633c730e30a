"""The options shared by `import` and `generate` (`io_commands.SpecOptions`): what the
spec's header records of them, and where `--help` lists them."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from .helpers import ROOT, invoke

PROFILE = ROOT / "tests" / "io" / "fixtures" / "pipedream_small.txt"
SMALL_GNMT = ["generate", "gnmt", "--layers", "2", "--hidden", "64", "--seq", "3"]


def _recorded(spec: Path) -> str:
    """The command line the spec's header records (its second line, after `# $ `)."""
    return spec.read_text(encoding="utf-8").splitlines()[1].removeprefix("# $ ")


def test_defaults_given_are_left_out_of_the_header(tmp_path: Path) -> None:
    args = [*SMALL_GNMT, "--dtype", "fp32", "--device-profile", "v100", "--optimizer", "sgd",
            "--contention", "link", "-o", "g.plan"]
    code, _, err = invoke(args, tmp_path)
    assert code == 0, err
    assert _recorded(tmp_path / "g.plan") == (
        "planner generate gnmt --layers 2 --hidden 64 --vocab 32000 --seq 3 --batch 128 "
        "-o g.plan")
    assert "W927" in err  # `--optimizer` without `--training` (not a default: ignored)


def test_an_option_given_without_the_one_it_needs_is_a_warning(tmp_path: Path) -> None:
    # `--optimizer sgd` without `--training` made a forward-only spec, and `--times-kind`
    # without `--times` laid no time, both silently: exit 0 and nothing on stderr
    code, _, err = invoke(["import", "pipedream", str(PROFILE), "--optimizer", "sgd",
                           "--times-kind", "gpu", "-o", "p.plan"], tmp_path)
    assert code == 0, err
    assert err.count("warning[W927]") == 2, err
    assert "--optimizer sgd is ignored without --training" in err
    assert "hint: add --training, or leave out --optimizer" in err
    assert "--times-kind gpu is ignored without --times" in err
    assert "hint: add --times, or leave out --times-kind" in err
    assert "wrote p.plan: 5 ops" in err  # the spec as before: forward only, no state
    # a default given explicitly is as void; given with what it needs, no warning
    code, _, err = invoke([*SMALL_GNMT, "--optimizer", "adam", "-o", "g.plan"], tmp_path)
    assert code == 0 and "--optimizer adam is ignored without --training" in err, err
    code, _, err = invoke(["import", "pipedream", str(PROFILE), "--training", "--optimizer",
                           "sgd", "-o", "p.plan"], tmp_path)
    assert code == 0 and "W927" not in err, err


def test_import_torch_measuring_options_without_measure_are_warnings(tmp_path: Path) -> None:
    """Before: `--kind`, `--warmup`, `--repeat`, `--threads` without `--measure` were
    silently ignored (their help says they apply with it). The warnings come before the
    model is read, so a module that is not there shows them as well as any."""
    args = ["import", "torch", "no_such_module_l10:model", "-o", "t.plan"]
    given = ["--kind", "gpu", "--warmup", "5", "--repeat", "3", "--threads", "2"]
    _, _, err = invoke([*args, *given], tmp_path)
    assert err.count("warning[W927]") == 4, err
    for flag, value in zip(given[::2], given[1::2], strict=True):
        assert (f"{flag} {value} is ignored without --measure: it applies only to the op "
                f"times that --measure takes") in err
        assert f"hint: add --measure, or leave out {flag}" in err
    _, _, err = invoke([*args, "--warmup", "3"], tmp_path)  # a default given explicitly
    assert "--warmup 3 is ignored without --measure" in err, err
    _, _, err = invoke([*args, "--measure", "cpu", *given], tmp_path)
    assert "W927" not in err, err
    # generate takes no --measure: nothing of it to warn about
    code, _, err = invoke([*SMALL_GNMT, "-o", "g.plan"], tmp_path)
    assert code == 0 and "W927" not in err, err


def test_every_shared_option_is_recorded_in_order(tmp_path: Path) -> None:
    cluster = ROOT / "specs" / "clusters" / "small4.plan"
    args = [*SMALL_GNMT, "--contention", "none", "--memory", "static", "--cluster",
            str(cluster), "--name", "g", "--optimizer", "sgd", "--training",
            "--device-profile", "a100", "--dtype", "fp16", "-o", "g.plan"]
    code, _, err = invoke(args, tmp_path)
    assert code == 0, err
    assert _recorded(tmp_path / "g.plan") == (
        "planner generate gnmt --layers 2 --hidden 64 --vocab 32000 --seq 3 --batch 128 "
        "--dtype fp16 --device-profile a100 --training --optimizer sgd --name g "
        f"--cluster {shlex.quote(str(cluster))} --memory static --contention none -o g.plan")


def test_an_import_takes_its_groups_only(tmp_path: Path) -> None:
    code, out, _ = invoke(["import", "pipedream", "--help"], tmp_path)
    assert code == 0
    flags = [word for line in out.splitlines()
             if (word := line.strip().split(" ")[0].rstrip(",")).startswith("-")]
    assert flags == ["-o", "--training", "--optimizer", "--name", "--cluster", "--memory",
                     "--contention", "--limit", "--times", "--times-kind", "--help"]
    code, _, err = invoke(["import", "pipedream", str(PROFILE), "--training", "--times-kind",
                           "gpu", "-o", "p.plan"], tmp_path)
    assert code == 0 and "W927" in err, err
    assert _recorded(tmp_path / "p.plan") == (  # ignored without --times: not recorded
        f"planner import pipedream {shlex.quote(str(PROFILE))} --training -o p.plan")


def test_options_ignored_with_w927_are_left_out_of_the_header(tmp_path: Path) -> None:
    """Before: `import torch --kind gpu --threads 2` without `--measure` warned W927 that
    both were ignored, and its header recorded them as if they had made the spec."""
    pytest.importorskip("torch", reason="PyTorch is not installed")
    (tmp_path / "lin.py").write_text("import torch\nmodel = torch.nn.Linear(4, 2)\n")
    args = ["import", "torch", "lin.py:model", "--input", "1x4"]
    code, _, err = invoke([*args, "--kind", "gpu", "--threads", "2", "--warmup", "5",
                           "-o", "t.plan"], tmp_path)
    assert code == 0 and err.count("warning[W927]") == 3, err
    assert _recorded(tmp_path / "t.plan") == "planner import torch lin.py:model --input 1x4 " \
                                             "-o t.plan"
    code, _, err = invoke([*args, "--measure", "cpu", "--kind", "gpu", "--threads", "1",
                           "--repeat", "2", "-o", "m.plan"], tmp_path)
    assert code == 0 and "W927" not in err, err
    assert _recorded(tmp_path / "m.plan") == (
        "planner import torch lin.py:model --input 1x4 --measure cpu --kind gpu --repeat 2 "
        "--threads 1 -o m.plan")


def test_the_limit_a_hint_names_is_taken_by_every_command_that_loads_a_spec(
        tmp_path: Path) -> None:
    # `export json` and `diff --spec` load specs and printed E011's (E007's) hint "raise the
    # limit with `--limit ops=N`", then refused --limit: "No such option" (and --root)
    (tmp_path / "s.plan").write_text(
        "cluster c { device d[0..1] { memory 1 GiB } link d0 <-> d1 { bandwidth 1 GB/s } }\n"
        "graph g { op a { time 1 ms  output 1 MiB } op b { time 1 ms } op c { time 1 ms }\n"
        "  a -> b -> c }\nplan p { graph g  cluster c }\n", encoding="utf-8")
    code, _, err = invoke(["solve", "s.plan", "--algo", "metf", "--out", "p.json"], tmp_path)
    assert code == 0, err
    for command in (["export", "json", "s.plan"], ["diff", "p.json", "p.json", "--spec", "s.plan"]):
        code, _, err = invoke([*command, "--limit", "ops=2", "--root", "."], tmp_path)
        assert code == 1 and "error[E011]" in err, (command, err)
        hinted = re.search(r"--limit (ops=\d+)", err)
        assert hinted, err
        code, out, err = invoke([*command, "--limit", hinted.group(1), "--root", "."], tmp_path)
        assert code == 0 and out, (command, err)
