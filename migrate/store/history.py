"""A namespace's history in a SQLite store, read by key: its entries, its request receipts and
the content rows of its commits.  ``tail`` derives commit events from these
(:mod:`migrate.share.events`) and ``excise`` plans with them (:mod:`migrate.share.retention`).

* :func:`entry_commit` / :func:`entries` -- one history entry's commit, or a namespace's
  entries over an index range (key order);
* :func:`receipt` / :func:`receipts_by_index` -- one request receipt, or all of a namespace's
  in head-index order;
* :func:`commit_content` -- a commit's content row;
* :func:`head_values` -- every namespace's head, as stored;
* :func:`keys_naming` -- the history keys whose entry has a given commit;
* :func:`has_entries` -- whether a namespace has any history entry.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any, Protocol

from migrate.store.codec import U64_MAX, history_key, request_key

# Requests of one namespace in head-index order: the index is u64 LE at value[32:40], so
# its bytes taken last-to-first compare as a big-endian number.
_BY_INDEX = ", ".join(f"substr(value, {40 - i}, 1)" for i in range(8))


class _Reader(Protocol):
    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...

    def rows(self, sql: str, params: Any = (), batch: int = 512) -> Iterator[tuple[Any, ...]]: ...


def entry_commit(db: _Reader, namespace: bytes, index: int) -> bytes | None:
    """The commit of ``namespace``'s history entry ``index``, or None."""
    row = db.one(
        "SELECT value FROM application_history WHERE key = ?", (history_key(namespace, index),)
    )
    return None if row is None else bytes(row[0])


def entries(db: _Reader, namespace: bytes, first: int, last: int) -> Iterator[tuple[bytes, bytes]]:
    """``(key, commit)`` of ``namespace``'s history entries ``first`` ≤ index ≤ ``last``, in
    key order."""
    for key, value in db.rows(
        "SELECT key, value FROM application_history WHERE key >= ? AND key <= ? ORDER BY key",
        (history_key(namespace, first), history_key(namespace, last)),
    ):
        yield bytes(key), bytes(value)


def receipt(db: _Reader, namespace: bytes, request: bytes) -> bytes | None:
    """The receipt (fingerprint and head) of ``request`` in ``namespace``, or None."""
    row = db.one(
        "SELECT value FROM application_requests WHERE key = ?", (request_key(namespace, request),)
    )
    return None if row is None else bytes(row[0])


def receipts_by_index(db: _Reader, namespace: bytes) -> Generator[tuple[Any, ...]]:
    """``(key, value)`` of every receipt of ``namespace``, as stored, in head-index order (a
    generator, so the caller can close the cursor early)."""
    yield from db.rows(
        "SELECT key, value FROM application_requests WHERE key > ? AND key <= ? "
        f"ORDER BY {_BY_INDEX}",
        (namespace, namespace + b"\xff" * 32),
    )


def commit_content(db: _Reader, commit: bytes) -> bytes | None:
    """The content row of ``commit``, or None."""
    row = db.one("SELECT value FROM application_content WHERE key = ?", (commit,))
    return None if row is None else bytes(row[0])


def head_values(db: _Reader) -> Iterator[Any]:
    """Every head value as stored (a 40-byte head unless the store is damaged)."""
    for (value,) in db.rows("SELECT value FROM application_heads"):
        yield value


def keys_naming(db: _Reader, commit: bytes) -> Iterator[bytes]:
    """The keys (namespace, index) of the history entries whose commit is ``commit``."""
    for (key,) in db.rows("SELECT key FROM application_history WHERE value = ?", (commit,)):
        yield bytes(key)


def has_entries(db: _Reader, namespace: bytes) -> bool:
    """True if ``namespace`` has a history entry (any index)."""
    return db.one(
        "SELECT 1 FROM application_history WHERE key > ? AND key <= ?",
        (namespace, history_key(namespace, U64_MAX)),
    ) is not None
