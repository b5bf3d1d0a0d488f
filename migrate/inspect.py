"""``inspect``: a read-only report of a legacy cell.redb, a BBG store, or another legacy file.

The report for a cell store (or a BBG store, which mirrors the same five tables) uses the
field names of the fixtures' ``*.expected.json``: ``tables`` (rows, key/value bytes),
``namespaces`` (head index/commit, history rows), ``archive_digest_sha256`` /
``archive_digest_hemera`` (§6), ``content_codecs``, ``data_id_scheme``,
``data_rows_with_id_mismatch``, ``data_content_ids``, ``valid`` and ``errors`` as
``{code, detail}`` with exactly the codes of BRIEF §2.4.

Two views of the same store:

* the **conversion** view (``conversion_valid``, which is ``valid`` and decides the exit
  code): bbg's conversion rules, plus in content-check mode ``codec`` (the default) the content
  rules of cybergraph's codec-checked import; mode ``none`` is bbg's raw converter;
* the **semantic** view (``semantic_errors`` as ``{code, namespace, detail}``, and
  ``origins``: per namespace, whether it could be a mapped origin): the rules neuron's
  semantic import applies to an origin named in a mapping (today the birth rule).  They never
  change ``valid``; a mapped run refuses an origin that breaks them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from itertools import groupby
from pathlib import Path
from typing import Any

from bbg_core.errors import SourceError, UsageError
from bbg_core.files import file_sha256, require_regular
from migrate.cell_rules import DIGEST_ORDER, RowSource, check_shape
from migrate.content_ids import CODEC
from migrate.detect import detect
from migrate.links import iter_link_errors
from migrate.store.codec import HEADS, HISTORY, Head

_LINKED_TABLES = ("application_content", "application_requests", HISTORY, HEADS)
# A report lists at most this many errors (the count is always exact).
MAX_LISTED_ERRORS = 1000


def namespaces(source: RowSource) -> dict[str, dict[str, Any]]:
    """Per namespace in ``application_heads``: head index, head commit, history rows."""
    counts: dict[bytes, int] = {}
    history: Iterator[tuple[bytes, bytes]] = iter(source.rows(HISTORY))
    for ns, group in groupby(history, key=lambda kv: kv[0][:32]):
        counts[ns] = sum(1 for _ in group)
    out: dict[str, dict[str, Any]] = {}
    for key, value in source.rows(HEADS):
        try:
            head = Head.decode(value)
        except ValueError:
            continue  # reported by the shape check as bad-value-length
        out[key.hex()] = {
            "head_index": head.index,
            "head_commit": head.commit.hex(),
            "history_rows": counts.get(key, 0),
        }
    return out


def cell_report(
    source: RowSource,
    *,
    progress: Callable[[int, int], None] | None = None,
    hemera_digest: bool = True,
    content_check: str = CODEC,
) -> dict[str, Any]:
    """The five-table part of an inspect report (shared by cell.redb and BBG stores)."""
    shape = check_shape(
        source, progress=progress, hemera_digest=hemera_digest, content_check=content_check
    )
    errors = list(shape.errors)
    semantic: list[dict[str, str]] = []
    # Links need content, requests, history and heads as plain tables (claims play no part).
    kinds = source.table_kinds()
    table_set_ok = all(kinds.get(t) == "table" for t in _LINKED_TABLES)
    if table_set_ok:
        errors.extend(iter_link_errors(source, report_malformed=False, semantic=semantic))
    found = namespaces(source) if table_set_ok else {}
    refused = {e["namespace"] for e in semantic}
    checked = shape.data_ids_checked
    report: dict[str, Any] = {
        "content_check": shape.content_check,
        "tables": {name: stats.to_json() for name, stats in sorted(shape.tables.items())},
        "content_codecs": shape.codecs,
        "blob_rows_with_id_mismatch": shape.blob_id_mismatches if checked else None,
        "blob_ids_checked": shape.blob_ids_checked,
        "data_ids_checked": checked,
        "data_id_scheme": shape.data.scheme,
        "data_rows_with_id_mismatch": shape.data.id_mismatches if checked else None,
        "data_content_ids": shape.data.keys,
        "namespaces": found,
        "origins": {ns: {"mappable": ns not in refused} for ns in found},
        "archive_digest_sha256": shape.archive_digest_sha256,
        "archive_digest_hemera": shape.archive_digest_hemera,
        "conversion_valid": not errors,
        "valid": not errors,
        "error_count": len(errors),
        "errors": errors[:MAX_LISTED_ERRORS],
        "semantic_errors": semantic[:MAX_LISTED_ERRORS],
    }
    return report


def inspect_redb(
    path: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
    content_check: str = CODEC,
) -> dict[str, Any]:
    """Inspect a legacy cell.redb (read-only; the file is never opened for writing)."""
    from migrate.sources import RedbSource

    with RedbSource(path) as src:
        h = src.header
        report: dict[str, Any] = {
            "kind": "redb",
            "path": str(path),
            "size_bytes": path.stat().st_size,
            "sha256": file_sha256(path),
            "redb_header": {
                "magic_ok": True,
                "god_byte": h.god_byte,
                "primary_slot": h.primary_slot,
                "recovery_required": h.recovery_required,
                "two_phase_commit": h.two_phase_commit,
                "page_size": h.page_size,
                "format_version": h.format_version,
                "slot_versions": list(h.slot_versions),
                "transaction_id": h.transaction_id,
            },
        }
        report.update(cell_report(src, progress=progress, content_check=content_check))
    return report


def inspect_bbg(
    path: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
    content_check: str = CODEC,
) -> dict[str, Any]:
    """Inspect a BBG store directory (read-only: nothing is created or changed, so it works on
    a read-only directory or medium; see :mod:`migrate.store.readonly`)."""
    from migrate.store.readonly import open_readonly, store_info
    from migrate.store.tables import StoreTables
    from migrate.transfer.report import section as transfer_section

    with open_readonly(path) as conn, conn.read():
        report: dict[str, Any] = {"kind": "bbg", "path": str(path), "store": store_info(conn, path)}
        report.update(
            cell_report(
                _FiveTables(StoreTables(conn)), progress=progress, content_check=content_check
            )
        )
        # A sealed source (manifest, target, progress) and transfers into this store.
        report["transfer"] = transfer_section(conn)
    return report


class _FiveTables:
    """A store's table view as a RowSource: the five tables exist by construction."""

    def __init__(self, tables: Any) -> None:
        self._tables = tables

    def table_kinds(self) -> dict[str, str]:
        return {name: "table" for name in DIGEST_ORDER}

    def rows(self, table: str) -> Iterator[tuple[bytes, bytes]]:
        rows: Iterator[tuple[bytes, bytes]] = self._tables.rows(table)
        return rows

    def get(self, table: str, key: bytes) -> bytes | None:
        value: bytes | None = self._tables.get(table, key)
        return value


def inspect_path(
    path: str | os.PathLike[str],
    *,
    kind: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    content_check: str = CODEC,
) -> dict[str, Any]:
    """Inspect ``path`` by its detected kind (or ``kind`` when given).

    ``content_check`` (``codec`` or ``none``) applies to cell stores and BBG stores.
    """
    p = Path(path)
    if kind is not None and not p.is_dir():
        require_regular(p)  # a FIFO or a device would block or never end (--kind skips detect)
    found = kind or detect(p)["kind"]
    if found == "redb":
        return inspect_redb(p, progress=progress, content_check=content_check)
    if found == "bbg":
        return inspect_bbg(p, progress=progress, content_check=content_check)
    if found == "signal-log":
        from importers.signal_log import inspect_signal_log

        return inspect_signal_log(p)
    if found == "bbg-frame-log":
        from importers.frame_log import inspect_frame_log

        return inspect_frame_log(p)
    if found == "text-archive":
        from importers.text_archive import inspect_text_archive

        return inspect_text_archive(p)
    if p.exists() and p.is_file() and p.stat().st_size == 0:
        raise UsageError(
            f"{p}: the file is empty; name its kind with --kind signal-log, --kind "
            "bbg-frame-log or --kind text-archive",
            path=str(p),
        )
    raise SourceError(
        f"{p}: not a redb file, BBG store, signal log, frame log or text archive (judged by "
        "content)",
        path=str(p),
    )
