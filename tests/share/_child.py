"""A writer process for the share tests (run as ``python -m tests.share._child``).

``writer STORE COUNT CHECKPOINT [NAME]``: commit COUNT writes (0: forever) in namespace
``NAME`` (default ``child``),
one per transaction, printing each new head index; with CHECKPOINT=1, after every commit run
``PRAGMA wal_checkpoint(TRUNCATE)`` on a second connection, as a writer that keeps its WAL
small would.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from migrate.store import DB_NAME, open_store
from tests.share.stores import birth, follow


def writer(store: str, count: int, checkpoint: bool, name: str = "child") -> None:
    side = sqlite3.connect(Path(store) / DB_NAME, isolation_level=None)
    try:
        with open_store(store) as st:
            w = birth(name)
            head = st.head(w.namespace)
            if head is None:
                w.apply(st)
                head = w.new_head
            n = 0
            while count == 0 or n < count:
                w = follow(head, w.namespace, f"{name}-{head.index}")
                head = w.apply(st)
                if checkpoint:
                    side.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                print(head.index, flush=True)
                n += 1
    finally:
        side.close()


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd != "writer":
        raise SystemExit(f"unknown command {cmd}")
    writer(args[0], int(args[1]), args[2] == "1", *args[3:4])
