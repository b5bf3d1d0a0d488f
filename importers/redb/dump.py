"""The canonical JSONL dump of a redb file (the oracle format).

One line per table, ``{"table","kind","key_type","value_type","len"}``, followed by one line
per entry, ``{"table","key","value"}`` with lowercase hex; tables sorted by name in UTF-8 byte
order, entries in stored order; JSON as ``json.dumps(obj, separators=(",", ":"),
ensure_ascii=False)``.  Lines are yielded without their trailing newline.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from importers.redb.reader import RedbFile

_SEPARATORS = (",", ":")


def dump_lines(db: RedbFile, table: str | None = None) -> Iterator[str]:
    """The dump of every table, or only of ``table`` (``KeyError`` if there is none)."""
    tables = db.tables() if table is None else [db.table(table)]
    for info in tables:
        yield json.dumps(
            {
                "table": info.name,
                "kind": info.kind,
                "key_type": info.key_type,
                "value_type": info.value_type,
                "len": info.length,
            },
            separators=_SEPARATORS,
            ensure_ascii=False,
        )
        # The name is the only part that needs JSON escaping; do it once per table.
        prefix = '{"table":' + json.dumps(info.name, ensure_ascii=False) + ',"key":"'
        for key, value in db.iter_table(info.name):
            yield prefix + key.hex() + '","value":"' + value.hex() + '"}'
