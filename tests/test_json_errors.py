"""With ``--json`` a failure prints one error document on stdout
(``schemas/error.schema.json``) and the human line on stderr; fleet jobs reuse the document."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import schemas
from bbg_core.errors import RedbCorrupt, error_document
from tests.conftest import FIXTURES

LEGACY = FIXTURES / "legacy"


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args], capture_output=True, text=True, check=False,
        cwd=cwd,
    )  # fmt: skip


def error_of(res: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    lines = res.stdout.splitlines()
    assert len(lines) == 1, res.stdout  # exactly one document
    doc: dict[str, Any] = json.loads(lines[0])
    schemas.validate(doc, "error")
    assert doc["exit_code"] == res.returncode
    return doc


def test_unreadable_source_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.redb"
    res = cli("inspect", str(missing), "--json")
    doc = error_of(res)
    assert (res.returncode, doc["code"], doc["path"]) == (1, "source", str(missing))
    assert res.stderr.strip() == f"error: {doc['message']}"


def test_corrupt_redb_names_the_offset(tmp_path: Path) -> None:
    raw = bytearray(gzip.decompress((LEGACY / "cell-small.redb.gz").read_bytes()))
    raw[:9] = b"XXXXXXXXX"
    bad = tmp_path / "bad.redb"
    bad.write_bytes(raw)
    res = cli("redb", "scan", str(bad), "--json")
    doc = error_of(res)
    assert (doc["code"], doc["offset"], doc["path"]) == ("redb-corrupt", 0, str(bad))
    assert "bad magic number" in doc["message"] and "bad magic number" in res.stderr


def test_invalid_text_archive_names_the_line(tmp_path: Path) -> None:
    src = LEGACY / "texts-invalid-blank-line.jsonl"
    res = cli("run", str(src), "--store", str(tmp_path / "bbg"), "--json")
    doc = error_of(res)
    assert (res.returncode, doc["code"], doc["line"]) == (3, "validation-failed", 5)
    assert doc["context"]["errors"][0]["code"] == "blank-line"
    assert not (tmp_path / "bbg").exists() or "nothing was written" in doc["message"]


def test_usage_error_is_a_document_too() -> None:
    res = cli("inspect", "--jsn", "x", "--json")
    doc = error_of(res)
    assert (res.returncode, doc["code"], doc["context"]) == (2, "usage", {})
    assert "No such option: --jsn" in doc["message"] and "--jsn" in res.stderr


def test_no_json_no_document(tmp_path: Path) -> None:
    res = cli("inspect", str(tmp_path / "nope"))
    assert res.returncode == 1 and res.stdout == ""


def test_a_report_already_printed_is_the_only_document() -> None:
    """inspect --json of an invalid input prints its report and exits 3: no second document."""
    res = cli("inspect", str(LEGACY / "texts-invalid-blank-line.jsonl"), "--json")
    assert res.returncode == 3
    assert len(res.stdout.splitlines()) == 1
    assert json.loads(res.stdout)["kind"] == "text-archive"


@pytest.mark.parametrize("name", ["fleet-job", "fleet-plan"])
def test_fleet_error_documents_are_the_cli_error_document(name: str) -> None:
    """The fleet schemas reuse schemas/error.schema.json ($ref); fleet and CLI both build the
    document with error_document."""
    text = (Path(schemas.__file__).parent / f"{name}.schema.json").read_text()
    assert '"$ref": "error"' in text or '"$ref": "fleet-job#/$defs/error"' in text
    exc = RedbCorrupt("x: bad", path="x", offset=7, table="t")
    schemas.validate(error_document(exc), "error")
    assert error_document(exc)["offset"] == 7
