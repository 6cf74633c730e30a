"""A model TARGET of `import torch` (and `export torch`, which loads it the same way) that
names a folder or a missing file is told so as every other input file is: E002 at the
path alone, E001 with no place, not E939 "adir defines no `model`" (Python imports a
folder without `__init__.py` as an empty package) or "no such Python file" at line 1 of
a file that does not exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import invoke

pytest.importorskip("torch", reason="PyTorch is not installed (pip install 'planner[torch]')")


@pytest.mark.parametrize(("target", "shown"), [
    ("adir", "adir"), ("adir:make", "adir"), ("sub/adir", "sub/adir"),
    ("adir.py:model", "adir.py"), ("adir.pt2", "adir.pt2"),
])
def test_a_folder_is_e002_at_its_path(tmp_path: Path, target: str, shown: str) -> None:
    (tmp_path / shown).mkdir(parents=True)
    code, _, err = invoke(["import", "torch", target, "--input", "2x4", "-o", "m.plan"],
                          tmp_path)
    kind = "saved program" if shown.endswith(".pt2") else "Python"
    assert code == 1 and err.startswith(
        f"{shown}: error[E002]: {shown} is a directory, not a {kind} file\n  = hint: give "), err
    assert not (tmp_path / "m.plan").exists()


@pytest.mark.parametrize("target", ["gone.py", "gone.py:make", "sub/gone", "gone.pt2"])
def test_a_missing_file_is_e001(tmp_path: Path, target: str) -> None:
    code, _, err = invoke(["import", "torch", target, "--input", "2x4", "-o", "m.plan"],
                          tmp_path)
    shown = target.partition(":")[0]
    assert code == 1 and err.startswith(f"error[E001]: no such file: {shown}\n"
                                        "  = hint: check the path"), err


def test_a_package_folder_still_imports_as_a_module(tmp_path: Path) -> None:
    """A folder with an `__init__.py` is a package: TARGET `package:NAME` stays a module."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(
        "import torch\n\ndef model():\n    return torch.nn.Linear(4, 4)\n")
    code, _, err = invoke(["import", "torch", "pkg", "--input", "2x4", "-o", "m.plan"],
                          tmp_path)
    assert code == 0 and (tmp_path / "m.plan").exists(), err
    code, _, err = invoke(["import", "torch", "pkg:make", "--input", "2x4", "-o", "n.plan"],
                          tmp_path)
    assert code == 1 and "error[E939]: pkg defines no `make`" in err, err
