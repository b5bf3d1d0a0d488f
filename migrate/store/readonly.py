"""The one way to read a store without writing to it.

:func:`open_readonly` is used by every reader (``inspect``, ``plan``, ``doctor``, ``tail``,
``snapshot``, ``backup``'s source): the handle is a read-only
:class:`~migrate.store.connection.Connection` (how it avoids creating or changing any file,
even next to a crashed writer's ``-wal`` or on read-only media, is described there), and the
file's identity is checked before anything else is read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bbg_core.errors import StoreRefused
from bbg_core.files import cannot_read
from fences import generations
from migrate.store.connection import Connection
from migrate.store.layout import DB_NAME, check_header, require_bbg
from migrate.store.sanity import check_bookkeeping


def db_file(store_dir: Path) -> Path:
    """The store's database file, or StoreRefused naming the directory."""
    db = Path(store_dir) / DB_NAME
    try:
        is_file = stat.S_ISREG(os.stat(db).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        is_file = False
    except OSError as exc:  # e.g. a directory this user may not search: say so
        raise cannot_read(store_dir, exc) from exc
    if not is_file:
        raise StoreRefused(
            f"{store_dir}: no BBG store here ({DB_NAME} missing); name an existing store",
            path=str(store_dir),
        )
    return db


@contextmanager
def open_readonly(
    store_dir: Path, *, live: bool = False, check: bool = True
) -> Iterator[Connection]:
    """A read-only connection to the store in ``store_dir`` (identity checked).

    ``live``: for a long-lived reader that must see later commits (``tail --follow``).
    ``check``: refuse a store whose bookkeeping tables are damaged
    (:func:`migrate.store.sanity.check_bookkeeping`); ``doctor`` opens without it and
    reports the damage instead.
    """
    db = db_file(store_dir)
    check_header(db)  # by its bytes, before SQLite opens (and might change) a foreign file
    conn = Connection(db, readonly=True, live=live)
    try:
        require_bbg(conn)
        if check:
            check_bookkeeping(conn)
        yield conn
    finally:
        conn.close()


def store_info(conn: Connection, store_dir: Path) -> dict[str, Any]:
    """Store id, hash suite, last transaction, status marker and generation."""
    row = conn.one("SELECT store_id, hash_suite, last_transaction FROM bbg_storage_v1 WHERE id = 1")
    if row is None:
        raise StoreRefused(f"{conn.path}: bbg_storage_v1 has no row", path=str(conn.path))
    marker, reached = generations.read_status(conn)
    return {
        "path": str(store_dir),
        "store_id": row[0],
        "hash_suite": row[1],
        "last_transaction": row[2],
        "status": marker,
        "generation": reached,
    }
