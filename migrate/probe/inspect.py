"""``inspect``: a read-only report of a legacy cell.redb, a BBG store, or another legacy file.

A cell.redb or a BBG store (which mirrors the same five tables) is reported by
:func:`migrate.rules.report.cell_report` (every rule, in the fixtures' field names), with the
redb header facts or the store's own record beside it; a Signal log, frame log or TextArchive
by its reader's report (``importers.<format>.report``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from bbg_core.errors import SourceError, UsageError
from bbg_core.files import file_sha256, require_regular
from migrate.job import CODEC
from migrate.probe.detect import detect
from migrate.rules.report import cell_report
from migrate.rules.shape import DIGEST_ORDER


def inspect_redb(
    path: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
    content_check: str = CODEC,
) -> dict[str, Any]:
    """Inspect a legacy cell.redb (read-only; the file is never opened for writing)."""
    from migrate.rules.sources import RedbSource

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


#: Further sections of a BBG store's report, each read in the report's own snapshot: name ->
#: ``read(connection) -> section``.  The caller joins them (``migrate.api.inspect`` adds the
#: transfer's), so this module depends on no pipeline that writes.
Sections = Mapping[str, Callable[[Any], dict[str, Any]]]


def inspect_bbg(
    path: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
    content_check: str = CODEC,
    sections: Sections | None = None,
) -> dict[str, Any]:
    """Inspect a BBG store directory (read-only: nothing is created or changed, so it works on
    a read-only directory or medium; see :mod:`migrate.store.readonly`)."""
    from migrate.store.readonly import open_readonly, store_info
    from migrate.store.tables import StoreTables

    with open_readonly(path) as conn, conn.read():
        report: dict[str, Any] = {"kind": "bbg", "path": str(path), "store": store_info(conn, path)}
        report.update(
            cell_report(
                _FiveTables(StoreTables(conn)), progress=progress, content_check=content_check
            )
        )
        prepared = _neuron_imports(conn)
        if prepared:  # only a store with mapped runs: other reports stay as they were
            report["neuron_imports"] = prepared
        for name, read in (sections or {}).items():
            report[name] = read(conn)
    return report


def _neuron_imports(conn: Any) -> list[dict[str, Any]]:
    """The mapped runs of this store: each prepared, validated and inert, awaiting the
    ``neuron … import`` its receipt names (:mod:`migrate.pipeline.subject`)."""
    from migrate.store import imports

    out = []
    for iid, state, _ in imports.all_imports(conn):
        receipt = imports.receipt_of(conn, iid) if state == "active" else None
        if receipt is not None and "neuron_import" in receipt:
            out.append({"import_id": iid, **receipt["neuron_import"]})
    return out


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
    sections: Sections | None = None,
) -> dict[str, Any]:
    """Inspect ``path`` by its detected kind (or ``kind`` when given).

    ``content_check`` (``codec`` or ``none``) applies to cell stores and BBG stores, and
    ``sections`` (see :data:`Sections`) to BBG stores.
    """
    p = Path(path)
    if kind is not None and not p.is_dir():
        require_regular(p)  # a FIFO or a device would block or never end (--kind skips detect)
    found = kind or detect(p)["kind"]
    if found == "redb":
        return inspect_redb(p, progress=progress, content_check=content_check)
    if found == "bbg":
        return inspect_bbg(p, progress=progress, content_check=content_check, sections=sections)
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
