"""What imports leave in a SQLite store while they run or after they die: imports still in
state ``staging``, their staged rows and staged namespaces, and staged rows or namespaces that
belong to no import in progress (true leftovers).  ``snapshot`` refuses a store with an import
staging; ``tail``/``snapshot`` refuse stray staged rows; ``doctor`` reports all of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

_STRAY = (
    " WHERE import_id NOT IN (SELECT import_id FROM bbg_import_v1_imports "
    "WHERE state = 'staging')"
)


class _Reader(Protocol):
    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...

    def rows(self, sql: str, params: Any = (), batch: int = 512) -> Iterator[tuple[Any, ...]]: ...


def _count(db: _Reader, sql: str) -> int:
    row = db.one(sql)
    return int(row[0]) if row else 0


def staging_imports(db: _Reader) -> list[str]:
    """The ids of the imports in state ``staging``, sorted."""
    return [str(r[0]) for r in db.rows(
        "SELECT import_id FROM bbg_import_v1_imports WHERE state = 'staging' ORDER BY import_id"
    )]  # fmt: skip


def staged_row_count(db: _Reader) -> int:
    """Staged rows (of any import)."""
    return _count(db, "SELECT count(*) FROM bbg_import_v1_staged")


def staged_namespace_count(db: _Reader) -> int:
    """Staged namespaces (of any import)."""
    return _count(db, "SELECT count(*) FROM bbg_import_v1_staged_namespaces")


def stray_staged_namespaces(db: _Reader) -> int:
    """Staged namespaces of no import in state ``staging``."""
    return _count(db, "SELECT count(*) FROM bbg_import_v1_staged_namespaces" + _STRAY)


def stray_staged_rows(db: _Reader) -> int:
    """Staged rows of no import in state ``staging``."""
    return _count(db, "SELECT count(*) FROM bbg_import_v1_staged" + _STRAY)


def a_staging_import(db: _Reader) -> str | None:
    """The id of an import in state ``staging`` (whichever SQLite finds first), or None."""
    row = db.one("SELECT import_id FROM bbg_import_v1_imports WHERE state = 'staging'")
    if row is None:
        return None
    import_id: str = row[0]  # TEXT: opening a store checks its column types (store.sanity)
    return import_id
