"""README's Performance table is the rendering of the committed benchmark results.

The benchmarks behind the table write their figures with `--record` to
`bench/results/<benchmark>.json`; `bench/readme_table.py` renders the table from them.
These tests only render (they run no benchmark): they fail when README's table differs from
the rendering, or when a row's results file or figure is missing.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))  # bench/ is scripts, not a package
import readme_table  # noqa: E402 - after bench/ is on the path
from recording import FORMAT, RESULTS_DIR  # noqa: E402 - likewise

README = ROOT / "README.md"


def test_readme_table_is_the_rendering_of_the_recorded_results() -> None:
    text = README.read_text(encoding="utf-8")
    begin, end = readme_table.block_span(text)
    rendered = readme_table.render(readme_table.Results())
    assert text[begin:end] == rendered, (
        "README's Performance table differs from bench/results/*.json: re-run "
        "`python bench/readme_table.py` (after the benchmark's `--record`), never edit the "
        "table by hand")


def test_every_row_has_its_results_file() -> None:
    needed = {name for row in readme_table.ROWS for name in row.sources}
    missing = sorted(name for name in needed if not (RESULTS_DIR / f"{name}.json").is_file())
    assert not missing, f"results files missing from bench/results/: {missing}"


def test_the_block_sits_in_the_performance_section() -> None:
    text = README.read_text(encoding="utf-8")
    begin, _ = readme_table.block_span(text)
    headings = re.findall(r"^## (.+)$", text[:begin], flags=re.MULTILINE)
    assert headings[-1] == "Performance"


@pytest.mark.parametrize("path", sorted(RESULTS_DIR.glob("*.json")), ids=lambda p: p.stem)
def test_each_results_file_says_how_it_was_made(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == FORMAT
    assert data["command"].startswith("python bench/") and "--record" in data["command"]
    assert Path(data["benchmark"]).stem == path.stem
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", data["date"])
    machine = data["machine"]
    assert isinstance(machine["cpus"], int) and machine["python"].count(".") == 2
    assert data["figures"]
    for name, figure in data["figures"].items():
        assert figure["unit"] and figure["what"], name
        assert ("value" in figure) != ("min" in figure and "max" in figure), name


@pytest.fixture
def results_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    shutil.copytree(RESULTS_DIR, folder)
    return folder


def test_a_changed_figure_changes_the_table(results_copy: Path) -> None:
    path = results_copy / "bench_process.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    figure = data["figures"]["help_cpu_s"]
    if "value" in figure:
        figure["value"] = 9.87
    else:
        figure.update(min=9.87, max=9.88)
    path.write_text(json.dumps(data), encoding="utf-8")
    table = readme_table.render(readme_table.Results(results_copy))
    assert "| `planner --help` | 9.87" in table
    assert table != readme_table.render(readme_table.Results())


def test_a_missing_results_file_is_named(results_copy: Path) -> None:
    (results_copy / "bench_parse.json").unlink()
    with pytest.raises(readme_table.MissingResults, match="bench_parse.json is missing"):
        readme_table.render(readme_table.Results(results_copy))


def test_a_missing_figure_is_named(results_copy: Path) -> None:
    path = results_copy / "bench_simulate.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["figures"]["simulate_100k_cpu_s"]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(readme_table.MissingResults, match="simulate_100k_cpu_s"):
        readme_table.render(readme_table.Results(results_copy))


def test_check_exits_1_on_a_difference_and_the_rewrite_touches_only_the_block(
        tmp_path: Path, results_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = tmp_path / "README.md"
    stale = (f"# Title\n\n## Performance\n\nbefore\n\n{readme_table.BEGIN}\n| old |\n"
             f"{readme_table.END}\n\nafter\n")
    readme.write_text(stale, encoding="utf-8")
    args = ["--readme", str(readme), "--results", str(results_copy)]
    assert readme_table.main([*args, "--check"]) == 1
    assert "differs" in capsys.readouterr().out
    assert readme.read_text(encoding="utf-8") == stale  # --check writes nothing
    assert readme_table.main(args) == 0
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("# Title\n\n## Performance\n\nbefore\n\n")
    assert text.endswith(f"{readme_table.END}\n\nafter\n")
    assert readme_table.main([*args, "--check"]) == 0


def test_a_readme_without_markers_is_refused(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("## Performance\n\n| what |\n", encoding="utf-8")
    assert readme_table.main(["--readme", str(readme), "--check"]) == 1
