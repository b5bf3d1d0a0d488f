"""Reader for redb database files (file formats 1, 2 and 3), pure Python.

``open_redb(path)`` maps the file read-only, picks the commit the real crate would read,
and verifies every page it visits against the XXH3-128 checksum its parent stores::

    with open_redb(path) as db:
        db.header                       # Header: god byte, page size, format, slots, layout
        db.tables()                     # [TableInfo], sorted by name (UTF-8 byte order)
        db.iter_table(name)             # (key, value) bytes in stored order

``BACKEND`` says which implementation is active ("python" here; the C path sets "c").
"""

from importers.redb.header import Header
from importers.redb.reader import RedbFile, open_redb
from importers.redb.tables import TableInfo
from importers.redb.types import format_value

BACKEND = "python"

__all__ = ["BACKEND", "Header", "RedbFile", "TableInfo", "format_value", "open_redb"]
