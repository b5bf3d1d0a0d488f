"""Helpers of the transfer tests: source stores from fixtures, raw edits behind the tool's
back, dumps -- on either engine (a Fjall store's keyspace is read and written with the fjall
package directly, its records beside it with sqlite3)."""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from migrate.store import open_store
from migrate.store.engine import ENGINE_ENV, FJALL, engine_of, records_dir
from tests.pipeline.helpers import cell_fixtures, cli, unpack

SMALL = next(p for p in cell_fixtures() if p.name == "cell-small.redb.gz")


#: The stores :func:`migrated_store` converted in this process, one per engine (a worker of
#: pytest-xdist keeps its own).
_CONVERTED: dict[str, Path] = {}


def migrated_store(tmp: Path, name: str = "source") -> Path:
    """A store converted by `run` from the fixture cell-small.redb (status 'complete'), at
    ``tmp/name``, its source unpacked beside it (``tmp/name-redb/cell.redb``).  The conversion
    runs once per process and engine (``BBG_MIGRATE_ENGINE``); each call gets a private byte
    copy of that store (:func:`copy_store`), which it may change freely."""
    unpack(SMALL, tmp / f"{name}-redb")
    engine = os.environ.get(ENGINE_ENV) or ""
    if engine not in _CONVERTED:
        work = Path(tempfile.mkdtemp(prefix="bbg-migrated-store-"))
        atexit.register(shutil.rmtree, work, ignore_errors=True)
        built = work / "source"
        res = cli("run", str(unpack(SMALL, work / "source-redb")), "--store", str(built))
        assert res.returncode == 0, res.stderr
        _CONVERTED[engine] = built
    return copy_store(_CONVERTED[engine], tmp / name)


def is_fjall(store: Path) -> bool:
    return engine_of(store) == FJALL


def records_db(store: Path) -> Path:
    """The SQLite file holding the store's records (the whole store on SQLite)."""
    if is_fjall(store):
        return records_dir(store) / "bbg.sqlite3"
    return store / "bbg.sqlite3"


def files_of(store: Path) -> list[Path]:
    """Every path that makes up a store (a Fjall store: keyspace and records directory)."""
    if is_fjall(store):
        return [store, records_dir(store)]
    return [store / "bbg.sqlite3"]


def exists(store: Path) -> bool:
    """True when anything of a store is on disk."""
    return store.exists() or records_dir(store).exists()


def copy_store(store: Path, dest: Path) -> Path:
    """A byte copy of a closed store (same store id; with its records on Fjall)."""
    shutil.copytree(store, dest)
    if records_dir(store).exists():
        shutil.copytree(records_dir(store), records_dir(dest))
    return dest


def _keyspace(store: Path) -> dict[str, list[tuple[bytes, bytes]]]:
    from migrate.store.fjall import open_keyspace

    ks = open_keyspace(store)
    try:
        return {part: list(ks.scan(part)) for part in sorted(ks.partitions())}
    finally:
        ks.close()


def _sqlite(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: sorted(conn.execute(f"SELECT * FROM {n}").fetchall()) for n in names}
    finally:
        conn.close()


def dump(store: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of a store (its whole logical content); on Fjall every key of
    every partition (named ``keyspace:<partition>``) and every row of its records."""
    if not is_fjall(store):
        return _sqlite(store / "bbg.sqlite3")
    out: dict[str, list[tuple[Any, ...]]] = {
        f"keyspace:{part}": list(rows) for part, rows in _keyspace(store).items()
    }
    if records_db(store).exists():
        out.update(_sqlite(records_db(store)))
    return out


def rows(store: Path, table: str) -> list[tuple[bytes, bytes]]:
    """The live rows of one of bbg's tables, in key order (either engine)."""
    if is_fjall(store):
        return _keyspace(store).get(table, [])
    return [(bytes(k), bytes(v)) for k, v in _sqlite(store / "bbg.sqlite3")[table]]


def status(store: Path) -> str | None:
    """The store's status marker (bbg_import_v1 "status"), or None."""
    if is_fjall(store):
        found = dict(_keyspace(store).get("bbg_import_v1", [])).get(b"status")
        return None if found is None else found.decode()
    conn = sqlite3.connect(f"file:{store / 'bbg.sqlite3'}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT status FROM bbg_import_v1").fetchone()
        return None if row is None else str(row[0])
    finally:
        conn.close()


def bbg_last(store: Path) -> bytes | None:
    """A store's bbg last_transaction (change id), or None: on Fjall bbg's key, on SQLite the
    storage row's ``bbg_last_transaction`` (empty: none; NULL, unknown, fails here)."""
    if not is_fjall(store):
        conn = sqlite3.connect(store / "bbg.sqlite3")
        try:
            row = conn.execute("SELECT bbg_last_transaction FROM bbg_storage_v1").fetchone()
        finally:
            conn.close()
        assert row[0] is not None, f"{store}: records no bbg change id"
        return bytes(row[0]) or None
    return dict(_keyspace(store).get("bbg_storage_v1", [])).get(b"last_transaction")


def raw(store: Path, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Change a SQLite store behind the tool's back (tampering, for tests only)."""
    conn = sqlite3.connect(store / "bbg.sqlite3")
    with conn:
        conn.execute(sql, params)
    conn.close()


def put_row(store: Path, table: str, key: bytes, value: bytes | None) -> None:
    """Put (None: remove) one row of bbg's tables behind the tool's back, on either engine (a
    Fjall store gets a raw batch with no marker rows: not a transaction bbg would write)."""
    if is_fjall(store):
        from migrate.store.fjall.session import append_batch

        append_batch(store, [(table, key, value)])
        return
    if value is None:
        raw(store, f"DELETE FROM {table} WHERE key = ?", (key,))
    else:
        raw(store, f"INSERT OR REPLACE INTO {table} (key, value) VALUES (?, ?)", (key, value))


def set_status(store: Path, marker: str, generation: str | None = None) -> None:
    """Overwrite the status marker behind the tool's back, on either engine (on SQLite also
    the informational generation column, when given)."""
    if is_fjall(store):
        put_row(store, "bbg_import_v1", b"status", marker.encode())
    elif generation is None:
        raw(store, "UPDATE bbg_import_v1 SET status = ?", (marker,))
    else:
        raw(store, "UPDATE bbg_import_v1 SET status = ?, generation = ?", (marker, generation))


def last_transaction(store: Path) -> int:
    """The toolkit's transaction counter of a store (its records' on Fjall)."""
    with open_store(store, maintenance=True) as st:
        return int(st.info()["last_transaction"])
