"""Fixtures for the redb tests: gunzipped copies, made once per session, read-only on disk."""

from __future__ import annotations

import gzip
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.redb.cases import Case


@pytest.fixture(scope="session")
def redb_file(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Case], Path]:
    """``redb_file(case)``: the case's decompressed file (made read-only: the reader must
    never need write access)."""
    root = tmp_path_factory.mktemp("redb")
    made: dict[str, Path] = {}

    def _get(case: Case) -> Path:
        if case.id not in made:
            path = root / f"{case.id}.redb"
            path.write_bytes(gzip.decompress(case.redb_gz.read_bytes()))
            os.chmod(path, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
            made[case.id] = path
        return made[case.id]

    return _get
