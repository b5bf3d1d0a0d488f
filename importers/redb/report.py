"""Documents about a redb file that the CLI prints: ``redb tables`` and ``redb dump``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from bbg_core.errors import UsageError
from importers.redb.dump import dump_lines
from importers.redb.layout import page_label
from importers.redb.reader import open_redb


def tables_doc(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``redb tables --json`` document (schema ``redb-tables``): header facts and every
    table's name, kind, key/value types and widths, length and root page."""
    with open_redb(path) as db:
        h = db.header
        tables = db.tables()
        reader = db.backend
    return {
        "kind": "redb-tables",
        "path": os.fspath(path),
        "header": {
            "format_version": h.format_version,
            "page_size": h.page_size,
            "god_byte": h.god_byte,
            "primary_slot": h.primary_slot,
            "selected_slot": h.selected_slot,
            "recovery_required": h.recovery_required,
            "two_phase_commit": h.two_phase_commit,
            "transaction_id": h.transaction_id,
            "file_size": h.file_size,
            "slot_versions": list(h.slot_versions),
            "region_header_pages": h.region_header_pages,
            "region_max_data_pages": h.region_max_data_pages,
            "num_regions": h.num_regions,
            "reader": reader,
        },
        "tables": [
            {
                "name": t.name,
                "kind": t.kind,
                "key_type": t.key_type,
                "value_type": t.value_type,
                "key_width": t.key_width,
                "value_width": t.value_width,
                "len": t.length,
                "root_page": t.root_page,
                "root": None if t.root_page is None else page_label(t.root_page),
            }
            for t in tables
        ],
    }


def dump(path: str | os.PathLike[str], table: str | None = None) -> Iterator[str]:
    """The canonical dump lines of the file (or of one ``table``: UsageError if it has none
    of that name, raised before the first line)."""
    with open_redb(path) as db:
        if table is not None and table not in {t.name for t in db.tables()}:
            raise UsageError(f"{path}: no table named {table!r}", path=os.fspath(path), table=table)
        yield from dump_lines(db, table)
