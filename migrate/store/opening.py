"""Opening a store: the one entry point that finds the store's engine and hands back a
handle (:class:`~migrate.store.store.Store` on SQLite, :class:`~migrate.store.keyspace_store.
FjallStore` on the real BBG database), and the provisional store of ``apply``.

Typical use::

    with open_store("bbg", create=True) as store:
        store.commit(ns, request, None, Head(0, ns), {ns: birth}, {}, fingerprint)
        store.head(ns)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bbg_core.errors import StoreRefused
from fences import generations
from migrate.store import creation, layout, sanity
from migrate.store.connection import DEFAULT_BUSY_TIMEOUT, Connection
from migrate.store.engine import FJALL, engine_for
from migrate.store.keyspace_store import is_records_dir, open_fjall_store
from migrate.store.store import Store


def open_store(
    path: str | Path | None = None,
    *,
    create: bool = False,
    reader_generation: str = generations.BUILD_GENERATION,
    maintenance: bool = False,
    hash_suite: str = layout.DEFAULT_HASH_SUITE,
    cwd: Path | None = None,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    engine: str | None = None,
    _keep_exclusive: bool = False,
) -> Store:
    """Open the store in directory ``path`` (None: ``./bbg`` behind the default-store guard).

    ``engine``: the engine of a store being created (``fjall``, the real BBG database, by
    default; ``sqlite``, the audit engine); an existing store is opened on its own engine
    (:mod:`migrate.store.engine`).

    ``create``: make the store if it does not exist (never otherwise).
    ``reader_generation``: open as a reader of this generation; a store promoted beyond it,
    or whose status marker is not a generation (``copying``, ``export-v1`` …), is refused.
    ``maintenance``: skip the generation check at open (``inspect`` and the transfer's
    source reader, which must read a store sealed for a transfer); identity is still
    checked, and every write transaction still checks the marker.

    The handle holds a shared lock on the store directory until closed; a missing store file
    is created under the exclusive lock (:mod:`migrate.store.creation`), and a directory that
    is not empty and holds no store is refused.  The file is identified by its header bytes
    before SQLite opens it (:func:`migrate.store.layout.check_header`).
    """
    directory = layout.resolve_store_dir(path, create=create, cwd=cwd)
    refuse_records_dir(directory)
    if engine_for(directory, engine) == FJALL:
        return open_fjall_store(directory, create=create, reader_generation=reader_generation,
                                maintenance=maintenance, hash_suite=hash_suite,
                                busy_timeout=busy_timeout,
                                keep_exclusive=_keep_exclusive)  # fmt: skip
    lock = creation.acquire(
        directory, create=create, hash_suite=hash_suite, timeout=busy_timeout,
        keep_exclusive=_keep_exclusive,
    )  # fmt: skip
    try:
        db = directory / layout.DB_NAME
        layout.check_header(db)
        conn = Connection(db, busy_timeout=busy_timeout)
    except BaseException:
        lock.release()
        raise
    try:
        version = layout.check_identity(conn, allow_pre_ledger=maintenance)
        sanity.check_bookkeeping(conn)  # damaged records are named here, not as a TypeError
        layout.check_hash_suite(conn)
        generation = generations.read_status(conn)[1]
        if not maintenance:
            generation = generations.require_readable(conn, reader_generation)
    except BaseException:
        conn.close()
        lock.release()
        raise
    store = Store(directory, conn, reader_generation, generation, lock)
    store.schema_version = version
    return store


def refuse_records_dir(directory: Path) -> None:
    """StoreRefused for the records directory of a Fjall store named as a store."""
    owner = is_records_dir(directory)
    if owner is not None:
        raise StoreRefused(
            f"{directory} holds bbg-migrate's records of the BBG store {owner}, not a store; "
            f"name the store itself (--store {owner})", path=str(directory),
        )  # fmt: skip


@contextmanager
def provisional_store(path: str | Path | None = None, **options: Any) -> Iterator[Store]:
    """Open the store like ``open_store(path, create=True)``; if this call created it and the
    block fails, remove it again -- only if no other handle opened it and nothing was committed
    to it (see :mod:`migrate.store.creation`).  A refused ``apply`` leaves no store behind."""
    store = open_store(path, create=True, _keep_exclusive=True, **options)
    lock = store.lock
    assert lock is not None
    try:
        yield store
    except BaseException:
        store.close(keep_lock=True)
        try:
            creation.remove_if_untouched(lock)
        finally:
            lock.release()
        raise
    store.close()
