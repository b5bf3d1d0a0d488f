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
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol

from bbg_core.errors import StoreRefused
from bbg_core.files import cannot_read
from fences import generations
from migrate.store.bbgdb import LAST_TRANSACTION, METADATA
from migrate.store.connection import Connection
from migrate.store.engine import FJALL, engine_of
from migrate.store.keyspace_store import open_fjall_view
from migrate.store.layout import DB_NAME, check_header, no_store, require_bbg
from migrate.store.opening import refuse_records_dir
from migrate.store.sanity import check_bookkeeping


def db_file(store_dir: Path) -> Path:
    """The store's database file, or StoreRefused naming the directory (a Fjall store: by
    name, :func:`refuse_fjall`)."""
    refuse_fjall(Path(store_dir))
    db = Path(store_dir) / DB_NAME
    try:
        is_file = stat.S_ISREG(os.stat(db).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        is_file = False
    except OSError as exc:  # e.g. a directory this user may not search: say so
        raise cannot_read(store_dir, exc) from exc
    if not is_file:
        raise no_store(Path(store_dir), f" ({DB_NAME} missing)")
    return db


class ReadHandle(Protocol):
    """What a read-only handle offers on either engine: the records (``one``, ``rows``,
    ``read``), bbg's rows (``live_get``, ``live_rows``), status and fences."""

    @property
    def path(self) -> Any: ...

    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...

    def rows(self, sql: str, params: Any = (), batch: int = 512) -> Iterator[tuple[Any, ...]]: ...

    def read(self) -> AbstractContextManager[None]: ...

    def live_get(self, table: str, key: bytes) -> bytes | None: ...

    def live_rows(self, table: str, *, prefix: bytes = b"", after: bytes | None = None,
                  limit: int | None = None) -> Iterator[tuple[bytes, bytes]]: ...  # fmt: skip

    def read_status(self) -> tuple[str | None, str]: ...

    def fence_record(self, namespace: bytes) -> dict[str, Any] | None: ...


@contextmanager
def open_readonly(
    store_dir: Path, *, live: bool = False, check: bool = True
) -> Iterator[ReadHandle]:
    """A read-only handle of the store in ``store_dir``, on its engine: a SQLite
    :class:`Connection` (identity checked) or a Fjall store's
    :class:`~migrate.store.keyspace.FjallView` (no lock taken, nothing written)."""
    refuse_records_dir(Path(store_dir))
    if engine_of(Path(store_dir)) == FJALL:
        with open_fjall_view(Path(store_dir), check=check) as view:
            yield view
        return
    with open_sqlite_readonly(store_dir, live=live, check=check) as conn:
        yield conn


def refuse_fjall(store_dir: Path) -> None:
    """StoreRefused for a command that reads SQLite stores only, given a Fjall store."""
    if engine_of(Path(store_dir)) == FJALL:
        raise StoreRefused(
            f"{store_dir}: a BBG store on the Fjall engine (the real BBG database); this command "
            "works on SQLite stores only (a SQLite-only read path was given a Fjall store)",
            path=str(store_dir), engine=FJALL,
        )  # fmt: skip


@contextmanager
def open_sqlite_readonly(
    store_dir: Path, *, live: bool = False, check: bool = True
) -> Iterator[Connection]:
    """A read-only connection to the SQLite store in ``store_dir`` (identity checked); a
    Fjall store is refused by name (for the commands that read SQLite stores only).

    ``live``: for a long-lived reader that must see later commits (``tail --follow``).
    ``check``: refuse a store whose bookkeeping tables are damaged
    (:func:`migrate.store.sanity.check_bookkeeping`); ``doctor`` opens without it and
    reports the damage instead.
    """
    refuse_fjall(Path(store_dir))
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


def store_info(conn: ReadHandle, store_dir: Path) -> dict[str, Any]:
    """Store id, hash suite, last transaction, status marker and generation (and for a Fjall
    store its engine and bbg's ``last_transaction`` change id)."""
    row = conn.one("SELECT store_id, hash_suite, last_transaction FROM bbg_storage_v1 WHERE id = 1")
    if row is None:
        raise StoreRefused(f"{conn.path}: bbg_storage_v1 has no row", path=str(conn.path))
    marker, reached = generations.read_status(conn)
    doc = {
        "path": str(store_dir),
        "store_id": row[0],
        "hash_suite": row[1],
        "last_transaction": row[2],
        "status": marker,
        "generation": reached,
    }
    if not isinstance(conn, Connection):
        last = conn.live_get(METADATA, LAST_TRANSACTION)
        doc.update(engine=FJALL, bbg_last_transaction=None if last is None else last.hex())
    return doc


def store_identity(handle: ReadHandle) -> str | None:
    """The store id in the records (``bbg_storage_v1.store_id``); None for a Fjall store
    without records of ours (one the cyber code wrote has no id of this toolkit's)."""
    from migrate.store.keyspace import FjallView

    if isinstance(handle, FjallView) and str(handle.records.path) == ":memory:":
        return None
    from migrate.store.layout import store_id_of

    return store_id_of(handle)
