"""Shared test helpers: where fixtures live, and the full oracle set when it is available."""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def pytest_configure(config: pytest.Config) -> None:
    """Commands the tests start reuse compiled modules: with ``PYTHONDONTWRITEBYTECODE`` set
    (as in this project's CI sandbox) every one of the thousands of ``bbg-migrate`` processes
    the suite starts would compile ~140 modules again (about 0.2 s each).  Their bytecode
    goes to a cache outside the repository instead (``PYTHONPYCACHEPREFIX``), which the
    processes share; nothing is written beside the sources."""
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) and not os.environ.get(
        "PYTHONPYCACHEPREFIX"
    ):
        import tempfile

        cache = Path(tempfile.gettempdir()) / f"bbg-migrate-tests-pycache-{os.getuid()}"
        os.environ["PYTHONPYCACHEPREFIX"] = str(cache)


def shared_fixtures() -> Path | None:
    """The complete fixture set named by ``BBG_SHARED_FIXTURES``, if present."""
    value = os.environ.get("BBG_SHARED_FIXTURES")
    if value and Path(value).is_dir():
        return Path(value)
    return None


def gunzip_to(src: Path, dest_dir: Path) -> Path:
    """Decompress ``src`` (``x.redb.gz``) to ``dest_dir/x.redb`` and return that path."""
    dest = dest_dir / src.name.removesuffix(".gz")
    dest.write_bytes(gzip.decompress(src.read_bytes()))
    return dest


@pytest.fixture
def gunzip(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Return a function that gunzips a fixture into this test's temp dir."""

    def _gunzip(src: Path) -> Path:
        return gunzip_to(src, tmp_path)

    return _gunzip


#: The engine this run was asked to use for the whole suite (``BBG_MIGRATE_ENGINE`` when
#: pytest started; CI's SQLite pass), or None for the default engine.  Read once: fixtures of
#: some directories (tests/share, tests/transfer) change the variable for their own tests.
PASS_ENGINE = os.environ.get("BBG_MIGRATE_ENGINE") or None


@pytest.fixture(autouse=True)
def _store_engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """``@pytest.mark.engine("sqlite")``: stores this test creates (in this process and in the
    commands it starts) are made on that engine -- for tests of one engine's own files.
    Unmarked tests use the default engine, or ``BBG_MIGRATE_ENGINE`` when CI sets it; a test
    pinned to another engine than the one a run was started with is skipped, by name (CI's
    SQLite pass deselects the pinned tests, which the default pass already ran)."""
    marker = request.node.get_closest_marker("engine")
    if marker is not None:
        engine = marker.args[0]
        if PASS_ENGINE is not None and PASS_ENGINE != engine:
            pytest.skip(f"pinned to the {engine} engine; this run is on {PASS_ENGINE} "
                        "(BBG_MIGRATE_ENGINE)")  # fmt: skip
        monkeypatch.setenv("BBG_MIGRATE_ENGINE", engine)


@pytest.fixture(autouse=True)
def _sigint_restored() -> Iterator[None]:
    """A test that runs the console entry in-process (``main([...])`` ending in SystemExit)
    leaves SIGINT ignored, as the entry decides for its own process; child processes started
    later in the same worker would inherit SIG_IGN, and Python then installs no
    KeyboardInterrupt handler in them (tests/test_interrupt.py saw it in CI)."""
    import signal

    before = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.fixture(autouse=True)
def _change_oracle(monkeypatch: pytest.MonkeyPatch) -> None:
    """``BBG_CHECK_CHANGE_ID=1``: every SQLite write transaction of the test's process is
    checked against an independent recomputation of bbg's change id
    (:mod:`tests.support.change_oracle`): a write path the store's record misses fails."""
    if os.environ.get("BBG_CHECK_CHANGE_ID") == "1":
        from tests.support.change_oracle import install

        install(monkeypatch)
