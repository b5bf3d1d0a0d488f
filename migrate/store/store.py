"""The store handle: open/create, GraphPort, transactions and read snapshots.

Typical use::

    with open_store("bbg", create=True) as store:
        store.commit(ns, request, None, Head(0, ns), {ns: birth}, {}, fingerprint)
        store.commit_once(ns, request2, Head(0, ns), Head(1, c1), {c1: body}, {}, fp2)
        store.head(ns)

A handle owns one SQLite connection and must stay in its thread.  Several handles (and
processes) may use one store at once: SQLite's write lock plus the expected-head check inside
``BEGIN IMMEDIATE`` make concurrent commits on one namespace serialise (one wins, the others
get HeadMismatch).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from bbg_core.closing import Closing
from bbg_core.errors import StoreError
from fences import generations
from migrate.store import bbg_changes, creation, graph, layout, markers
from migrate.store.codec import Head
from migrate.store.connection import DEFAULT_BUSY_TIMEOUT, CommitHook, Connection
from migrate.store.tables import StagedTables, StoreTables
from migrate.store.tx import Tx


class Store(Closing):
    """An open BBG store (use :func:`open_store`)."""

    #: The storage engine behind this handle (:mod:`migrate.store.engine`).
    engine = "sqlite"

    def __init__(
        self,
        directory: Path,
        conn: Connection,
        reader_generation: str,
        generation: str,
        lock: creation.DirLock | None = None,
    ) -> None:
        self.directory = directory
        self.lock = lock
        self.db_path = conn.path
        self.reader_generation = reader_generation
        self.generation = generation
        self.schema_version = layout.SCHEMA_VERSION
        #: Whether this database's five tables and status are bbg's, so a transaction records
        #: bbg's change id (:mod:`.bbg_changes`); False for the records of a Fjall store.
        self.bbg_tables = True
        #: What this handle knows of the storage row's change-id column (bbg_changes).
        self._bbg_storage: dict[str, bool] = {}
        self._conn = conn

    # -- lifecycle ----------------------------------------------------------------------
    def close(self, *, keep_lock: bool = False) -> None:
        """Close the handle (and release its directory lock unless ``keep_lock``)."""
        self._conn.close()
        if self.lock is not None and not keep_lock:
            self.lock.release()

    @property
    def commit_hook(self) -> CommitHook | None:
        """Fault-injection hook called around COMMIT (see :mod:`migrate.store.connection`)."""
        return self._conn.commit_hook

    @commit_hook.setter
    def commit_hook(self, hook: CommitHook | None) -> None:
        self._conn.commit_hook = hook

    @property
    def poisoned(self) -> bool:
        """True after a commit whose outcome is unknown: reopen the store."""
        return self._conn.poisoned is not None

    @property
    def path(self) -> Path:
        """The database file (what errors name)."""
        return self.db_path

    def one(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        """One row of a read query: lets the read helpers of :mod:`migrate.store.imports`
        and :mod:`fences` take the store itself (``imports.receipt_of(store, iid)``)."""
        return self._conn.one(sql, params)

    # -- the fence and generation records (:mod:`migrate.store.markers`, for fences/) -----
    def read_status(self) -> tuple[str | None, str]:
        """``(status marker or None, generation column)``."""
        return markers.read_status(self)

    def fence_record(self, namespace: bytes) -> dict[str, Any] | None:
        """The fence of ``namespace``, or None."""
        return markers.fence_record(self, namespace)

    # -- bbg's rows (:mod:`migrate.store.live`) -----------------------------------------
    def live_get(self, table: str, key: bytes) -> bytes | None:
        """The committed value under ``key`` in ``table``, or None."""
        return self._conn.live_get(table, key)

    def live_rows(self, table: str, *, prefix: bytes = b"", after: bytes | None = None,
                  limit: int | None = None) -> Iterator[tuple[bytes, bytes]]:  # fmt: skip
        """The committed rows of ``table`` in key order."""
        return self._conn.live_rows(table, prefix=prefix, after=after, limit=limit)

    # -- GraphPort ----------------------------------------------------------------------
    def head(self, namespace: bytes) -> Head | None:
        """The namespace's current head, or None."""
        return graph.head(self, namespace)

    def history(
        self, namespace: bytes, after: int | None = None, limit: int = graph.MAX_PAGE
    ) -> list[Head]:
        """One page (≤ 4096) of history entries with index > ``after``."""
        return graph.history(self, namespace, after, limit)

    def resolve(self, namespace: bytes, request: bytes) -> Head | None:
        """The head ``request`` originally produced, or None if it never committed."""
        return graph.resolve(self, namespace, request)

    def commit(
        self,
        namespace: bytes,
        request: bytes,
        expected: Head | None,
        new_head: Head,
        contents: Mapping[bytes, bytes],
        claims: Mapping[bytes, bytes],
        fingerprint: bytes,
    ) -> Head:
        """Publish one commit atomically (contract: :mod:`migrate.store.graph`).

        An exact retry (same request, same fingerprint) returns the original head.
        """
        return self._publish(
            namespace, request, expected, new_head, contents, claims, fingerprint, once=False
        )

    def commit_once(
        self,
        namespace: bytes,
        request: bytes,
        expected: Head | None,
        new_head: Head,
        contents: Mapping[bytes, bytes],
        claims: Mapping[bytes, bytes],
        fingerprint: bytes,
    ) -> Head:
        """Like :meth:`commit`, but fresh publication only (bbg ``apply_once``): any existing
        receipt for the request is a Conflict, even an exact retry; :meth:`resolve` still
        returns the original head.  Of two racing ``commit_once`` calls with one request,
        exactly one returns a head."""
        return self._publish(
            namespace, request, expected, new_head, contents, claims, fingerprint, once=True
        )

    def _publish(
        self,
        namespace: bytes,
        request: bytes,
        expected: Head | None,
        new_head: Head,
        contents: Mapping[bytes, bytes],
        claims: Mapping[bytes, bytes],
        fingerprint: bytes,
        *,
        once: bool,
    ) -> Head:
        # publish checks the status marker itself, after the request-replay check.
        with self.transaction(
            check_status=False, kind="commit_once" if once else "commit",
            namespace=namespace, request=request,
        ) as tx:  # fmt: skip
            return graph.publish(
                tx,
                reader_generation=self.reader_generation,
                namespace=namespace,
                request=request,
                expected=expected,
                new_head=new_head,
                contents=contents,
                claims=claims,
                fingerprint=fingerprint,
                once=once,
            )

    # -- transactions and snapshots -----------------------------------------------------
    def staging_sync(self) -> AbstractContextManager[None]:
        """Write transactions inside commit without an fsync each (inert staging pages only;
        see :meth:`migrate.store.connection.Connection.staging_sync`)."""
        return self._conn.staging_sync()

    @contextmanager
    def transaction(
        self, *, check_status: bool = True, kind: str | None = None, **context: Any
    ) -> Iterator[Tx]:
        """``BEGIN IMMEDIATE`` … ``COMMIT`` around the block; see :mod:`migrate.store.tx`.

        Every write transaction first re-reads the status marker under the write lock and
        refuses (nothing written) unless this handle's reader generation may still write the
        store: a store sealed for a transfer (``export-v1``), mid-conversion (``copying``) or
        promoted past this reader refuses writes even through a handle opened before.
        ``check_status=False`` is for :func:`migrate.store.graph.publish`, which makes the
        same check itself after resolving an exact retry (bbg's order).

        Transactions do not nest: inside one, publish with ``graph.publish(tx, ...)`` rather
        than ``store.commit``.

        This is the one place every write transaction of a store handle passes through, so it
        is where the ledger row is appended (:mod:`migrate.store.ledger`): after the block, in
        the same SQLite transaction, before ``COMMIT``.  ``kind`` names the transaction (else
        ``stage`` for import bookkeeping, ``write`` otherwise; the code inside may raise it
        with ``tx.mark``).
        """
        if self.schema_version != layout.SCHEMA_VERSION:
            raise layout.needs_upgrade(self.db_path)
        with self._conn.write(**context) as mark_clean:
            row = self._conn.one("SELECT last_transaction FROM bbg_storage_v1 WHERE id = 1")
            if row is None:
                raise StoreError(
                    f"{self.db_path}: bbg_storage_v1 has no row", path=str(self.db_path)
                )
            ref = context.get("import_id")
            if ref is None and isinstance(context.get("request"), bytes):
                ref = context["request"].hex()
            tx = self._new_tx(
                int(row[0]) + 1,
                kind=kind or ("stage" if "import_id" in context else "write"),
                ref=None if ref is None else str(ref),
            )
            tx.context = dict(context)
            if check_status:
                generations.require_readable(tx, self.reader_generation)
            yield tx
            if tx.discarded:
                tx.last_written = None
                mark_clean()  # a dry run: ROLLBACK, no ledger row
                return
            if tx.wrote:
                tx.close_entry()
            if tx.last_written is not None:
                self._conn.execute(
                    "UPDATE bbg_storage_v1 SET last_transaction = ? WHERE id = 1",
                    (tx.last_written,),
                )
                self._before_commit(tx)
            else:
                mark_clean()

    def _new_tx(self, number: int, **kw: Any) -> Tx:
        """The write transaction of this engine (the SQLite one: rows and records together,
        telling its changes to bbg's rows to a recorder of bbg's change id, :mod:`.bbg_changes`)."""
        tx = Tx(self._conn, number, **kw)
        if self.bbg_tables:
            tx.bbg = bbg_changes.Changes(tx, self._bbg_storage)
        return tx

    def _before_commit(self, tx: Tx) -> None:
        """What an engine writes just before the records commit (SQLite: bbg's
        ``last_transaction``, the change id of the transaction's changes to bbg's tables);
        ``tx.context`` is the transaction's (what a CommitUnknown names)."""
        if tx.bbg is not None:
            tx.bbg.finish()

    @contextmanager
    def snapshot(self, import_id: str | None = None) -> Iterator[StoreTables | StagedTables]:
        """A consistent read-only view of the five tables (on a second connection).

        With ``import_id``: the rows that import has staged instead of the live tables.
        """
        self._conn.execute("SELECT 1")  # refuses if this handle is poisoned
        conn = Connection(self.db_path)
        try:
            with conn.read():
                yield StoreTables(conn) if import_id is None else StagedTables(conn, import_id)
        finally:
            conn.close()

    # -- building a store nobody sees yet (:mod:`migrate.store.build`) -------------------
    def end_build(self) -> None:
        """Everything checkpointed into the database file (before it is fsynced)."""
        self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def info(self) -> dict[str, Any]:
        """Store id, hash suite, last transaction, status marker and generation."""
        row = self._conn.one(
            "SELECT store_id, hash_suite, last_transaction FROM bbg_storage_v1 WHERE id = 1"
        )
        assert row is not None
        marker, reached = generations.read_status(self._conn)
        return {
            "path": str(self.directory),
            "store_id": row[0],
            "hash_suite": row[1],
            "last_transaction": row[2],
            "status": marker,
            "generation": reached,
        }


def upgrade_store(path: str | Path | None, *, cwd: Path | None = None,
                  busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> dict[str, Any]:  # fmt: skip
    """``bbg-migrate upgrade``: bring a schema-version-1 store to version 2, in place, once.

    One write transaction: the ledger and retention tables are created, and ledger row
    ``last_transaction + 1`` (kind ``upgrade``) takes in everything the store held (it was
    recorded without order or time): every head (from no head to the current one), every
    content row that is no history entry's commit and every claim, and the import, fence and
    generation events of the store.  Then ``user_version`` becomes 2, so older builds refuse
    the store.  Running it on a version-2 store changes nothing.
    """
    directory = layout.resolve_store_dir(path, create=False, cwd=cwd)
    from migrate.store.engine import FJALL, engine_of

    if engine_of(directory) == FJALL:
        # A Fjall store (the real BBG database) has no schema version 1: its records beside
        # it are made with the ledger, and a store the cyber code wrote has no records to
        # upgrade.  Nothing to do, nothing read beyond the name, no lock taken.
        return {"kind": "bbg-upgrade", "path": str(directory), "engine": FJALL,
                "from": layout.SCHEMA_VERSION, "to": layout.SCHEMA_VERSION,
                "upgraded": False, "tx": None}  # fmt: skip
    lock = creation.acquire(directory, create=False, hash_suite=layout.DEFAULT_HASH_SUITE,
                            timeout=busy_timeout)  # fmt: skip
    try:
        db = directory / layout.DB_NAME
        layout.check_header(db)
        conn = Connection(db, busy_timeout=busy_timeout)
        try:
            layout.check_identity(conn, allow_pre_ledger=True)
            from migrate.store.upgrade import upgrade

            return {"path": str(directory), **upgrade(conn)}
        finally:
            conn.close()
    finally:
        lock.release()
