"""``bbg_core.closing.Closing``: the one ``with`` protocol of the project's handles (it
replaced eight copies of ``__enter__``/``__exit__``): leaving the block closes the handle,
whatever ended it, and never swallows the exception."""

from __future__ import annotations

import pytest

from bbg_core.closing import Closing
from importers.redb.reader import RedbFile
from migrate.cli._fleet_view import FleetView
from migrate.fleet.pool import Pool
from migrate.pipeline.legacy import LegacySource
from migrate.rules.sources import RedbSource
from migrate.store.build import Build
from migrate.store.store import Store
from migrate.transfer.source import SourceStore


class _Handle(Closing):
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_with_returns_the_handle_and_closes_it_once() -> None:
    h = _Handle()
    with h as same:
        assert same is h and h.closed == 0
    assert h.closed == 1


def test_an_exception_closes_the_handle_and_is_not_swallowed() -> None:
    h = _Handle()
    with pytest.raises(KeyError), h:
        raise KeyError("boom")
    assert h.closed == 1


def test_close_must_be_defined() -> None:
    with pytest.raises(NotImplementedError), Closing():
        pass


@pytest.mark.parametrize(
    "cls", [RedbFile, Store, Build, RedbSource, LegacySource, Pool, SourceStore, FleetView]
)
def test_every_handle_uses_it(cls: type) -> None:
    assert issubclass(cls, Closing)
    assert "__exit__" not in vars(cls) and "close" in vars(cls)
