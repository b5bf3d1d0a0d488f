"""The shape rules of a legacy cell store, checked in one streaming pass.

A cell store holds exactly five ``&[u8] -> &[u8]`` tables (BRIEF §2.1).  This module checks
what can be seen row by row -- the table set, key and value lengths, codec bytes, Blob content
ids -- and, in the same pass, gathers per-table statistics and the archive digest (§6).  The
cross-table "links" (history, heads, receipts) are checked by :mod:`migrate.links`.

Everything here works over a :class:`RowSource`: a cell.redb read by the redb reader, a
staging area, or a BBG store all look the same to it.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from migrate.store.codec import ARCHIVE_ORDER, MAX_PAYLOAD
from migrate.store.codec import MAX_KEY_LEN as MAX_KEY

# Digest order (§6): the position is the ordinal byte written before each table.
DIGEST_ORDER = ARCHIVE_ORDER
TABLES = frozenset(DIGEST_ORDER)
CODEC_DATA, CODEC_BLOB = 0, 1
HEMERA_DIGEST_DOMAIN = b"bbg/application-archive-rows/1\x00"

# Exact key/value lengths per table (content values vary: codec byte + payload).
KEY_LEN = {
    "application_content": 32,
    "application_heads": 32,
    "application_history": 40,
    "application_requests": 64,
    "application_unique_claims": 32,
}
VALUE_LEN = {
    "application_heads": 40,
    "application_history": 32,
    "application_requests": 72,
    "application_unique_claims": 32,
}


class RowSource(Protocol):
    """Five sorted tables: the view every check and digest in this package reads."""

    def table_kinds(self) -> dict[str, str]:
        """Every table present, name -> ``"table"`` or ``"multimap"``."""
        ...

    def rows(self, table: str) -> Iterator[tuple[bytes, bytes]]:
        """The rows of ``table`` in ascending key order (multimap: (key, value) pairs)."""
        ...


@dataclass
class TableStats:
    kind: str = "table"
    rows: int = 0
    key_bytes: int = 0
    value_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "rows": self.rows,
            "key_bytes": self.key_bytes,
            "value_bytes": self.value_bytes,
            "total_bytes": self.key_bytes + self.value_bytes,
        }


@dataclass
class ShapeReport:
    """What one pass over a row source found."""

    tables: dict[str, TableStats] = field(default_factory=dict)
    errors: list[dict[str, str]] = field(default_factory=list)
    codecs: dict[str, int] = field(default_factory=lambda: {"data": 0, "blob": 0, "other": 0})
    blob_id_mismatches: int = 0
    blob_ids_checked: bool = False
    archive_digest_sha256: str = ""
    # Row position of each error (parallel to ``errors``), so errors found on the
    # verifier thread are put back in row order.
    positions: list[int] = field(default_factory=list)
    row: int = -1
    archive_digest_hemera: str | None = None


def _error(report: ShapeReport, code: str, detail: str, position: int | None = None) -> None:
    report.errors.append({"code": code, "detail": detail})
    report.positions.append(report.row if position is None else position)


class _BlobVerifier:
    """Checks Blob ids (hemera(payload) == key) on a worker thread, in row order.

    cffi releases the GIL around the C hash, so hashing overlaps the main pass on a second
    core.  Memory is bounded: batches of about BATCH_BYTES, at most MAX_PENDING in flight.
    """

    BATCH_BYTES = 4 * 1024 * 1024
    MAX_PENDING = 2

    def __init__(
        self, hash_many: Callable[[list[bytes]], list[bytes]], report: ShapeReport
    ) -> None:
        self._hash_many = hash_many
        self._report = report
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="blob-ids")
        self._pending: deque[Future[list[tuple[int, bytes]]]] = deque()
        self._batch: list[tuple[int, bytes, bytes]] = []
        self._size = 0

    def add(self, position: int, key: bytes, payload: bytes) -> None:
        self._batch.append((position, key, payload))
        self._size += len(payload) + 64
        if self._size >= self.BATCH_BYTES:
            self._flush()

    def _verify(self, batch: list[tuple[int, bytes, bytes]]) -> list[tuple[int, bytes]]:
        # One C call per batch: the GIL is released for all of it, not per small payload.
        ids = self._hash_many([payload for _, _, payload in batch])
        return [(pos, key) for (pos, key, _), got in zip(batch, ids, strict=True) if got != key]

    def _flush(self) -> None:
        if self._batch:
            self._pending.append(self._pool.submit(self._verify, self._batch))
            self._batch, self._size = [], 0
        while len(self._pending) > self.MAX_PENDING:
            self._collect(self._pending.popleft())

    def _collect(self, future: Future[list[tuple[int, bytes]]]) -> None:
        for position, key in future.result():
            self._report.blob_id_mismatches += 1
            _error(
                self._report,
                "content-id-mismatch",
                f"content {key.hex()}: Blob id is not hemera(payload)",
                position,
            )

    def finish(self) -> None:
        """Wait for every batch and record its mismatches."""
        try:
            self._flush()
            while self._pending:
                self._collect(self._pending.popleft())
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)


def _check_table_set(kinds: dict[str, str], report: ShapeReport) -> None:
    for name in sorted(kinds, key=lambda n: n.encode()):
        if name not in TABLES:
            _error(
                report,
                "unexpected-table",
                f'table "{name}" is not one of the five application tables',
            )
    for name in DIGEST_ORDER:
        if name not in kinds:
            _error(report, "missing-table", f'table "{name}" is missing')
        elif kinds[name] == "multimap":
            _error(report, "multimap-table", f'multimap table "{name}"')


def _check_row(
    table: str,
    key: bytes,
    value: bytes,
    report: ShapeReport,
    blob_ids: _BlobVerifier | None,
) -> None:
    key_ok = _check_key(table, key, report)
    want = VALUE_LEN.get(table)
    if want is not None:
        if len(value) != want:
            _error(
                report,
                "bad-value-length",
                f"{table}: key {key.hex()} has a {len(value)}-byte value (expected {want})",
            )
        return
    # application_content: codec byte + payload.  Codecs are counted even for a row whose
    # key is malformed (it is still a content row); its id cannot be checked.
    if not value or len(value) - 1 > MAX_PAYLOAD:
        _error(
            report,
            "bad-value-length",
            f"content {key.hex()}: value of {len(value)} bytes (codec byte + payload <= 16 MiB)",
        )
        return
    codec = value[0]
    if codec == CODEC_DATA:
        report.codecs["data"] += 1
    elif codec == CODEC_BLOB:
        report.codecs["blob"] += 1
        if key_ok and blob_ids is not None:
            blob_ids.add(report.row, key, value[1:])
    else:
        report.codecs["other"] += 1
        _error(report, "unknown-codec", f"content {key.hex()}: codec byte {codec}")


def _check_key(table: str, key: bytes, report: ShapeReport) -> bool:
    if len(key) > MAX_KEY:
        _error(
            report,
            "oversized-key",
            f"{table}: key of {len(key)} bytes (> {MAX_KEY}) {key[:8].hex()}",
        )
        return False
    if len(key) != KEY_LEN[table]:
        _error(
            report,
            "bad-key-length",
            f"{table}: key {key.hex()} has {len(key)} bytes (expected {KEY_LEN[table]})",
        )
        return False
    return True


def _hemera_factory() -> Callable[[], Any] | None:
    try:
        from importers import hemera
    except ImportError:
        return None
    factory: Callable[[], Any] = hemera.Hasher
    return factory


def check_shape(
    source: RowSource,
    *,
    verify_blob_ids: bool = True,
    hemera_digest: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> ShapeReport:
    """One pass over ``source``: shape errors, per-table stats, codecs and both digests.

    ``progress(rows, bytes)`` is called every few thousand rows for long sources.
    """
    report = ShapeReport()
    kinds = source.table_kinds()
    _check_table_set(kinds, report)
    hemera_factory = _hemera_factory()
    blob_ids: _BlobVerifier | None = None
    if verify_blob_ids and hemera_factory is not None:
        from importers import hemera

        blob_ids = _BlobVerifier(hemera.hash_many, report)
        report.blob_ids_checked = True
    try:
        _pass(source, kinds, report, blob_ids, hemera_factory if hemera_digest else None, progress)
    finally:
        if blob_ids is not None:
            blob_ids.finish()
    order = sorted(range(len(report.errors)), key=report.positions.__getitem__)
    report.errors = [report.errors[i] for i in order]
    report.positions = [report.positions[i] for i in order]
    return report


def _pass(
    source: RowSource,
    kinds: dict[str, str],
    report: ShapeReport,
    blob_ids: _BlobVerifier | None,
    hemera_factory: Callable[[], Any] | None,
    progress: Callable[[int, int], None] | None,
) -> None:
    sha = hashlib.sha256()
    # The hemera archive digest is for operators comparing with the real tools' output;
    # the pipeline proves equality with SHA-256 and skips it (hashing every byte again).
    hem = hemera_factory() if hemera_factory is not None else None
    if hem is not None:
        hem.update(HEMERA_DIGEST_DOMAIN)
    total_rows = total_bytes = 0
    for ordinal, table in enumerate(DIGEST_ORDER):
        sha.update(bytes([ordinal]))
        if hem is not None:
            hem.update(bytes([ordinal]))
        if table not in kinds:
            continue
        stats = report.tables[table] = TableStats(kind=kinds[table])
        for key, value in source.rows(table):
            report.row += 1
            stats.rows += 1
            stats.key_bytes += len(key)
            stats.value_bytes += len(value)
            frame = len(key).to_bytes(8, "little") + key + len(value).to_bytes(8, "little") + value
            sha.update(frame)
            if hem is not None:
                hem.update(frame)
            _check_row(table, key, value, report, blob_ids)
            total_rows += 1
            total_bytes += len(key) + len(value)
            if progress is not None and total_rows % 4096 == 0:
                progress(total_rows, total_bytes)
    # Tables outside the five still get their statistics (they are reported, not digested).
    for table, kind in kinds.items():
        if table in TABLES:
            continue
        stats = report.tables[table] = TableStats(kind=kind)
        for key, value in source.rows(table):
            stats.rows += 1
            stats.key_bytes += len(key)
            stats.value_bytes += len(value)
    report.archive_digest_sha256 = sha.hexdigest()
    report.archive_digest_hemera = hem.hexdigest() if hem is not None else None
    if progress is not None:
        progress(total_rows, total_bytes)
