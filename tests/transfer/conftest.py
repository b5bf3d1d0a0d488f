"""The transfer tests run on the SQLite engine.

``transfer`` from and into a Fjall store is being built on another branch (today a Fjall
source is refused by name, ``store-refused``); until it lands, every test here runs on the
SQLite engine: each test gets the ``engine("sqlite")`` marker (unless it names an engine
itself), and the stores module fixtures build are made on SQLite too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from migrate.store.engine import ENGINE_ENV

ENGINE = "sqlite"
HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before -m selects on the marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.resolve().parents and item.get_closest_marker("engine") is None:
            item.add_marker(pytest.mark.engine(ENGINE))


@pytest.fixture(scope="package", autouse=True)
def _transfer_engine() -> Iterator[None]:
    """Module-scoped fixtures run before the per-test engine marker applies."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENGINE_ENV, ENGINE)
        yield
