"""Ids and digests recorded in the legacy fixtures (made with the reference hemera)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hashing import hemera
from hashing.hemera import Backend, domains
from tests.conftest import FIXTURES

LEGACY = FIXTURES / "legacy"


def expected(pattern: str, key: str) -> list[Path]:
    return sorted(p for p in LEGACY.glob(pattern) if key in json.loads(p.read_text()))


def jsonl_lines(path: Path) -> list[bytes]:
    """LF-terminated lines (not splitlines: raw CR bytes occur inside strings)."""
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return data[:-1].split(b"\n")


def load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


@pytest.mark.parametrize("exp", expected("texts-*.expected.json", "hemera_file"),
                         ids=lambda p: p.name)
def test_text_archive_hemera_file(impl: Backend, exp: Path) -> None:
    source = exp.with_name(exp.name.removesuffix(".expected.json"))
    assert hemera.hash_file(source, backend=impl).hex() == load(exp)["hemera_file"]


@pytest.mark.parametrize("exp", expected("signals-*.expected.json", "hemera_source_digest"),
                         ids=lambda p: p.name)
def test_signal_log_source_digest(impl: Backend, exp: Path) -> None:
    source = exp.with_name(exp.name.removesuffix(".expected.json"))
    digest = hemera.hash_file(source, prefix=domains.LEGACY_SOURCE, backend=impl)
    assert digest.hex() == load(exp)["hemera_source_digest"]


def test_text_particles(impl: Backend) -> None:
    """particle = hemera(text as UTF-8); raw TAB/CR in strings are allowed (strict=False)."""
    exp = LEGACY / "texts-small.jsonl.expected.json"
    lines = jsonl_lines(LEGACY / "texts-small.jsonl")
    rows = load(exp)["lines"]
    assert len(rows) == len(lines) == 20
    for row, raw in zip(rows, lines, strict=True):
        obj = json.loads(raw, strict=False)
        assert obj["particle"] == row["particle"]
        assert impl.hash(obj["text"].encode("utf-8")).hex() == row["particle"], row["line"]


def test_lying_particle_is_detected(impl: Backend) -> None:
    exp = load(LEGACY / "texts-invalid-particle.jsonl.expected.json")
    bad_line = exp["first_error"]["line"]
    lines = jsonl_lines(LEGACY / "texts-invalid-particle.jsonl")
    for number, raw in enumerate(lines, start=1):
        obj = json.loads(raw, strict=False)
        ok = impl.hash(obj["text"].encode("utf-8")).hex() == obj["particle"]
        assert ok == (number != bad_line), number
