"""A `.pt2` that is no zip archive is one E939 that says what the file is, in words, and
never quotes it: a saved program is binary, whatever a wrong file holds. Before: "not a
zip archive (BadZipFile)", with a text file's first line (a Git LFS pointer's `version
https://...`, or an empty line 1 for an empty file) quoted under a caret as the fault."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.errors import Diagnostic, Span, SpecError, render_all
from planner.io.torch_program import _check_archive
from planner.render.diagnostics import source_texts

LFS = ("version https://git-lfs.github.com/spec/v1\n"
       "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
       "size 12345\n")


@pytest.mark.parametrize(("text", "said", "hint"), [
    ("hello, not a program\n", "is no torch.export program: not a zip archive, as "
     "torch.export.save writes", "torch.export.save(torch.export.export(model, args), PATH)"),
    ("", "is no torch.export program: the file is empty", "torch.export.save("),
    (LFS, "is a Git LFS pointer, not the program it stands for", "git lfs pull"),
], ids=["text", "empty", "lfs-pointer"])
def test_a_pt2_that_is_no_archive_says_what_it_is_and_quotes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, said: str,
        hint: str) -> None:
    monkeypatch.chdir(tmp_path)
    Path("m.pt2").write_text(text)
    with pytest.raises(SpecError) as caught:
        _check_archive("m.pt2")
    (d,) = caught.value.diagnostics
    assert d.code == "E939" and d.message == f"m.pt2 {said}", d.message
    assert any(hint in h for h in d.hints), d.hints
    shown = render_all([d], source_texts([d]))
    assert shown.startswith("m.pt2:1:1: error[E939]") and " | " not in shown, shown
    assert "BadZipFile" not in shown


def test_a_python_model_files_e939_is_still_quoted(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("model.py").write_text("import nothing_here\n")
    d = Diagnostic("E939", "cannot import model.py", Span.start_of("model.py"))
    assert " 1 | import nothing_here" in render_all([d], source_texts([d]))
