"""One confinement rule for every path a command opens (issue 29, finding 1): a symlink
planted in a repository, at any depth, cannot make a command read, run or overwrite a file
outside it. `--times`, `--placement`, `diff`'s plan files, `--cluster` and a model file
are refused (E008) before they are opened, naming the link and quoting nothing of the
target; an output (`--out`, `-o`) whose link leads out is refused before any work (E604)
and the target is left as it was. A link that stays inside the repository, and a path
named directly, are taken as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .helpers import invoke
from .test_input_placement import SPEC  # two ops, a -> b, on gpu0 and gpu1

SECRET = "SECRET_TOKEN=ghp_abcdef123456"
GRAPH = {"format": "planner-graph", "version": 1, "name": "g",
         "ops": [{"name": "a", "time_s": 0.001}, {"name": "b", "time_s": 0.002}],
         "edges": [{"src": "a", "dst": "b"}]}
PLAN = '{"placement": {"a": "gpu0", "b": "gpu1"}}'


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    """tmp/repo (a git repository holding spec.plan and g.json) and tmp/outside, whose
    files hold a secret in the shape each reader would accept."""
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / ".git").mkdir(parents=True)
    outside.mkdir()
    (repo / "spec.plan").write_text(SPEC)
    (repo / "g.json").write_text(json.dumps(GRAPH))
    (outside / "times.csv").write_text(f"a,0.5\n{SECRET},1\n")
    (outside / "plan.json").write_text(PLAN.replace("}}", f', "{SECRET}": "gpu0"}}}}'))
    (outside / "cluster.plan").write_text(SPEC.replace("cluster c", f"cluster {SECRET[:12]}"))
    (outside / "model.py").write_text(f"raise SystemExit({SECRET!r})\n")
    return repo, outside


def _link(repo: Path, outside: Path, name: str, depth: bool) -> str:
    """A link in `repo` to `outside/name`: the file itself, or (`depth`) a folder above it."""
    if depth:
        (repo / "sub").symlink_to(outside)
        return f"sub/{name}"
    (repo / name).symlink_to(outside / name)
    return name


READS = {
    "times.csv": lambda f: ["import", "json", "g.json", "--times", f, "-o", "out.plan"],
    "plan.json": lambda f: ["simulate", "spec.plan", "--placement", f],
    "cluster.plan": lambda f: ["import", "json", "g.json", "--cluster", f, "-o", "out.plan"],
}


@pytest.mark.parametrize("depth", [False, True], ids=["file-link", "folder-link"])
@pytest.mark.parametrize("name", sorted(READS))
def test_a_file_read_through_a_link_out_of_the_repository_is_refused(
        tmp_path: Path, name: str, depth: bool) -> None:
    repo, outside = _repo(tmp_path)
    path = _link(repo, outside, name, depth)
    code, out, err = invoke(READS[name](path), repo)
    assert code == 1 and "E008" in out + err and "through a symlink" in out + err, out + err
    assert path in out + err  # the link is named, as given
    assert "SECRET" not in out + err and "ghp_" not in out + err, out + err
    assert not (repo / "out.plan").exists()


@pytest.mark.parametrize("depth", [False, True], ids=["file-link", "folder-link"])
def test_diff_refuses_a_plan_file_through_a_link_out(tmp_path: Path, depth: bool) -> None:
    repo, outside = _repo(tmp_path)
    (repo / "mine.json").write_text(PLAN)
    path = _link(repo, outside, "plan.json", depth)
    for args in (["diff", "mine.json", path], ["diff", path, "mine.json", "--format", "github"]):
        code, out, err = invoke(args, repo)
        assert code == 1 and "E008" in out + err, out + err
        assert "ghp_" not in out + err


@pytest.mark.parametrize("depth", [False, True], ids=["file-link", "folder-link"])
def test_an_output_through_a_link_out_is_refused_before_any_work(tmp_path: Path,
                                                                 depth: bool) -> None:
    repo, outside = _repo(tmp_path)
    victim = outside / "plan.json"
    before = victim.read_text()
    path = _link(repo, outside, "plan.json", depth)
    for args in (["solve", "spec.plan", "--out", path],
                 ["import", "json", "g.json", "-o", path],
                 ["export", "json", "spec.plan", "-o", path]):
        code, out, err = invoke(args, repo)
        assert code == 2 and "E604" in out + err, (args, out + err)
        assert "through a symlink" in out + err
        assert victim.read_text() == before, args


def test_the_write_itself_checks_again(tmp_path: Path) -> None:
    """A link planted after the up-front check is refused when the file is written."""
    from planner.errors import UsageError
    from planner.files import write_text_atomic

    repo, outside = _repo(tmp_path)
    (repo / "late.json").symlink_to(outside / "plan.json")
    with pytest.raises(UsageError) as caught:
        write_text_atomic(repo / "late.json", "{}")
    assert caught.value.diagnostics[0].code == "E622"
    assert (outside / "plan.json").read_text().startswith('{"placement"')


def test_a_model_file_through_a_link_out_is_not_run(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="import torch needs torch (the `torch` extra)")
    repo, outside = _repo(tmp_path)
    _link(repo, outside, "model.py", False)
    code, out, err = invoke(["import", "torch", "model.py:model", "-o", "m.plan"], repo)
    assert code == 1 and "E008" in out + err, out + err
    assert "ghp_" not in out + err  # had it run, E939 would quote its exit message


def test_links_inside_the_repository_and_direct_paths_still_work(tmp_path: Path) -> None:
    repo, outside = _repo(tmp_path)
    (repo / "data").mkdir()
    (repo / "data" / "times.csv").write_text("a,0.5\nb,0.25\n")
    (repo / "times.csv").symlink_to(repo / "data" / "times.csv")
    (repo / "p.json").write_text(PLAN)
    (repo / "link.json").symlink_to(repo / "p.json")
    code, out, err = invoke(["import", "json", "g.json", "--times", "times.csv", "-o",
                             "out.plan"], repo)
    assert code == 0 and "time 500 ms" in (repo / "out.plan").read_text(), out + err
    code, out, err = invoke(["simulate", "spec.plan", "--placement", "link.json"], repo)
    assert code == 0, out + err
    # named directly, a file outside is read and written as the user asked
    (outside / "good.csv").write_text("a,0.5\nb,0.25\n")
    code, out, err = invoke(["import", "json", "g.json", "--times", str(outside / "good.csv"),
                             "-o", str(outside / "out.plan")], repo)
    assert code == 0 and (outside / "out.plan").exists(), out + err
