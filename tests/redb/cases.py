"""The redb fixture cases: the copied subset in ``fixtures/redb/`` and, when
``BBG_SHARED_FIXTURES`` names it, the complete oracle set (same layout: ``redb/<version>/``)."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES, shared_fixtures

VERSIONS = ("1.5.2", "2.6.3", "3.1.3", "4.2.0")


@dataclass(frozen=True)
class Case:
    """One fixture: a gzipped redb file, its oracle dump (if the crate produced one), and its
    manifest entry (header facts, tables, corruption record)."""

    origin: str  # "local" or "shared"
    version: str
    name: str
    redb_gz: Path
    dump: Path | None  # .dump.jsonl or .dump.jsonl.gz
    manifest: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{self.origin}-{self.version}-{self.name}"

    @property
    def corrupt(self) -> bool:
        """A corruption variant the reader must refuse (the recovery flag alone is not one)."""
        return self.name.startswith("corrupt_") and self.name != "corrupt_recovery_required"

    @property
    def expect(self) -> dict[str, Any] | None:
        path = self.redb_gz.parent / f"{self.name}.expect.json"
        if not path.exists():
            return None
        doc: dict[str, Any] = json.loads(path.read_text("utf-8"))
        return doc

    def oracle(self) -> bytes:
        assert self.dump is not None
        data = self.dump.read_bytes()
        return gzip.decompress(data) if self.dump.suffix == ".gz" else data


def _cases(root: Path, origin: str) -> list[Case]:
    found = []
    for version in VERSIONS:
        folder = root / version
        manifest_path = folder / "manifest.json"
        if not manifest_path.exists():
            continue
        manifest = json.loads(manifest_path.read_text("utf-8"))
        for entry in manifest["fixtures"]:
            name = entry["name"]
            redb_gz = folder / f"{name}.redb.gz"
            dump = None
            for candidate in (f"{name}.dump.jsonl.gz", f"{name}.dump.jsonl"):
                if (folder / candidate).exists():
                    dump = folder / candidate
                    break
            found.append(Case(origin, version, name, redb_gz, dump, entry))
    return found


def all_cases() -> list[Case]:
    """Local cases, then (when available) every case of the complete shared set."""
    cases = _cases(FIXTURES / "redb", "local")
    shared = shared_fixtures()
    if shared is not None:
        cases += _cases(shared / "redb", "shared")
    return cases


def local_case(version: str, name: str) -> Case:
    for case in _cases(FIXTURES / "redb", "local"):
        if case.version == version and case.name == name:
            return case
    raise LookupError(f"{version}/{name}")
