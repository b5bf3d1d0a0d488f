"""The transaction ledger: the store's only global order (schema version 2).

Every write transaction of a store passes through :meth:`migrate.store.Store.transaction`
(GraphPort ``commit``/``commit_once``, the pipeline's and the transfer's stages and
activations, ``apply``, fences, promotions, ``nohistory``, ``excise``); when it wrote
anything, the same SQLite transaction appends one row to ``bbg_ledger_v1`` (this module's
:func:`append`) before ``COMMIT``.  A writer cannot forget it: the row is written by the
transaction context itself, not by the code inside it.  (The two writes that do not go through
a store handle are the store's creation, which writes ledger row 1 itself, and ``restore``,
which copies a snapshot's ledger verbatim.)

A ledger row: ``tx`` (= ``bbg_storage_v1.last_transaction`` after it; never renumbered),
``at`` (UTC µs, strictly increasing, :mod:`migrate.store.clock`), ``kind`` (the most significant
thing the transaction did, :data:`KIND_RANK`), ``ref`` (the import or request it belongs to),
``origin_tx``/``origin_at`` (for ``apply``: the source transaction it reproduces) and ``detail``
(canonical JSON ``{"events": [...]}``: the fence, generation, import and retention events it
made, in order).  Beside it: ``bbg_ledger_v1_heads`` (each head it moved, before → after, and the
request when it was one commit) and ``bbg_ledger_v1_rows`` (content and claim rows it added
that are not the commit of a history entry it added).  From these and the five tables
:mod:`migrate.share.events` derives the transaction's event/1 events.

``apply`` is the one writer that appends several ledger rows in one SQLite transaction: one
per source transaction of the stream (all or none of them commit).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from bbg_core.canonical import canonical_json
from bbg_core.errors import StoreCorrupt
from migrate.store import clock
from migrate.store.codec import CLAIMS, CONTENT, ORDINAL, Head

LEDGER = "bbg_ledger_v1"
HEADS = "bbg_ledger_v1_heads"
ROWS = "bbg_ledger_v1_rows"
BOUNDARIES = "bbg_retention_v1_boundaries"
EXCISED = "bbg_retention_v1_excised"
TABLES = (LEDGER, HEADS, ROWS, BOUNDARIES, EXCISED)

# When one transaction does several things, its kind is the highest-ranked of them.
KIND_RANK: dict[str, int] = {
    "write": 0,
    "stage": 10,
    "promote": 20,
    "fence": 30,
    "commit": 40,
    "commit_once": 41,
    "transfer-seal": 50,
    "activate": 60,
    "apply": 70,
    "nohistory": 80,
    "excise": 81,
    "upgrade": 90,
    "create": 100,
}


class _Db(Protocol):
    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...

    def rows(self, sql: str, params: Any = (), batch: int = 512) -> Iterator[tuple[Any, ...]]: ...

    def execute(self, sql: str, params: Any = ()) -> Any: ...


def _number(db: _Db, value: Any, what: str) -> int:
    """``value`` read from the ledger, which must be an integer; else the store is damaged."""
    if type(value) is not int:
        path = getattr(db, "path", "the store")
        raise StoreCorrupt(
            f"{path}: the ledger's {what} is {value!r}, not an integer: the store is damaged; "
            "run `bbg-migrate --store STORE doctor` and restore it from a backup",
            path=str(path), table=LEDGER,
        )  # fmt: skip
    return value


def last_at(db: _Db) -> int | None:
    """The time of the newest ledger row, or None for an empty ledger."""
    row = db.one(f"SELECT at FROM {LEDGER} ORDER BY tx DESC LIMIT 1")
    return None if row is None else _number(db, row[0], "newest time")


def append(
    db: _Db,
    number: int,
    kind: str,
    ref: str | None,
    events: list[dict[str, Any]],
    origin: tuple[int, int] | None = None,
) -> int:
    """Append ledger row ``number``; returns its time."""
    at = clock.next_at(last_at(db))
    db.execute(
        f"INSERT INTO {LEDGER} (tx, at, kind, ref, origin_tx, origin_at, detail) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            number,
            at,
            kind,
            ref,
            None if origin is None else origin[0],
            None if origin is None else origin[1],
            canonical_json({"events": events}),
        ),
    )
    return at


@dataclass(frozen=True)
class Entry:
    """One ledger row."""

    tx: int
    at: int
    kind: str
    ref: str | None
    origin: tuple[int, int] | None
    events: list[dict[str, Any]]


def _entry(row: tuple[Any, ...]) -> Entry:
    origin = None if row[4] is None else (int(row[4]), int(row[5]))
    return Entry(int(row[0]), int(row[1]), str(row[2]), row[3], origin,
                 list(json.loads(row[6])["events"]))  # fmt: skip


_COLUMNS = "tx, at, kind, ref, origin_tx, origin_at, detail"


def entries(db: _Db, after: int = 0, upto: int | None = None) -> Iterator[Entry]:
    """Ledger rows with ``after < tx`` (and ``tx <= upto``), in order (paged: bounded memory)."""
    last = after
    while True:
        page = list(
            db.rows(
                f"SELECT {_COLUMNS} FROM {LEDGER} WHERE tx > ? AND tx <= ? ORDER BY tx LIMIT 256",
                (last, (1 << 62) if upto is None else upto),
            )
        )
        if not page:
            return
        for row in page:
            yield _entry(row)
        last = int(page[-1][0])


def entry(db: _Db, tx: int) -> Entry | None:
    """Ledger row ``tx``, or None."""
    row = db.one(f"SELECT {_COLUMNS} FROM {LEDGER} WHERE tx = ?", (tx,))
    return None if row is None else _entry(row)


def first_tx(db: _Db) -> int:
    """The oldest ledger transaction number (TypeError for an empty ledger, which no store
    has: ``doctor`` reports it unreadable)."""
    row = db.one(f"SELECT min(tx) FROM {LEDGER}")
    return int(row[0]) if row else 0


def last_tx(db: _Db) -> int:
    """The newest ledger transaction number (0 for an empty ledger)."""
    row = db.one(f"SELECT max(tx) FROM {LEDGER}")
    return 0 if row is None or row[0] is None else _number(db, row[0], "newest transaction")


def heads_of(db: _Db, tx: int) -> Iterator[tuple[bytes, Head | None, Head, bytes | None]]:
    """``(namespace, before, after, request)`` of every head ``tx`` moved, namespace order."""
    for ns, before, after, request in db.rows(
        f"SELECT namespace, before, after, request FROM {HEADS} WHERE tx = ? ORDER BY namespace",
        (tx,),
    ):
        yield (
            bytes(ns),
            None if before is None else Head.decode(bytes(before)),
            Head.decode(bytes(after)),
            None if request is None else bytes(request),
        )


def rows_of(db: _Db, tx: int, table: str) -> Iterator[tuple[bytes, bytes | None]]:
    """``(key, value)`` of every row of ``table`` (content or claims) that ``tx`` recorded, in
    key order; value None: the row is not in the table (excised)."""
    for key, value in db.rows(
        f"SELECT r.key, t.value FROM {ROWS} AS r LEFT JOIN {table} AS t "
        "ON t.key = r.key WHERE r.tx = ? AND r.tbl = ? ORDER BY r.key",
        (tx, ORDINAL[table]),
    ):
        yield bytes(key), None if value is None else bytes(value)


def txs_recording(db: _Db, key: bytes) -> Iterator[int]:
    """The transactions that recorded a content or claim row under ``key``."""
    for (tx,) in db.rows(f"SELECT tx FROM {ROWS} WHERE key = ?", (key,)):
        yield int(tx)


def txs_moving(db: _Db, namespace: bytes) -> Iterator[int]:
    """The transactions that moved ``namespace``'s head."""
    for (tx,) in db.rows(f"SELECT tx FROM {HEADS} WHERE namespace = ?", (namespace,)):
        yield int(tx)


def moves_of(db: _Db, namespace: bytes) -> Iterator[tuple[Any, ...]]:
    """``(tx, before, after)`` of every move of ``namespace``'s head, as stored (heads
    encoded, ``before`` None for the first), for the caller to decode only what it needs."""
    yield from db.rows(f"SELECT tx, before, after FROM {HEADS} WHERE namespace = ?", (namespace,))


def contents_of_lone_moves(db: _Db, namespace: bytes) -> Iterator[bytes]:
    """The content keys written by the transactions that moved ``namespace``'s head and no
    other namespace's."""
    for (key,) in db.rows(
        f"SELECT key FROM {ROWS} WHERE tbl = ? AND tx IN (SELECT tx FROM {HEADS} "
        "GROUP BY tx HAVING count(*) = 1 AND min(namespace) = ?)", (ORDINAL[CONTENT], namespace),
    ):  # fmt: skip
        yield bytes(key)


def boundary_of(db: _Db, namespace: bytes) -> tuple[int, Head] | None:
    """``(first retained index, the head just below it)`` of a ``nohistory`` namespace."""
    row = db.one(
        f"SELECT first_index, prev FROM {BOUNDARIES} WHERE namespace = ?", (namespace,)
    )
    return None if row is None else (int(row[0]), Head.decode(bytes(row[1])))


def entries_below_boundaries(db: _Db) -> int:
    """The history entries ``nohistory`` dropped: the sum of every retained boundary's first
    index."""
    row = db.one(f"SELECT coalesce(sum(first_index), 0) FROM {BOUNDARIES}")
    return int(row[0]) if row else 0


def is_excised(db: _Db, what: str, ident: bytes) -> int | None:
    """The ledger transaction that excised ``ident`` (``what``: content/namespace), or None."""
    row = db.one(f"SELECT tx FROM {EXCISED} WHERE what = ? AND id = ?", (what, ident))
    return None if row is None else int(row[0])


def uncovered(db: _Db) -> dict[str, int]:
    """Rows of the five tables that no ledger transaction accounts for, so ``tail`` would not
    emit them (a store whose ledger rows were removed or never written); all zero when the
    ledger covers the tables.

    * ``content``: content rows that are not a history commit, not a row a transaction
      recorded, and not the commit a receipt names (``nohistory`` dropped its entry);
    * ``claims``: claim rows no transaction recorded;
    * ``heads``: heads that are not where the ledger's last transaction on them left them.
    """
    content = db.one(
        f"SELECT count(*) FROM {CONTENT} WHERE "
        "key NOT IN (SELECT value FROM application_history) AND "
        f"key NOT IN (SELECT key FROM {ROWS} WHERE tbl = {ORDINAL[CONTENT]}) AND "
        "key NOT IN (SELECT substr(value, 41, 32) FROM application_requests)"
    )
    claims = db.one(
        f"SELECT count(*) FROM {CLAIMS} WHERE "
        f"key NOT IN (SELECT key FROM {ROWS} WHERE tbl = {ORDINAL[CLAIMS]})"
    )
    heads = db.one(
        "SELECT count(*) FROM application_heads AS h WHERE h.value IS NOT (SELECT l.after FROM "
        f"{HEADS} AS l WHERE l.namespace = h.key ORDER BY l.tx DESC LIMIT 1)"
    )
    return {
        "content": int(content[0]) if content else 0,
        "claims": int(claims[0]) if claims else 0,
        "heads": int(heads[0]) if heads else 0,
    }


def describe_uncovered(counts: dict[str, int]) -> str | None:
    """What :func:`uncovered` found, in words (None: the ledger covers the tables)."""
    parts = []
    if counts["content"] or counts["claims"]:
        parts.append(f"{counts['content']} content rows and {counts['claims']} claim rows are "
                     "recorded by no ledger transaction")  # fmt: skip
    if counts["heads"]:
        parts.append(f"{counts['heads']} namespace heads are not where the ledger's last "
                     "transaction on them left them (a write bypassed the ledger)")  # fmt: skip
    return "; ".join(parts) or None


EVENT_KINDS = ("fence", "generation", "import", "nohistory", "excise")


def bad_rows(db: _Db, sample: int = 20) -> tuple[int, list[str]]:
    """Ledger rows ``tail`` could not turn into events -- a kind it does not know, a time that
    is not an integer, a detail that is not ``{"events": [...]}`` of known kinds -- and rows
    of ``bbg_ledger_v1_rows`` naming a content or claim row that is neither in its table nor
    excised (``tail`` would emit a claim with no value): (count, the first ``sample`` said
    in words)."""
    found: list[str] = []
    count = 0
    for tx, at, kind, detail in db.rows(f"SELECT tx, at, kind, detail FROM {LEDGER} ORDER BY tx"):
        why = _row_problem(at, kind, detail)
        if why is not None:
            count += 1
            if len(found) < sample:
                found.append(f"ledger transaction {tx!r}: {why}")
    for table, what in ((CONTENT, "content"), (CLAIMS, "claim")):
        excised = f" AND r.key NOT IN (SELECT id FROM {EXCISED} WHERE what = 'content')" if (
            table == CONTENT) else ""  # fmt: skip
        for tx, key in db.rows(
            f"SELECT r.tx, r.key FROM {ROWS} AS r WHERE r.tbl = ? AND r.key NOT IN "
            f"(SELECT key FROM {table}){excised} ORDER BY r.tx, r.key", (ORDINAL[table],),
        ):  # fmt: skip
            count += 1
            if len(found) < sample:
                found.append(f"ledger transaction {tx}: records {what} row "
                             f"{bytes(key).hex()}, which is not in {table}")  # fmt: skip
    return count, found


def _row_problem(at: Any, kind: Any, detail: Any) -> str | None:
    if type(at) is not int:
        return f"time {at!r} is not an integer"
    if kind not in KIND_RANK:
        return f"kind {kind!r} is not one this build writes"
    try:
        events = json.loads(detail)["events"]
        kinds = [e["kind"] for e in events]
    except (ValueError, TypeError, KeyError, IndexError):
        return "its detail is not {\"events\": [...]}"
    unknown = [k for k in kinds if k not in EVENT_KINDS]
    return f"events of unknown kinds {unknown}" if unknown else None
