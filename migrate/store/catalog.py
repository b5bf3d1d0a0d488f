"""What a SQLite store file holds: its tables by name, their columns, their rows and the
store's schema version.

The share commands that carry every table (``snapshot``, ``restore``) or count rows
(``doctor``) read the file's catalogue here, so they hold no SQL:

* :func:`table_names` -- the ordinary tables, sorted;
* :func:`columns` -- a table's column names in declared order;
* :func:`ordered_rows` -- every row of a table (the columns named), ordered by all of them;
* :func:`row_count` -- the rows of a table;
* :func:`schema_version` -- ``PRAGMA user_version``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol


class _Reader(Protocol):
    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...

    def rows(self, sql: str, params: Any = (), batch: int = 512) -> Iterator[tuple[Any, ...]]: ...


def table_names(db: _Reader) -> list[str]:
    """The names of the ordinary tables in the database, sorted."""
    return [
        str(r[0])
        for r in db.rows(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name"
        )
    ]


def columns(db: _Reader, table: str) -> list[str]:
    """Column names of ``table`` in declared order."""
    return [str(r[1]) for r in db.rows(f"PRAGMA table_info({table})")]


def ordered_rows(db: _Reader, table: str, names: list[str]) -> Iterator[tuple[Any, ...]]:
    """Every row of ``table`` as the values of the columns ``names``, ordered by all of them."""
    order = ", ".join(str(i + 1) for i in range(len(names)))
    yield from db.rows(f"SELECT {', '.join(names)} FROM {table} ORDER BY {order}")


def row_count(db: _Reader, table: str) -> int:
    """The rows of ``table``."""
    row = db.one(f"SELECT COUNT(*) FROM {table}")
    return int(row[0]) if row else 0


def schema_version(db: _Reader) -> int:
    """The store's schema version (``PRAGMA user_version``)."""
    row = db.one("PRAGMA user_version")
    return 0 if row is None else int(row[0])
