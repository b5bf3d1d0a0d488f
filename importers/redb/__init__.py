"""Reader for redb database files (file formats 1, 2 and 3): a C hot path with a pure-Python
twin.

``open_redb(path)`` maps the file read-only, picks the commit the real crate would read,
and verifies every page it visits against the XXH3-128 checksum its parent stores::

    with open_redb(path) as db:
        db.header                       # Header: god byte, page size, format, slots, layout
        db.tables()                     # [TableInfo], sorted by name (UTF-8 byte order)
        db.iter_table(name)             # (key, value) bytes in stored order
        db.iter_batches(name)           # the same pairs, in lists (fastest)
        db.get(name, key)               # point lookup (bytewise-ordered keys): bytes | None

The page walk, page verification and entry iteration run in C (``redb.c`` via cffi) when the
extension was built, unless ``BBG_MIGRATE_PURE=1``; the pure-Python twin gives identical
results and errors.  ``BACKEND`` says which one is active ("c" or "python");
``open_redb(path, backend=...)`` picks one for a single file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bbg_core.lazy import lazy_exports

if TYPE_CHECKING:  # the same names, for type checkers
    from importers.redb.backend import BACKEND
    from importers.redb.header import Header
    from importers.redb.reader import RedbFile, open_redb
    from importers.redb.tables import TableInfo
    from importers.redb.types import format_value

# Imported when first read: `detect` needs only the sniffing module (bbg_core.lazy).
__getattr__ = lazy_exports(
    __name__,
    {
        "backend": ("BACKEND",),
        "header": ("Header",),
        "reader": ("RedbFile", "open_redb"),
        "tables": ("TableInfo",),
        "types": ("format_value",),
    },
)

__all__ = ["BACKEND", "Header", "RedbFile", "TableInfo", "format_value", "open_redb"]
