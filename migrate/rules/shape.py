"""The shape rules of a legacy cell store, checked in one streaming pass.

A cell store holds exactly five ``&[u8] -> &[u8]`` tables, each key and value of a fixed length
(content values: codec byte and payload). This module checks what can be seen row by row -- the
table set, key and value lengths (bbg's ``validate_record`` and ``migrate_redb`` page reader)
and, in content-check mode ``codec``, what cybergraph's codec-checked import checks: codec
bytes, Blob and Data content ids and the children of Data pairs
(:mod:`migrate.rules.content_ids`) -- and, in the same pass, gathers per-table statistics and
the archive digest. The cross-table "links" (history, heads, receipts) are checked by
:mod:`migrate.rules.links`.

Everything here works over a :class:`RowSource`: a cell.redb read by the redb reader, a
staging area, or a BBG store all look the same to it.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Protocol

from bbg_core.errors import UsageError
from migrate.job import CODEC, MODES
from migrate.progress import finishing
from migrate.rules.content_ids import ContentIds, DataStats
from migrate.store.codec import ARCHIVE_ORDER, MAX_PAYLOAD
from migrate.store.codec import MAX_KEY_LEN as MAX_KEY

# Digest order: the position is the ordinal byte written before each table's rows.
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
CONTENT = "application_content"
CONTENT_KEY_LEN = KEY_LEN[CONTENT]
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
        """The rows of ``table`` in ascending key order (multimap: (key, value) pairs).
        A source may also offer ``row_batches(table)``: the same rows in lists
        (:func:`row_batches`)."""
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
    blob_ids_checked: bool = False
    data_ids_checked: bool = False
    content_check: str = CODEC
    data: DataStats = field(default_factory=DataStats)
    archive_digest_sha256: str = ""
    # Row position of each error (parallel to ``errors``), so errors found on the verifier
    # thread are put back in row order; and its phase (parallel too): errors are listed by
    # phase -- 0 the table set and record shapes, 1 content decoding and ids, 2 missing Data
    # children -- then by position.
    positions: list[float] = field(default_factory=list)
    phases: list[int] = field(default_factory=list)
    row: int = -1
    archive_digest_hemera: str | None = None

    @property
    def blob_id_mismatches(self) -> int:
        return self.data.blob_id_mismatches


#: Phases of the error order (the reference checker's: shapes, then content, then children).
SHAPE, CONTENT_PHASE, CHILDREN = 0, 1, 2


def _error(
    report: ShapeReport,
    code: str,
    detail: str,
    position: float | None = None,
    phase: int = SHAPE,
) -> None:
    report.errors.append({"code": code, "detail": detail})
    report.positions.append(report.row if position is None else position)
    report.phases.append(phase)


def _check_table_set(kinds: dict[str, str], report: ShapeReport) -> None:
    # bbg's migrate_redb refuses any multimap table first, then any table outside the five.
    for name in sorted(kinds, key=lambda n: n.encode()):
        if name not in TABLES and kinds[name] == "multimap":
            _error(report, "multimap-table", f'multimap table "{name}"')
        elif name not in TABLES:
            _error(
                report,
                "unexpected-table",
                f'table "{name}" is not one of the five application tables',
            )
    for name in DIGEST_ORDER:
        if name not in kinds:
            _error(report, "missing-table", f'table "{name}" absent')
        elif kinds[name] == "multimap":
            _error(report, "multimap-table", f'multimap table "{name}"')


def _check_row(
    table: str,
    key: bytes,
    value: bytes,
    report: ShapeReport,
    ids: ContentIds | None,
) -> None:
    key_ok = _check_key(table, key, report)
    want = VALUE_LEN.get(table)
    if want is not None:
        if len(value) != want:
            _error(
                report,
                "bad-value-length",
                f"{table}: key {key.hex()} value of {len(value)} bytes, expected {want}",
            )
        return
    # application_content: codec byte + payload.  bbg's raw converter bounds the value only
    # (16 MiB + 1); decoding it (codec byte, ids) is the codec-checked import's rule.
    codec_mode = report.content_check == CODEC
    if len(value) - 1 > MAX_PAYLOAD:
        _error(
            report,
            "bad-value-length",
            f"content {key.hex()}: value of {len(value)} bytes (codec byte + payload <= 16 MiB)",
        )
        return
    if not value:
        if codec_mode:
            _error(report, "bad-value-length", f"content {key.hex()}: empty value",
                   phase=CONTENT_PHASE)  # fmt: skip
        return
    # Codecs are counted even for a row whose key is malformed (it is still a content row);
    # its id cannot be checked.
    codec = value[0]
    if codec == CODEC_DATA:
        report.codecs["data"] += 1
        if key_ok:
            report.data.count(value[1:], key)
    elif codec == CODEC_BLOB:
        report.codecs["blob"] += 1
    else:
        report.codecs["other"] += 1
        if codec_mode:
            _error(report, "unknown-codec", f"content {key.hex()}: codec byte {codec}",
                   phase=CONTENT_PHASE)  # fmt: skip
        return
    if key_ok and ids is not None:
        ids.add(report.row, key, codec, value[1:])


def _check_content(
    batch: list[tuple[bytes, bytes]], report: ShapeReport, ids: ContentIds | None
) -> None:
    """:func:`_check_row` over rows of ``application_content``; a Blob row of the right
    shape (the usual row) is counted and queued for its id here, without the calls."""
    row = report.row
    blobs = size = 0
    items: list[tuple[int, bytes, int, bytes]] = []  # queued for their ids, in row order
    for key, value in batch:
        row += 1
        n = len(value)
        if len(key) == CONTENT_KEY_LEN and 0 < n <= MAX_PAYLOAD + 1 and value[0] == 1:
            blobs += 1
            items.append((row, key, CODEC_BLOB, value[1:]))
            size += n - 1
            continue
        if ids is not None and items:
            ids.add_many(items, size)
            items, size = [], 0
        report.row = row
        _check_row(CONTENT, key, value, report, ids)
    if ids is not None and items:
        ids.add_many(items, size)
    report.row = row
    report.codecs["blob"] += blobs


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
            f"{table}: key of {len(key)} bytes, expected {KEY_LEN[table]}",
        )
        return False
    return True


def _hemera_factory() -> Callable[[], Any] | None:
    try:
        from hashing import hemera
    except ImportError:
        return None
    factory: Callable[[], Any] = hemera.Hasher
    return factory


def check_shape(
    source: RowSource,
    *,
    content_check: str = CODEC,
    verify_blob_ids: bool = True,
    hemera_digest: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> ShapeReport:
    """One pass over ``source``: shape errors, per-table stats, codecs and both digests.

    ``content_check``: ``codec`` (cybergraph's codec-checked import: codec bytes, Blob and
    Data ids, Data pair children) or ``none`` (bbg's raw converter: content is bytes).
    ``verify_blob_ids=False`` skips the content-id checks (Blob and Data) even in codec mode,
    for rows already proven equal to verified ones (equal archive digests).
    ``progress(rows, bytes)`` is called every few thousand rows for long sources.
    """
    if content_check not in MODES:
        raise UsageError(f"--content-check must be one of {', '.join(MODES)}")
    report = ShapeReport(content_check=content_check)
    kinds = source.table_kinds()
    _check_table_set(kinds, report)
    hemera_factory = _hemera_factory()
    ids: ContentIds | None = None
    if content_check == CODEC and verify_blob_ids and hemera_factory is not None:
        lookup = getattr(source, "lookup", None) or getattr(source, "get", None)
        ids = ContentIds(
            lambda code, detail, position: _error(
                report, code, detail, position,
                CHILDREN if code == "missing-content" else CONTENT_PHASE,
            ),
            report.data,
            lookup=lookup,
            content_rows=lambda: source.rows("application_content"),
            absent=getattr(source, "absent", None),
        )
        report.blob_ids_checked = report.data_ids_checked = True
    try:
        _pass(source, kinds, report, ids, hemera_factory if hemera_digest else None, progress)
    finally:
        if ids is not None:
            with finishing(progress, "content ids"):
                ids.finish()
    order = sorted(range(len(report.errors)), key=lambda i: (report.phases[i], report.positions[i]))
    report.errors = [report.errors[i] for i in order]
    report.positions = [report.positions[i] for i in order]
    report.phases = [report.phases[i] for i in order]
    return report


#: Rows per list when a source offers no batches of its own, and the key+value bytes after
#: which such a list ends early (a stream of 3 MiB rows must not be held 512 at a time).
BATCH_ROWS = 512
BATCH_BYTES = 1 << 20
#: A list holding more key+value bytes than this is hashed row by row, not joined first.
JOIN_BYTES = 4 << 20
_U64 = struct.Struct("<Q")


def _cut(rows: Iterator[tuple[bytes, bytes]]) -> Iterator[list[tuple[bytes, bytes]]]:
    batch: list[tuple[bytes, bytes]] = []
    size = 0
    for row in rows:
        batch.append(row)
        size += len(row[0]) + len(row[1])
        if len(batch) >= BATCH_ROWS or size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def row_batches(source: RowSource, table: str) -> Iterator[list[tuple[bytes, bytes]]]:
    """The rows of ``table`` in lists: the source's own (``row_batches``, e.g. one redb
    reader call each) when it has them, else ``rows`` cut into lists of at most
    ``BATCH_ROWS`` rows, ending early once they hold ``BATCH_BYTES``."""
    own = getattr(source, "row_batches", None)
    if own is not None:
        batches: Iterator[list[tuple[bytes, bytes]]] = own(table)
        return batches
    return _cut(iter(source.rows(table)))


def _pass(
    source: RowSource,
    kinds: dict[str, str],
    report: ShapeReport,
    ids: ContentIds | None,
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
        key_len, value_len = KEY_LEN[table], VALUE_LEN.get(table)
        for batch in row_batches(source, table):
            n = len(batch)
            keys = [row[0] for row in batch]
            values = [row[1] for row in batch]
            key_lens = list(map(len, keys))
            value_lens = list(map(len, values))
            key_bytes, value_bytes = sum(key_lens), sum(value_lens)
            stats.rows += n
            stats.key_bytes += key_bytes
            stats.value_bytes += value_bytes
            # Each row framed as u64 LE len(key) ‖ key ‖ u64 LE len(value) ‖ value, the batch
            # hashed at once (the same stream as row by row).
            framed = zip(map(_U64.pack, key_lens), keys, map(_U64.pack, value_lens), values,
                         strict=True)  # fmt: skip
            if key_bytes + value_bytes <= JOIN_BYTES:
                frames = b"".join(chain.from_iterable(framed))
                sha.update(frames)
                if hem is not None:
                    hem.update(frames)
            else:  # big rows: no joined copy of the list
                for part in chain.from_iterable(framed):
                    sha.update(part)
                    if hem is not None:
                        hem.update(part)
            if value_len is not None and key_lens.count(key_len) == n \
                    and value_lens.count(value_len) == n:  # fmt: skip
                report.row += n  # every row of the right shape: nothing to say of any
            elif value_len is None:
                _check_content(batch, report, ids)
            else:
                for key, value in batch:
                    report.row += 1
                    _check_row(table, key, value, report, ids)
            before = total_rows
            total_rows += n
            total_bytes += key_bytes + value_bytes
            if progress is not None and total_rows // 4096 != before // 4096:
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
