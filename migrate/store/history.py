"""The history entries of a SQLite store, read by key and by commit.

* :func:`keys_naming` -- the history keys whose entry has a given commit;
* :func:`has_entries` -- whether a namespace has any history entry.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from migrate.store.codec import U64_MAX, history_key


class _Reader(Protocol):
    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...

    def rows(self, sql: str, params: Any = (), batch: int = 512) -> Iterator[tuple[Any, ...]]: ...


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
