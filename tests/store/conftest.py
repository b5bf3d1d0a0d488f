"""Fixtures for the store tests: a fresh store per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from migrate.store import Store, open_store


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "bbg"


@pytest.fixture
def store(store_dir: Path) -> Iterator[Store]:
    with open_store(store_dir, create=True) as st:
        yield st
