"""``bbg-migrate legacy inspect``: exact exit codes, JSON validated, messages that name the spot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import schemas
from tests.legacy._support import LOCAL, expected, hemera_module


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrate", "inspect", *args],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(autouse=True)
def _needs_hemera() -> None:
    hemera_module()  # the reports carry hemera digests


@pytest.mark.parametrize(
    "name",
    [
        "signals-small.log",
        "signals-truncated-tail.log",
        "texts-small.jsonl",
        "texts-invalid-blank-line.jsonl",
    ],
)
def test_json_report_and_exit_code(name: str) -> None:
    path = LOCAL / name
    exp = expected(path)
    res = run(str(path), "--json")
    assert res.returncode == (0 if exp["valid"] else 3), res.stderr
    doc = json.loads(res.stdout)
    schemas.validate(doc, f"{doc['kind']}-inspect")
    assert doc["kind"] == ("signal-log" if name.startswith("signals") else "text-archive")
    assert doc["sha256"] == exp["sha256"]
    if not exp["valid"]:
        first = doc["errors"][0]
        assert res.stderr.startswith(f"error: {path}")
        if "first_error" in exp:
            assert (first["line"], first["code"]) == (
                exp["first_error"]["line"],
                exp["first_error"]["code"],
            )
        else:
            assert str(exp["error"]["offset"]) in res.stderr


def test_human_view_goes_to_stderr() -> None:
    res = run(str(LOCAL / "signals-small.log"))
    assert res.returncode == 0
    assert res.stdout == ""
    assert "event count" in res.stderr  # prose labels


def test_empty_file_needs_a_kind() -> None:
    path = LOCAL / "signals-empty.log"
    res = run(str(path))
    assert res.returncode == 2  # a usage question: the operator must name the kind
    assert "--kind" in res.stderr
    res = run(str(path), "--kind", "signal-log", "--json")
    assert res.returncode == 0
    assert json.loads(res.stdout)["event_count"] == 0


def test_unknown_content_and_bad_kind(tmp_path: Path) -> None:
    other = tmp_path / "notes.log"
    other.write_bytes(b"hello\n")
    res = run(str(other))
    assert (
        res.returncode == 1
        and "not a redb file, BBG store, signal log, frame log or text archive" in res.stderr
    )
    assert run(str(other), "--kind", "cell").returncode == 2
    res = run(str(other), "--kind", "redb")
    assert res.returncode == 1 and "notes.log" in res.stderr


def test_missing_file() -> None:
    res = run("/nonexistent/signals.log")
    assert res.returncode == 1
    assert "/nonexistent/signals.log" in res.stderr
