"""The transfer tests run on both engines of the store: every test of this package is run
once with its stores on the Fjall engine (the real BBG database) and once on SQLite, unless
it is marked ``@pytest.mark.engine(name)`` (then on that engine only)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from migrate.store.engine import ENGINE_ENV, ENGINES


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "transfer_engine" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("engine")
        engines = [marker.args[0]] if marker is not None else list(ENGINES)
        metafunc.parametrize("transfer_engine", engines, scope="module", indirect=True)


@pytest.fixture(scope="module")
def transfer_engine(request: pytest.FixtureRequest) -> Iterator[str]:
    """The engine of the stores this module's tests create (module fixtures included)."""
    patch = pytest.MonkeyPatch()
    patch.setenv(ENGINE_ENV, request.param)
    yield str(request.param)
    patch.undo()


@pytest.fixture(autouse=True)
def _transfer_engine(transfer_engine: str) -> str:
    return transfer_engine
