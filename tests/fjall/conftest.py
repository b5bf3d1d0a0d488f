"""Shared helpers of the Fjall tests: the fixture cases, extracted once per session into a
scratch directory (read-only tests share it; a test that changes a keyspace copies it)."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES

FJALL = FIXTURES / "fjall"
CASES = sorted(p.name.removesuffix(".tar.gz") for p in FJALL.glob("*.tar.gz"))


def expected(case: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FJALL / f"{case}.expected.json").read_text("utf-8"))
    return doc


def extract(case: str, dest: Path) -> Path:
    """Extract ``case`` into ``dest`` and return the keyspace directory."""
    with tarfile.open(FJALL / f"{case}.tar.gz") as tar:
        tar.extractall(dest, filter="tar")
    return dest / case


@pytest.fixture(scope="session")
def cases_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every case extracted (read-only use)."""
    root = tmp_path_factory.mktemp("fjall-cases")
    for case in CASES:
        extract(case, root)
    return root


@pytest.fixture
def copy_case(cases_dir: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A function giving a private copy of a case (for tests that change or damage it)."""

    def _copy(case: str) -> Path:
        dest = tmp_path / case
        shutil.copytree(cases_dir / case, dest, symlinks=True)
        return dest

    return _copy


def real_dump(case: str) -> bytes | None:
    """The real crate's dump of ``case`` when it is kept here, else None."""
    path = FJALL / f"{case}.dump.jsonl.gz"
    return gzip.decompress(path.read_bytes()) if path.exists() else None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
