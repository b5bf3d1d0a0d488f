"""``tail`` on either engine: a SQLite store's ledger (:mod:`migrate.share.events`) or a
Fjall store's batches (:mod:`migrate.share.events_fjall`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from migrate.share import events, events_fjall
from migrate.share.events import Event
from migrate.store.engine import FJALL, engine_of


def tail(store_dir: Path, since: int = 0, skip: int = 0) -> Iterator[Event]:
    """The event/1 stream of the store in ``store_dir`` after transaction ``since``
    (``skip``: leave out the first ``skip`` events of transaction ``since + 1``)."""
    if engine_of(Path(store_dir)) == FJALL:
        return events_fjall.tail(store_dir, since, skip)
    return events.tail(store_dir, since, skip)
