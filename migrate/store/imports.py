"""Import records and inert staging: the primitives a migration pipeline builds on.

Every function takes the caller's open write transaction (``with store.transaction() as tx``)
or, for reads, a store handle / transaction, so each pipeline step commits its effect and its
bookkeeping together.  An import is named by a pipeline-chosen ``import_id`` (text).

Lifecycle::

    begin_import(tx, iid)                      # state 'staging' (idempotent)
    record_seal(tx, iid, {...})                # source fingerprint (immutable)
    stage_namespace(tx, iid, ns)               # GraphPort writes to ns now raise Locked
    stage_rows(tx, iid, table, rows, stream="content", cursor=b"...")   # one page + cursor
    ...                                        # store.snapshot(iid) / StagedTables(tx, iid):
                                               #   digest and links over the staged rows
    activate(tx, iid)                          # staged rows -> the five tables, one transaction
    record_receipt(tx, iid, {...})             # what an exact rerun returns
    discard(tx, iid)                           # or: drop everything staged

Staged rows live in ``bbg_import_v1_staged``, never in the five tables, so readers of the store
cannot see them; ``activate`` copies them with immutable-put semantics (same bytes no-op,
different bytes Conflict; a differing head is a Conflict too), then clears the staging.
``journal(tx, iid, stage, detail)`` records a completed stage in the same transaction.
Fences and reader generations are in :mod:`fences`.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from bbg_core import documents
from bbg_core.canonical import canonical_json
from bbg_core.errors import Conflict, StoreCorrupt, StoreError
from migrate.store.codec import (
    ARCHIVE_ORDER,
    CLAIMS,
    CONTENT,
    HEADS,
    HISTORY,
    ID_LEN,
    MAX_KEY_LEN,
    ORDINAL,
    Head,
)
from migrate.store.tx import Tx, check_table


class _Reader(Protocol):
    @property
    def path(self) -> Any: ...

    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...


class _PageReader(_Reader, Protocol):
    def rows(self, sql: str, params: Any = (), batch: int = 512) -> Iterator[tuple[Any, ...]]: ...


def begin_import(tx: Tx, import_id: str) -> str:
    """Register ``import_id`` (state 'staging' if new); returns its current state."""
    tx.execute(
        "INSERT INTO bbg_import_v1_imports (import_id, state, created_transaction) "
        "VALUES (?, 'staging', ?) ON CONFLICT (import_id) DO NOTHING",
        (import_id, tx.number),
    )
    state = import_state(tx, import_id)
    assert state is not None
    return state


def record_active(tx: Tx, import_id: str) -> None:
    """Register ``import_id`` as already active (an import an event stream carries in)."""
    tx.execute(
        "INSERT INTO bbg_import_v1_imports (import_id, state, created_transaction) "
        "VALUES (?, 'active', ?)",
        (import_id, tx.number),
    )


def import_state(db: _Reader, import_id: str) -> str | None:
    """'staging', 'active', 'discarded', or None if unknown."""
    row = db.one("SELECT state FROM bbg_import_v1_imports WHERE import_id = ?", (import_id,))
    return None if row is None else str(row[0])


def _require_staging(tx: Tx, import_id: str) -> None:
    state = import_state(tx, import_id)
    if state != "staging":
        raise StoreError(
            f"{tx.path}: import {import_id} is {state or 'unknown'}, not staging",
            path=str(tx.path),
            import_id=import_id,
        )


def _put_doc(tx: Tx, table: str, column: str, import_id: str, doc: Mapping[str, Any]) -> None:
    text = canonical_json(doc)
    row = tx.one(f"SELECT {column} FROM {table} WHERE import_id = ?", (import_id,))
    if row is None:
        tx.execute(f"INSERT INTO {table} (import_id, {column}) VALUES (?, ?)", (import_id, text))
    elif row[0] != text:
        raise Conflict(
            f"{tx.path}: import {import_id} already has a different {column} record",
            path=str(tx.path),
            import_id=import_id,
        )


def _get_doc(db: _Reader, table: str, column: str, import_id: str) -> dict[str, Any] | None:
    row = db.one(f"SELECT {column} FROM {table} WHERE import_id = ?", (import_id,))
    if row is None:
        return None
    doc: dict[str, Any] = _record(db, row[0], f"{column} of import {import_id}")
    return doc


def _record(db: _Reader, text: str, what: str) -> Any:
    """A JSON record the store holds; one it cannot hold (changed by hand: not JSON, nested
    beyond reason) is StoreCorrupt naming the store, never a parser's own exception."""
    hint = f"the {what} is damaged; restore the store from a backup"
    return documents.parse(text, db.path, error=StoreCorrupt, hint=hint)


def record_seal(tx: Tx, import_id: str, seal: Mapping[str, Any]) -> None:
    """Store the source's seal record (same document again = no-op, another = Conflict)."""
    _put_doc(tx, "bbg_import_v1_seals", "seal", import_id, seal)


def seal_of(db: _Reader, import_id: str) -> dict[str, Any] | None:
    """The seal record of ``import_id``, or None."""
    return _get_doc(db, "bbg_import_v1_seals", "seal", import_id)


def record_receipt(tx: Tx, import_id: str, receipt: Mapping[str, Any]) -> None:
    """Store the import's receipt (immutable like the seal); the ledger entry gets the
    ``import`` event naming the import, its seal and its receipt."""
    had = receipt_of(tx, import_id) is not None
    _put_doc(tx, "bbg_import_v1_receipts", "receipt", import_id, receipt)
    if not had:
        tx.note_event(
            {"kind": "import", "import_id": import_id, "receipt": dict(receipt),
             "seal": seal_of(tx, import_id)}
        )  # fmt: skip


def receipt_of(db: _Reader, import_id: str) -> dict[str, Any] | None:
    """The receipt of ``import_id``, or None."""
    return _get_doc(db, "bbg_import_v1_receipts", "receipt", import_id)


def journal(tx: Tx, import_id: str, stage: str, detail: Mapping[str, Any]) -> None:
    """Record that ``stage`` completed (rewriting an earlier record of the same stage)."""
    tx.execute(
        "INSERT INTO bbg_import_v1_journal (import_id, stage, detail, transaction_no) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (import_id, stage) DO UPDATE SET "
        "detail = excluded.detail, transaction_no = excluded.transaction_no",
        (import_id, stage, canonical_json(detail), tx.number),
    )


def journal_of(db: _Reader, import_id: str, stage: str) -> dict[str, Any] | None:
    """The detail recorded for a completed stage, or None if it has not completed."""
    row = db.one(
        "SELECT detail FROM bbg_import_v1_journal WHERE import_id = ? AND stage = ?",
        (import_id, stage),
    )
    return None if row is None else dict(_record(db, row[0], f"journal of import {import_id}"))


def set_cursor(tx: Tx, import_id: str, stream: str, cursor: bytes, rows: int) -> None:
    """Set the resume position of one copy stream (commit it with the page it follows)."""
    tx.execute(
        "INSERT INTO bbg_import_v1_cursors (import_id, stream, cursor, rows) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (import_id, stream) DO UPDATE SET cursor = excluded.cursor, "
        "rows = excluded.rows",
        (import_id, stream, cursor, rows),
    )


def cursor_of(db: _Reader, import_id: str, stream: str) -> tuple[bytes, int] | None:
    """``(cursor, rows copied so far)`` of a stream, or None if it has not started."""
    row = db.one(
        "SELECT cursor, rows FROM bbg_import_v1_cursors WHERE import_id = ? AND stream = ?",
        (import_id, stream),
    )
    return None if row is None else (bytes(row[0]), int(row[1]))


def stage_namespace(tx: Tx, import_id: str, namespace: bytes) -> None:
    """Make ``namespace`` refuse GraphPort writes until this import is activated."""
    _require_staging(tx, import_id)
    if len(namespace) != ID_LEN:
        raise ValueError(f"namespace of {len(namespace)} bytes (want {ID_LEN})")
    owner = import_of_staged_namespace(tx, namespace)
    if owner is not None and owner != import_id:
        raise Conflict(
            f"{tx.path}: namespace {namespace.hex()} is already staged by import {owner}",
            path=str(tx.path),
            namespace=namespace,
            import_id=import_id,
        )
    if owner is None:
        tx.execute(
            "INSERT INTO bbg_import_v1_staged_namespaces (namespace, import_id) VALUES (?, ?)",
            (namespace, import_id),
        )


def staged_namespaces(db: _Reader, import_id: str) -> list[bytes]:
    """Namespaces staged by ``import_id``, in byte order."""
    out: list[bytes] = []
    last = b""
    # Paged by key so no unbounded cursor is needed on a plain reader.
    while True:
        row = db.one(
            "SELECT namespace FROM bbg_import_v1_staged_namespaces "
            "WHERE import_id = ? AND namespace > ? ORDER BY namespace LIMIT 1",
            (import_id, last),
        )
        if row is None:
            return out
        last = bytes(row[0])
        out.append(last)


def stage_rows(
    tx: Tx,
    import_id: str,
    table: str,
    rows: Iterable[tuple[bytes, bytes]],
    *,
    stream: str | None = None,
    cursor: bytes | None = None,
) -> int:
    """Stage rows for ``table`` (immutable within the import); returns how many were new.

    With ``stream`` and ``cursor`` the stream's cursor advances in the same transaction,
    its row count growing by the rows given.
    """
    _require_staging(tx, import_id)
    ordinal = ORDINAL[check_table(table)]
    batch = [(import_id, ordinal, bytes(k), bytes(v)) for k, v in rows]
    for _, _, key, _ in batch:
        if not key or len(key) > MAX_KEY_LEN:
            raise StoreError(
                f"{tx.path}: {table} key of {len(key)} bytes cannot be staged",
                path=str(tx.path),
                table=table,
                key=key,
            )
    # Fast path: one executemany; only when some rows already existed (a resumed page) are
    # they compared one by one, so a re-staged row with other bytes is still a Conflict.
    before = tx.total_changes()
    tx.executemany(
        "INSERT INTO bbg_import_v1_staged (import_id, tbl, key, value) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (import_id, tbl, key) DO NOTHING",
        batch,
    )
    new = tx.total_changes() - before
    if new != len(batch):
        for item in batch:
            row = tx.one(
                "SELECT value FROM bbg_import_v1_staged "
                "WHERE import_id = ? AND tbl = ? AND key = ?",
                item[:3],
            )
            if row is None or bytes(row[0]) != item[3]:
                raise Conflict(
                    f"{tx.path}: import {import_id} staged other bytes for {table} "
                    f"key {item[2].hex()}",
                    path=str(tx.path),
                    table=table,
                    key=item[2],
                    import_id=import_id,
                )
    if stream is not None and cursor is not None:
        prior = cursor_of(tx, import_id, stream)
        set_cursor(tx, import_id, stream, cursor, (prior[1] if prior else 0) + len(batch))
    return new


def activate(
    tx: Tx, import_id: str, table_done: Callable[[str], None] | None = None
) -> dict[str, int]:
    """Publish the import's staged rows into the five tables; returns new rows per table.
    ``table_done(table)`` after each table is copied (for progress).

    The engine copies (:meth:`migrate.store.tx.Tx.publish_staged`): immutable puts, a key
    that holds other bytes is a Conflict and nothing is published.  The ledger entry records
    each head the activation moves (before → after) and the content and claim rows it adds
    that are not the commit of a staged history entry.
    """
    _require_staging(tx, import_id)
    tx.mark("activate", import_id)
    inserted = tx.publish_staged(import_id, table_done)
    _clear(tx, import_id, "active")
    return inserted


def staged_rows(db: _PageReader, import_id: str, table: str) -> Iterator[tuple[bytes, bytes]]:
    """The rows ``import_id`` staged for ``table``, in key order."""
    for key, value in db.rows(
        "SELECT key, value FROM bbg_import_v1_staged WHERE import_id = ? AND tbl = ? "
        "ORDER BY key",
        (import_id, ORDINAL[table]),
    ):
        yield bytes(key), bytes(value)


def plan_activation(tx: Tx, import_id: str) -> dict[str, Any]:
    """What activating ``import_id`` will publish, checked against the store as it is now
    (Conflict, nothing written, when a key holds other bytes): new rows per table, and the
    rows and key+value bytes staged.  Engines that publish outside the records' transaction
    record this first (the journal's ``activating`` entry), so a rerun after a crash in the
    middle reports the very same counts."""
    inserted: dict[str, int] = {}
    rows = size = 0
    for table in ARCHIVE_ORDER:
        new = 0
        for key, value in staged_rows(tx, import_id, table):
            rows += 1
            size += len(key) + len(value)
            live = tx.live_get(table, key)
            if live is None:
                new += 1
            elif live != value:
                raise Conflict(
                    f"{tx.path}: activating import {import_id}: {table} already holds other "
                    f"bytes under key {key.hex()}",
                    path=str(tx.path), table=table, key=key, import_id=import_id,
                )  # fmt: skip
        inserted[table] = new
    return {"inserted": inserted, "rows": rows, "bytes": size}


def activate_loaded(tx: Tx, import_id: str) -> None:
    """Mark active an import whose rows were loaded straight into the five tables of a
    store built for it alone (:mod:`migrate.store.build`: nothing was staged, nothing to copy).

    The ledger entry is :func:`activate`'s: every head moved (from nothing), and the content
    and claim rows that are not the commit of a history entry -- everything in the five
    tables is this import's.
    """
    _require_staging(tx, import_id)
    tx.mark("activate", import_id)
    if tx.ledgered:
        tx.execute(
            "INSERT INTO bbg_ledger_v1_rows (tx, tbl, key) SELECT ?, ?, c.key "
            f"FROM {CONTENT} AS c WHERE c.key NOT IN (SELECT value FROM {HISTORY}) "
            "ON CONFLICT DO NOTHING",
            (tx.number, ORDINAL[CONTENT]),
        )
        tx.execute(
            "INSERT INTO bbg_ledger_v1_rows (tx, tbl, key) "
            f"SELECT ?, ?, key FROM {CLAIMS} WHERE true ON CONFLICT DO NOTHING",
            (tx.number, ORDINAL[CLAIMS]),
        )
    for key, value in tx.rows(f"SELECT key, value FROM {HEADS} ORDER BY key"):
        tx.note_head(bytes(key), None, Head.decode(bytes(value)))
    _clear(tx, import_id, "active")


def discard_command(store_dir: Any, import_id: str) -> str:
    """The exact command line that gives up ``import_id`` in the store in ``store_dir``."""
    return f"bbg-migrate --store {shlex.quote(str(store_dir))} discard {shlex.quote(import_id)}"


def discard(tx: Tx, import_id: str) -> None:
    """Drop everything the import staged and release its namespaces."""
    _require_staging(tx, import_id)
    _clear(tx, import_id, "discarded")


def _clear(tx: Tx, import_id: str, state: str) -> None:
    tx.execute("DELETE FROM bbg_import_v1_staged WHERE import_id = ?", (import_id,))
    tx.execute("DELETE FROM bbg_import_v1_staged_namespaces WHERE import_id = ?", (import_id,))
    tx.execute("UPDATE bbg_import_v1_imports SET state = ? WHERE import_id = ?", (state, import_id))


def claim_nonce(tx: Tx, nonce: str, import_id: str) -> None:
    """Bind ``nonce`` to ``import_id`` for good (the same nonce, another import: Conflict)."""
    row = tx.one("SELECT import_id FROM bbg_import_v1_nonces WHERE nonce = ?", (nonce,))
    if row is None:
        tx.execute(
            "INSERT INTO bbg_import_v1_nonces (nonce, import_id) VALUES (?, ?)", (nonce, import_id)
        )
    elif row[0] != import_id:
        raise Conflict(
            f"{tx.path}: nonce {nonce} was already used by import {row[0]} with other inputs; "
            "use a new nonce for a different migration",
            path=str(tx.path),
            nonce=nonce,
            import_id=import_id,
        )


def import_of_nonce(db: _Reader, nonce: str) -> str | None:
    """The import a nonce is bound to, or None."""
    row = db.one("SELECT import_id FROM bbg_import_v1_nonces WHERE nonce = ?", (nonce,))
    return None if row is None else str(row[0])


def import_of_staged_namespace(db: _Reader, namespace: bytes) -> str | None:
    """The import that staged ``namespace`` (it refuses GraphPort writes meanwhile), or None."""
    row = db.one(
        "SELECT import_id FROM bbg_import_v1_staged_namespaces WHERE namespace = ?", (namespace,)
    )
    return None if row is None else str(row[0])


def journal_stages(db: _PageReader, import_id: str) -> set[str]:
    """Every stage the journal records for ``import_id``."""
    return {
        str(stage)
        for (stage,) in db.rows(
            "SELECT stage FROM bbg_import_v1_journal WHERE import_id = ?", (import_id,)
        )
    }


def rows_staged(db: _Reader, import_id: str) -> int:
    """How many rows ``import_id`` has staged so far (the sum over its cursors)."""
    row = db.one("SELECT COALESCE(SUM(rows), 0) FROM bbg_import_v1_cursors WHERE import_id = ?",
                 (import_id,))  # fmt: skip
    return int(row[0]) if row else 0


def all_imports(db: _PageReader) -> list[tuple[str, str, int]]:
    """``(import id, state, created transaction)`` of every import, oldest first."""
    return [
        (str(iid), str(state), int(created))
        for iid, state, created in db.rows(
            "SELECT import_id, state, created_transaction FROM bbg_import_v1_imports "
            "ORDER BY created_transaction, import_id"
        )
    ]


def staging_journaled_from(db: _Reader, stage: str, path: str) -> str | None:
    """The newest import in progress (``staging``) whose journal entry ``stage`` records
    ``path`` as its ``detail.path``, or None."""
    row = db.one(
        "SELECT j.import_id FROM bbg_import_v1_journal AS j JOIN bbg_import_v1_imports AS i "
        "ON i.import_id = j.import_id WHERE j.stage = ? AND i.state = 'staging' "
        "AND json_extract(j.detail, '$.path') = ? ORDER BY j.transaction_no DESC LIMIT 1",
        (stage, path),
    )
    return None if row is None else str(row[0])


def seals(db: _PageReader) -> Iterator[tuple[str, dict[str, Any], str]]:
    """``(import id, seal record, state)`` of every sealed import, in import id order."""
    for iid, text, state in db.rows(
        "SELECT s.import_id, s.seal, i.state FROM bbg_import_v1_seals AS s "
        "JOIN bbg_import_v1_imports AS i ON i.import_id = s.import_id ORDER BY s.import_id"
    ):
        yield str(iid), _record(db, text, f"seal of import {iid}"), str(state)
