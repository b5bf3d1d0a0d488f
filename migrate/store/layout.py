"""Where a store lives, how it is created, and how a file is recognised as one.

A store is a directory (default ``./bbg``) holding ``bbg.sqlite3`` (plus SQLite's ``-wal``
and ``-shm`` files).  The file carries ``PRAGMA application_id = 0x42424731`` ("BBG1") and
``PRAGMA user_version = 2`` (version 1 is a store from before the transaction ledger: it is
read, and written only after ``bbg-migrate --store S upgrade``); any other SQLite file is
refused, naming the file.

The default-store guard lives in :func:`resolve_store_dir` and nowhere else: with no store
named and ``./cell.redb`` present, an empty default store is never created (or opened).
"""

from __future__ import annotations

import os
import sqlite3
import stat
import uuid
from pathlib import Path
from typing import Any

import schemas
from bbg_core.errors import StoreError, StoreRefused
from hashing import hemera
from migrate.store import ledger
from migrate.store.connection import Connection

DB_NAME = "bbg.sqlite3"
DEFAULT_DIR = "bbg"
LEGACY_NAME = "cell.redb"
APPLICATION_ID = 0x42424731  # b"BBG1"
SCHEMA_VERSION = 2
# Versions this build opens: the current one, and version 1 (no ledger) for reading and for
# `upgrade`; a writer refuses version 1 with a message naming `upgrade`.
PRE_LEDGER_VERSION = 1
READABLE_VERSIONS = frozenset({PRE_LEDGER_VERSION, SCHEMA_VERSION})
# The hash suite recorded in bbg_storage_v1: the pinned hemera variant.
DEFAULT_HASH_SUITE = hemera.SUITE


def resolve_store_dir(named: str | Path | None, *, create: bool, cwd: Path | None = None) -> Path:
    """The store directory to use: ``named``, or ``./bbg`` subject to the default-store guard.

    The guard: no store named, ``./cell.redb`` exists and ``./bbg`` holds no store yet →
    StoreRefused telling the operator how to migrate or how to name a store.  An existing
    default store is still opened.
    """
    if named is not None:
        return Path(named)
    base = Path.cwd() if cwd is None else cwd
    target = base / DEFAULT_DIR
    legacy = base / LEGACY_NAME
    from migrate.store.engine import engine_of

    if legacy.exists() and engine_of(target) is None:
        verb = "create" if create else "open"
        raise StoreRefused(
            f"{legacy} exists and no store was named: refusing to {verb} an empty default "
            f"store {target}. Migrate the legacy store first (bbg-migrate run {LEGACY_NAME} "
            "--store bbg), or name the store you mean with --store DIR",
            path=str(target),
            legacy=str(legacy),
        )
    return target


def no_store(directory: Path, detail: str = "", *, create_hint: bool = False) -> StoreRefused:
    """The error for a store directory that holds no store.  A directory that does not exist
    (or cannot be looked up) is the one ``PATH: cannot read: REASON`` rule of every input;
    one that exists is ``no BBG store here`` (``detail``: what is missing)."""
    hint = "name an existing store, or create one" if create_hint else "name an existing store"
    try:
        os.stat(directory)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return StoreRefused(f"{directory}: cannot read: {reason}; no BBG store here, {hint}",
                            path=str(directory), reason=reason)  # fmt: skip
    return StoreRefused(f"{directory}: no BBG store here{detail}; {hint}", path=str(directory))


def existing_store_dir(named: str | Path | None, *, cwd: Path | None = None) -> Path:
    """The store directory of a step that needs a store already there (``validate``,
    ``activate``): :func:`resolve_store_dir` without creating, and the :func:`no_store` error
    (``cannot read`` for a path that does not exist, exit 1) when it holds no store of either
    engine.  Reads names only; creates nothing."""
    from migrate.store.engine import engine_of

    directory = resolve_store_dir(named, create=False, cwd=cwd)
    if engine_of(directory) is None:
        raise no_store(directory)
    return directory


def require_writable(directory: Path) -> None:
    """StoreError unless this process may create or change the store in ``directory``.

    Checked before a writer opens the store (and by ``plan``, which predicts that writer), so
    a read-only directory or medium is refused up front with one clear message instead of
    an SQLite error half-way.  Asks the kernel (``access(2)``: read-only media and missing
    permissions; the superuser passes where the kernel lets it write).
    """
    target = directory
    while not target.exists() and target.parent != target:
        target = target.parent
    candidates = [target]
    if target == directory:
        from migrate.store.engine import records_dir

        records = records_dir(directory)
        for folder in (directory, records):
            db = folder / DB_NAME
            candidates += [p for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists()]
        candidates += [p for p in (records, directory / "journals") if p.exists()]
    for path in candidates:
        if not os.access(path, os.W_OK):
            try:
                readonly_fs = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
            except OSError:
                readonly_fs = False
            why = "read-only file system" if readonly_fs else "permission denied"
            raise StoreError(
                f"{directory}: the store cannot be written ({path}: {why}); nothing was "
                "changed. Name a writable store with --store, or make this one writable",
                path=str(directory),
            )


def create_schema(conn: Connection, hash_suite: str) -> bool:
    """Create the schema in an empty database file; False if another process just did."""
    # Look before writing anything: a foreign file must be left exactly as it was.
    if schema_state(conn) == "bbg":
        return False
    # journal_mode cannot change inside a transaction; WAL is persistent once set.
    conn.execute("PRAGMA journal_mode = WAL").fetchall()
    with conn.write(action="create") as mark_clean:
        # Checked again under the write lock: another process may have created it meanwhile.
        app_id, version = _identity(conn)
        if (app_id, version) == (APPLICATION_ID, SCHEMA_VERSION):
            mark_clean()
            return False
        objects = conn.one("SELECT count(*) FROM sqlite_master")
        if app_id or version or (objects is not None and objects[0]):
            raise _foreign(conn.path, app_id, version)
        for statement in statements(schemas.sql("store")):
            conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute(
            "INSERT INTO bbg_storage_v1 (id, store_id, hash_suite, last_transaction, "
            "bbg_last_transaction) VALUES (1, ?, ?, 1, X'')",
            (new_store_id(), hash_suite),
        )
        # Ledger row 1: the creation (the ledger covers every transaction of the store).
        ledger.append(conn, 1, "create", None, [])
    return True


STORE_ID_ENV = "BBG_MIGRATE_STORE_ID"


def new_store_id() -> str:
    """A fresh store id (32 hex digits); ``BBG_MIGRATE_STORE_ID`` fixes it (conformance
    fixtures and tests that need reproducible bytes)."""
    fixed = os.environ.get(STORE_ID_ENV)
    if fixed:
        if len(fixed) != 32 or any(c not in "0123456789abcdef" for c in fixed):
            raise ValueError(f"{STORE_ID_ENV} must be 32 lowercase hex digits")
        return fixed
    return uuid.uuid4().hex


def store_id_of(db: Any) -> str:
    """The store's id, as ``bbg_storage_v1`` holds it (any handle that answers ``one``)."""
    row = db.one("SELECT store_id FROM bbg_storage_v1 WHERE id = 1")
    assert row is not None, "a BBG store has its bbg_storage_v1 row"
    return str(row[0])


def schema_state(conn: Connection) -> str:
    """``"bbg"`` (a BBG store of a version this build reads), ``"empty"`` (an empty SQLite file
    a writer would turn into one), or StoreRefused naming what the file is (reads only)."""
    app_id, version = _identity(conn)
    if app_id == APPLICATION_ID and version in READABLE_VERSIONS:
        return "bbg"
    objects = conn.one("SELECT count(*) FROM sqlite_master")
    if app_id or version or (objects is not None and objects[0]):
        raise _foreign(conn.path, app_id, version)
    return "empty"


def require_bbg(conn: Connection) -> int:
    """The schema version; StoreRefused unless the file is a BBG store of a version this build
    reads (version 1, before the ledger, included; reads only: safe on a read-only handle)."""
    app_id, version = _identity(conn)
    if app_id != APPLICATION_ID or version not in READABLE_VERSIONS:
        raise _foreign(conn.path, app_id, version)
    return version


def check_identity(conn: Connection, *, allow_pre_ledger: bool = False) -> int:
    """:func:`require_bbg`, refusing a version-1 store (it needs ``upgrade``) unless
    ``allow_pre_ledger``, then make sure the file is in WAL mode (a writer's open); returns
    the schema version."""
    version = require_bbg(conn)
    if version == PRE_LEDGER_VERSION and not allow_pre_ledger:
        raise needs_upgrade(conn.path)
    mode = conn.one("PRAGMA journal_mode")
    if mode is None or str(mode[0]).lower() != "wal":
        conn.execute("PRAGMA journal_mode = WAL").fetchall()
    return version


def needs_upgrade(path: Path) -> StoreRefused:
    """The refusal of a writer (or a ledger reader) facing a schema-version-1 store."""
    store_dir = path.parent
    return StoreRefused(
        f"{path}: a BBG store of schema version 1 (before the transaction ledger); this build "
        f"writes version {SCHEMA_VERSION}. Upgrade it once, in place: `bbg-migrate --store "
        f"{store_dir} upgrade` (older builds then refuse it); nothing was changed",
        path=str(path),
        user_version=PRE_LEDGER_VERSION,
        code="needs-upgrade",
    )


def check_hash_suite(conn: Connection) -> str:
    """The store's hash suite; StoreRefused unless it is one this build computes.

    Both names of the suite are read (``hemera.SUITES``: ``cyber-hemera-0.3.1`` and the label
    earlier builds wrote, ``cyber-hemera-0.2.0+e63b85a``); only the first is written.
    """
    row = conn.one("SELECT hash_suite FROM bbg_storage_v1 WHERE id = 1")
    if row is None:
        raise StoreRefused(
            f"{conn.path}: the store has no storage record (bbg_storage_v1); it is damaged",
            path=str(conn.path),
        )
    suite = str(row[0])
    if suite not in hemera.SUITES:
        raise StoreRefused(
            f"{conn.path}: the store's content ids were made with hash suite {suite!r}; this "
            f"build computes {' / '.join(hemera.SUITES)} and cannot verify them",
            path=str(conn.path),
            hash_suite=suite,
        )
    return suite


SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_BYTES = 100


def check_header(path: Path) -> None:
    """StoreRefused unless ``path``'s header bytes say "BBG store", read BEFORE SQLite opens it.

    Opening a file with SQLite may change it (a hot rollback journal is rolled back and
    deleted), so a foreign file is recognised by its bytes alone: the SQLite magic, the
    ``application_id`` (offset 68) and the ``user_version`` (offset 60), big-endian.  A BBG
    store never has a rollback journal (it is WAL), so a ``-journal`` beside it is refused too.
    The one case the header cannot decide -- a WAL-mode file whose header is still in its WAL
    (a store an older build created and never checkpointed) -- is left to SQLite: a WAL is
    never rolled back.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError as exc:
        raise StoreRefused(f"{path}: no such file", path=str(path)) from exc
    except OSError as exc:
        raise StoreRefused(f"{path}: cannot open: {exc.strerror}", path=str(path)) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StoreRefused(f"{path}: not a regular file, so not a BBG store",
                               path=str(path))  # fmt: skip
        head = os.pread(fd, HEADER_BYTES, 0)
    except OSError as exc:
        raise StoreRefused(f"{path}: cannot read: {exc.strerror}", path=str(path)) from exc
    finally:
        os.close(fd)
    if len(head) < HEADER_BYTES or not head.startswith(SQLITE_MAGIC):
        what = "an empty file" if not head else "not an SQLite database"
        raise StoreRefused(f"{path}: refusing to use this file as a BBG store: it is {what}",
                           path=str(path))  # fmt: skip
    app_id = int.from_bytes(head[68:72], "big")
    version = int.from_bytes(head[60:64], "big")
    journal = Path(f"{path}-journal")
    if journal.exists() and journal.stat().st_size > 0:
        raise StoreRefused(
            f"{path}: refusing to use this file as a BBG store: it has a rollback journal "
            f"({journal.name}); BBG stores use WAL. Nothing was opened or changed",
            path=str(path),
            application_id=app_id,
            user_version=version,
        )
    if app_id == APPLICATION_ID and version in READABLE_VERSIONS:
        return
    wal = Path(f"{path}-wal")
    in_wal = head[18] == 2 and head[19] == 2 and wal.exists() and wal.stat().st_size > 0
    if (app_id, version) == (0, 0) and in_wal:
        return
    raise _foreign(path, app_id, version)


def _identity(conn: Connection) -> tuple[int, int]:
    app = conn.one("PRAGMA application_id")
    ver = conn.one("PRAGMA user_version")
    assert app is not None and ver is not None
    return int(app[0]), int(ver[0])


def _foreign(path: Path, app_id: int, version: int) -> StoreRefused:
    if app_id == APPLICATION_ID:
        why = (
            f"it is a BBG store of schema version {version}; this build reads versions "
            f"{PRE_LEDGER_VERSION} and {SCHEMA_VERSION} (a newer bbg-migrate wrote it)"
        )
    elif app_id == 0 and version == 0:
        why = "it is an SQLite database that is not a BBG store"
    else:
        why = f"it is an SQLite database of another application (application_id {app_id:#x})"
    return StoreRefused(
        f"{path}: refusing to use this file as a BBG store: {why}",
        path=str(path),
        application_id=app_id,
        user_version=version,
    )


def statements(script: str) -> list[str]:
    # executescript() would COMMIT first; split so the DDL runs inside our transaction.
    out: list[str] = []
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip() and not all(
        ln.strip().startswith("--") or not ln.strip() for ln in buf.splitlines()
    ):
        raise ValueError("schemas/store.sql ends with an incomplete statement")
    return out
