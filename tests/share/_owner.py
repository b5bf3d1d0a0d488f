"""A process that owns a temporary directory the way backup/restore do, then waits to be killed.

``python -m tests.share._owner PARENT PREFIX``: create ``PARENT/PREFIX*`` through
:func:`bbg_core.files.owned_tempdir` (locked while alive), write a partial database file into
it, print its path, and sleep until killed -- what a ``backup`` or ``restore`` killed half-way
leaves behind.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from bbg_core.files import owned_tempdir

if __name__ == "__main__":
    parent, prefix = Path(sys.argv[1]), sys.argv[2]
    with owned_tempdir(parent, prefix) as tmp:
        (tmp / "bbg.sqlite3").write_bytes(b"SQLite format 3\x00" + bytes(4080))
        print(tmp, flush=True)
        while True:
            time.sleep(60)
