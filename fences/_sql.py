"""The little SQL surface the fence modules need (kept structural to avoid import cycles).

``migrate.store`` hands these functions its connection (reads) or its write transaction
(``Tx``, writes); both satisfy these protocols.
"""

from __future__ import annotations

from typing import Any, Protocol


class SqlReader(Protocol):
    """Something that answers one-row queries."""

    @property
    def path(self) -> Any: ...

    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...


class SqlWriter(SqlReader, Protocol):
    """An open write transaction."""

    def execute(self, sql: str, params: Any = ()) -> Any: ...

    @property
    def number(self) -> int:
        """The number this write transaction will have once committed."""
        ...

    def mark(self, kind: str, ref: str | None = None) -> None:
        """Name what the transaction does (its ledger kind)."""
        ...

    def note_event(self, doc: dict[str, Any]) -> None:
        """Record an event of the transaction in its ledger row."""
        ...
