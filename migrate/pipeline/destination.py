"""The destination store read before anything is written: a read-only handle (or None when
no store is there yet), after the refusals ``run``'s open gives.  ``plan`` reads through it
(:mod:`.gate`), and so does the subject check of a mapped run (:mod:`.subject`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fences import generations
from migrate.store import creation
from migrate.store.connection import Connection
from migrate.store.engine import FJALL, engine_of
from migrate.store.keyspace_store import open_fjall_view, refuse_guarded
from migrate.store.layout import (
    DB_NAME,
    PRE_LEDGER_VERSION,
    check_header,
    needs_upgrade,
    require_bbg,
    schema_state,
)
from migrate.store.readonly import ReadHandle


@contextmanager
def read_destination(directory: Path) -> Iterator[ReadHandle | None]:
    """The store at ``directory`` through a read-only handle (None when no store is there
    yet), after the refusals ``run``'s open gives; it cannot write by construction."""
    if engine_of(directory) == FJALL:
        # The real BBG database: read as one snapshot, without its lock (its owner may
        # be running); the refusals run's open gives (an import guard, a marker this
        # build may not write) come first.
        refuse_guarded(directory)
        with open_fjall_view(directory) as view:
            generations.require_readable(view)
            yield view
        return
    db_path = directory / DB_NAME
    # What run's open does with the file: create the store where none is usable yet,
    # else identify the file by its header bytes before SQLite opens it.
    conn = None
    if creation.has_store_file(db_path):
        check_header(db_path)
        conn = Connection(db_path, readonly=True)
    try:
        if conn is not None and schema_state(conn) == "empty":
            conn.close()  # a WAL-only header: a store an older build never checkpointed
            conn = None
        if conn is not None:
            # The refusals ``run``'s open gives: a store from before the ledger (it needs
            # `upgrade`), a marker this build may not write.
            if require_bbg(conn) == PRE_LEDGER_VERSION:
                raise needs_upgrade(db_path)
            generations.require_readable(conn)
        yield conn
    finally:
        if conn is not None:
            conn.close()
