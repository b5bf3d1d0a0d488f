"""A stand-in for a live owner of a keyspace (run as a script by the live-reader tests).

``python -m tests.fjall.owner DIR SECONDS`` holds ``DIR/bbg.lock`` (flock, as bbg does) and,
until SECONDS pass, repeatedly (1) appends a batch that writes the same counter to key ``a``
of partition ``p`` and key ``b`` of partition ``q`` (a journal that fills up is rotated), and
(2) "compacts" partition ``seg``: writes its segments again under new ids, swaps ``levels``
and deletes the old files, as lsm-tree's compaction does.  It writes through this project's
writer internals without their locks (it *is* the owner).
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from pathlib import Path

from migrate.store.fjall import backend, journal, levels, open_keyspace
from migrate.store.fjall.segment import SegmentWriter
from migrate.store.fjall.writer import _fsync_dir, _rewrite_atomic

SEG_ROWS = [(b"s%05d" % i, b"v%d" % i) for i in range(3000)]


def _append(root: Path, n: int) -> None:
    folder = root / "journals"
    active = max(int(x) for x in os.listdir(folder))
    path = folder / str(active)
    with open_keyspace(root) as ks:
        j = ks.journals[-1]
        seqno = max([x.seqno_max for x in ks.journals if x.seqno_max is not None] +
                    [s.meta.seqno_max for name in ks.partitions()
                     for _, s in ks.view(name).segments()]) + 1  # fmt: skip
        at = j.data_bytes
    value = b"%d" % n
    data = journal.encode_batch([("p", b"a", value, 0), ("q", b"b", value, 0)], seqno)
    if at + len(data) > 4096:  # rotate, as fjall does when a memtable fills
        path = folder / str(active + 1)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.ftruncate(fd, journal.PRE_ALLOCATED)
        os.close(fd)
        at = 0
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, data, at)
    finally:
        os.close(fd)


def _compact(root: Path) -> None:
    part = root / "partitions" / "seg"
    with open_keyspace(root) as ks:
        view = ks.view("seg")
        old = [s.id for _, s in view.segments()]
        entries = [(e.key, e.value, e.seqno) for e in ks.entries("seg")]
    new_id = max(old) + 1
    seg_path = part / "segments" / str(new_id)
    with open(seg_path, "xb") as fh:
        writer = SegmentWriter(fh, new_id, backend.default())
        for key, value, seqno in entries:
            writer.write(key, value, seqno)
        done = writer.finish()
        fh.flush()
        os.fsync(fh.fileno())
    assert done is not None
    ids: list[list[int]] = [[] for _ in range(7)]
    ids[6 if new_id % 2 else 1] = [new_id]
    _rewrite_atomic(str(part / "levels"), levels.encode(ids))
    for sid in old:
        (part / "segments" / str(sid)).unlink()
    _fsync_dir(part / "segments")


def main() -> None:
    root, seconds = Path(sys.argv[1]), float(sys.argv[2])
    lock = os.open(root / "bbg.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    print("owner: locked", flush=True)
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
        _append(root, n)
        if n % 3 == 0:
            _compact(root)
    print(f"owner: {n} batches", flush=True)


if __name__ == "__main__":
    main()
