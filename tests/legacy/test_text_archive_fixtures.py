"""Every TextArchive fixture reproduces its ``.expected.json`` (golden pairs; needs hemera)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import schemas
from bbg_core.errors import TextArchiveError
from importers.signal_log import looks_like_signal_log
from importers.text_archive import (
    inspect_text_archive,
    looks_like_text_archive,
    read_records,
)
from tests.legacy._support import expected, fixture_params, hemera_module, legacy_files

ARCHIVES = fixture_params("texts-*.jsonl")
VALID = [p for p in ARCHIVES if expected(p.values[0])["valid"]]
INVALID = [p for p in ARCHIVES if not expected(p.values[0])["valid"]]


def test_the_fixture_set_is_complete() -> None:
    names = {p.name for p in legacy_files("texts-*.jsonl")}
    assert {
        "texts-small.jsonl",
        "texts-invalid-unterminated.jsonl",
        "texts-invalid-unknown-field.jsonl",
        "texts-invalid-particle.jsonl",
        "texts-invalid-utf8.jsonl",
        "texts-invalid-blank-line.jsonl",
    } <= names


def test_hemera_reference_vectors() -> None:
    hemera = hemera_module()
    assert hemera.hash(b"hello").hex().startswith("e1b19b82")
    assert hemera.hash(b"").hex().startswith("a67a71b2")


@pytest.mark.parametrize("path", VALID)
def test_valid_archive_records(path: Path) -> None:
    exp = expected(path)
    records = list(read_records(path, hash_fn=hemera_module().hash))
    assert len(records) == exp["line_count"]
    assert len({r.particle for r in records}) == exp["distinct_texts"]
    if "lines" in exp:
        got = [
            {"line": r.line, "sha256": hashlib.sha256(r.raw).hexdigest(), "particle": r.particle}
            for r in records
        ]
        assert got == exp["lines"]
    raw = path.read_bytes()
    assert b"".join(r.raw for r in records) == raw
    for r in records:
        assert raw[r.start : r.end] == r.raw


def test_small_archive_quirks() -> None:
    [path] = [p for p in legacy_files("texts-small.jsonl")]
    records = list(read_records(path, hash_fn=hemera_module().hash))
    assert records[2].text == "tab\tinside" and b"\t" in records[2].raw
    assert records[3].text == "carriage\rreturn" and b"\r" in records[3].raw
    assert records[3].created == 2**64 - 1
    assert records[1].text == "" and records[2].created is None


@pytest.mark.parametrize("path", INVALID)
def test_invalid_archive_first_error(path: Path) -> None:
    exp = expected(path)
    with pytest.raises(TextArchiveError) as info:
        for _ in read_records(path, hash_fn=hemera_module().hash):
            pass
    ctx = info.value.context
    assert {"line": ctx["line"], "code": ctx["code"]} == exp["first_error"]
    assert ctx["path"] == str(path)
    assert f"{path}:{ctx['line']}" in info.value.message


@pytest.mark.parametrize("path", ARCHIVES)
def test_archive_report(path: Path) -> None:
    exp = expected(path)
    hemera = hemera_module()
    report = inspect_text_archive(path, hash_fn=hemera.hash, hasher=hemera.Hasher)
    schemas.validate(report, "text-archive-inspect")
    assert report["valid"] is exp["valid"]
    assert report["line_count"] == exp["line_count"]
    assert report["sha256"] == exp["sha256"]
    assert report["hemera_file"] == exp["hemera_file"]
    assert report["size_bytes"] == exp["size_bytes"]
    if exp["valid"]:
        assert report["errors"] == []
        assert report["distinct_texts"] == exp["distinct_texts"]
    else:
        first = report["errors"][0]
        assert {"line": first["line"], "code": first["code"]} == exp["first_error"]


@pytest.mark.parametrize("path", ARCHIVES)
def test_archives_are_sniffed_by_content(path: Path) -> None:
    exp = expected(path)
    head = path.read_bytes()[:64]
    assert not looks_like_signal_log(head)
    if exp["valid"] or exp["first_error"]["line"] > 1:  # the first line is intact
        assert looks_like_text_archive(head)
