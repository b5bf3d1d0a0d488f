"""Content rows that arrive in a stream (``apply``, ``restore``), checked as a migration does.

A migration checks content with :func:`migrate.rules.shape.check_shape` (codec byte, length,
Blob ids = hemera(payload), and whatever else the content check of a migration verifies, such
as Data ids); a stream is held to exactly the same function, so an ``apply`` or a ``restore``
can never publish a row that ``doctor`` or a migration would reject.

The check runs once the whole stream is in the (uncommitted) transaction, so a row may name
rows that arrive later in the stream (a Data pair's children).  Memory stays bounded: the
stream's content keys and their line numbers are kept by the store
(:class:`migrate.store.stream_keys.StreamKeys`, not in Python), and the rows are read back
from the transaction in key order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bbg_core.errors import ValidationFailed
from migrate.rules.shape import check_shape
from migrate.store.codec import ARCHIVE_ORDER, CONTENT
from migrate.store.stream_keys import StreamKeys
from migrate.store.tx import Tx

_MAX_MAPPED = 1000  # errors whose line is looked up (the earliest line among them is named)


class _StreamContent:
    """The stream's content rows (with ``line < before``) as the RowSource check_shape reads."""

    def __init__(self, tx: Tx, keys: StreamKeys, before: int) -> None:
        self._tx = tx
        self._keys = keys
        self._before = before

    def table_kinds(self) -> dict[str, str]:
        return {name: "table" for name in ARCHIVE_ORDER}

    def rows(self, table: str) -> Iterator[tuple[bytes, bytes]]:
        if table != CONTENT:
            return
        yield from self._keys.content_rows(self._before)

    def get(self, table: str, key: bytes) -> bytes | None:
        return self._tx.get(table, key)


class ContentLedger:
    """Remembers which content keys a stream carried on which line, then checks them."""

    def __init__(self, tx: Tx, what: str) -> None:
        self._tx = tx
        self._what = what  # "applied" / "restored": what the refusal says did not happen
        self._rows = 0
        self._keys = StreamKeys(tx)

    def add(self, key: bytes, line: int) -> None:
        """Record that ``line`` carried content ``key`` (the first line that did is kept)."""
        self._keys.add(key, line)
        self._rows += 1

    def add_many(self, keys: list[bytes], line: int) -> None:
        self._keys.add_many(keys, line)
        self._rows += len(keys)

    def check(self, before: int | None = None) -> None:
        """ValidationFailed naming the earliest line (below ``before``) whose content row the
        migration's content check rejects; nothing if every row passes."""
        if not self._rows:
            return
        limit = before if before is not None else 1 << 62
        report = check_shape(_StreamContent(self._tx, self._keys, limit), hemera_digest=False)
        if not report.errors:
            return
        found: list[tuple[int, dict[str, Any]]] = []
        for error, position in list(zip(report.errors, report.positions, strict=True))[
            :_MAX_MAPPED
        ]:
            line = self._keys.line_at(limit, int(position))
            found.append((line if line is not None else 0, error))
        line, first = min(found, key=lambda item: item[0])
        where = f"line {line}"
        raise ValidationFailed(
            f"{where}: {first['code']}: {first['detail']}; nothing was {self._what}",
            line=line,
            errors=[
                {"code": e["code"], "detail": f"line {n}: {e['detail']}"}
                for n, e in sorted(found, key=lambda item: item[0])
            ],
        )
