"""`--times` files (issue 29, findings 2, 11 and 12): read by the strict JSON reader (a key
given twice is an error naming both places, a 4,301-digit integer a located "number too
long", never E999), and a file that is no times file (`/etc/passwd`, a link to
`/proc/self/environ`, a credentials JSON) is E935 quoting none of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app

GRAPH = {"format": "planner-graph", "version": 1, "name": "g",
         "ops": [{"name": "a", "time_s": 0.001}, {"name": "b", "time_s": 0.002}],
         "edges": [{"src": "a", "dst": "b"}]}


@pytest.mark.parametrize(("times", "said"), [
    ('{"a": 0.001, "a": 0.002}', 'key "a" is given twice'),
    ('{"a": ' + "9" * 4301 + "}", "number too long"),
])
def test_a_times_file_with_a_key_twice_or_a_long_integer_is_e935(tmp_path: Path, times: str,
                                                                  said: str) -> None:
    (tmp_path / "g.json").write_text(json.dumps(GRAPH))
    (tmp_path / "t.json").write_text(times)
    result = CliRunner().invoke(app, ["import", "json", str(tmp_path / "g.json"), "--times",
                                      str(tmp_path / "t.json"), "-o", str(tmp_path / "g.plan")])
    assert result.exit_code == 1 and "E935" in result.output and said in result.output, \
        result.output
    assert "Traceback" not in result.output and not (tmp_path / "g.plan").exists()


SECRET = "SECRET_TOKEN=ghp_abcdef123456"


@pytest.mark.parametrize("content", [
    f"HOME=/root\0{SECRET}\0PATH=/usr/bin,/bin\0",  # /proc/self/environ
    f"root:x:0:0:root:/root:/bin/bash\nme:x:1000:1000:{SECRET}:/home/me:/bin/sh\n",
    f"{SECRET},-1\n",
    f'{{"token": "{SECRET}"}}',
    f'{{"token": "{SECRET}", "nested": {{"a": 1}}}}',
])
def test_a_file_that_is_no_times_file_is_not_quoted(tmp_path: Path, content: str) -> None:
    (tmp_path / "g.json").write_text(json.dumps(GRAPH))
    (tmp_path / "private").write_text(content)
    (tmp_path / "times.csv").symlink_to(tmp_path / "private")
    result = CliRunner().invoke(app, ["import", "json", str(tmp_path / "g.json"), "--times",
                                      str(tmp_path / "times.csv"), "-o",
                                      str(tmp_path / "g.plan")])
    assert result.exit_code == 1 and "E935" in result.output, result.output
    assert "ghp_" not in result.output and "root:x" not in result.output


@pytest.mark.parametrize(("content", "code"), [
    ("\r\0", "E935"),  # no times file at all (the fuzzer's: a csv.Error, E999 before)
    ("a,0.001\n\r\0", "E934"),  # a times file with a line the CSV reader cannot read
])
def test_a_carriage_return_or_nul_outside_quotes_is_a_diagnostic(tmp_path: Path,
                                                                  content: str,
                                                                  code: str) -> None:
    (tmp_path / "g.json").write_text(json.dumps(GRAPH))
    (tmp_path / "t.csv").write_bytes(content.encode())
    result = CliRunner().invoke(app, ["import", "json", str(tmp_path / "g.json"), "--times",
                                      str(tmp_path / "t.csv"), "-o", str(tmp_path / "g.plan")])
    assert result.exit_code == 1 and code in result.output, result.output
    assert "E999" not in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("times", ['{"a": "0.5"}', '{"b": 0.25,\n "a": "0.5"}'])
def test_a_time_written_as_a_json_string_is_e934_at_it(tmp_path: Path, times: str) -> None:
    """`{"a": "0.5"}` was read as 0.5 s without a word (`float()` takes a string), where
    `true` or `[1]` was E934 at the value: a JSON file's times are numbers."""
    (tmp_path / "g.json").write_text(json.dumps(GRAPH))
    (tmp_path / "t.json").write_text(times)
    result = CliRunner().invoke(app, ["import", "json", str(tmp_path / "g.json"), "--times",
                                      str(tmp_path / "t.json"), "-o", str(tmp_path / "g.plan")])
    line = times.count("\n", 0, times.index('"a"')) + 1
    column = times.split("\n")[line - 1].index('"0.5"') + 1
    assert result.exit_code == 1, result.output
    assert f"t.json:{line}:{column}: error[E934]: the time of `a` is not a number of " \
        'seconds (finite, >= 0): "0.5"' in result.output, result.output
    assert "write it as a JSON number, without quotes: 0.5" in result.output
    assert not (tmp_path / "g.plan").exists()


def test_a_json_of_strings_that_are_not_all_times_is_not_quoted(tmp_path: Path) -> None:
    """Times as strings are located only where every value is one: a credentials file with
    a PIN among its secrets is still E935, quoting none of it."""
    (tmp_path / "g.json").write_text(json.dumps(GRAPH))
    (tmp_path / "t.json").write_text(f'{{"pin": "1234", "token": "{SECRET}"}}')
    result = CliRunner().invoke(app, ["import", "json", str(tmp_path / "g.json"), "--times",
                                      str(tmp_path / "t.json"), "-o", str(tmp_path / "g.plan")])
    assert result.exit_code == 1 and "E935" in result.output, result.output
    assert "1234" not in result.output and "ghp_" not in result.output
