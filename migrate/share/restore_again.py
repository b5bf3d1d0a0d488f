"""A rerun of ``restore`` whose destination already holds the snapshot's store.

``restore`` publishes the new store by one rename, then fsyncs the parent and reports.  A
kill after the rename leaves the complete store at DEST; the same command run again must
finish the job, not refuse the destination as "not pristine".  It does so only on proof: the
snapshot of DEST, line for line, is the snapshot being restored (every line but the second,
the snapshot's creation time, which a later snapshot of the same store writes anew).  A
restored store snapshots to exactly its snapshot on either engine when the snapshot came from
a store of the same engine; a Fjall store's snapshot restored into SQLite adds a ledger
transaction, so such a destination is refused as before.  Then what the killed run may not
have reached is done (:func:`migrate.share.publish.settle`: the parent fsynced, the records'
mark removed, its temporary directory removed) and the report says nothing was written.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from migrate.share.apply import read_line
from migrate.share.publish import settle
from migrate.store.engine import engine_of

#: The snapshot line that is not compared: the creation time (line 2).
_TIME_LINE = 2


class _Lines:
    """A binary sink hashing every line written to it except the time line."""

    def __init__(self) -> None:
        self.sha = hashlib.sha256()
        self._pending = b""
        self._number = 0

    def write(self, data: bytes) -> int:
        self._pending += data
        *whole, self._pending = self._pending.split(b"\n")
        for line in whole:
            self.add(line + b"\n")
        return len(data)

    def add(self, line: bytes) -> None:
        self._number += 1
        if self._number != _TIME_LINE:
            self.sha.update(line)

    def flush(self) -> None:
        pass

    def digest(self) -> str:
        if self._pending:
            self.add(self._pending)
            self._pending = b""
        return self.sha.hexdigest()


def already_restored(
    stream: BinaryIO, dest: Path, max_line: int, write_snapshot: Callable[[Path, Any], Any]
) -> dict[str, Any] | None:
    """The restore report when ``dest`` already holds exactly what ``stream`` restores (the
    stream is read to its end; ``write_snapshot(dest, out)`` writes the snapshot of
    ``dest``); None when it does not (the caller refuses the destination)."""
    from migrate.share.restore import summary

    engine = engine_of(dest)
    if engine is None:
        return None
    wanted = _Lines()
    first = last = b""
    number = 0
    while (raw := read_line(stream, number + 1, max_line)) is not None:
        number += 1
        wanted.add(raw)
        first, last = (raw if number == 1 else first), raw
    if number < 3:
        return None
    have = _Lines()
    try:
        write_snapshot(dest, have)
    except Exception:  # a store that cannot be read whole is not the restored one
        return None
    if have.digest() != wanted.digest():
        return None
    header, footer = json.loads(first), json.loads(last)
    settle(dest, "restore")
    return {**summary(header, footer, engine, []), "dest": str(dest), "already_restored": True}
