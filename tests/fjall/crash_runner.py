"""Run one Fjall write with a SIGKILL at its N-th file operation (crash tests only).

``python -m tests.fjall.crash_runner OP DIR N``: OP is ``build`` (a new keyspace at DIR),
``publish`` (segments into DIR's partition ``p``), ``append`` (five batches into DIR),
``flush`` (DIR's journals into segments) or ``session`` (one writer session: the five
batches, a publication, a flush, a batch, a publication into a new partition -- see
:data:`SESSION`); the writer and session modules' ``os`` is replaced by one that kills the
process (as ``kill -9`` or a power cut would) just before its N-th call that changes the
file system or makes a change durable.  N = 0 kills nothing and prints how many such calls
the operation made.  Small segment, compaction and journal sizes make every kind of step
happen in a small write.  The hooks live here, in the tests, not in the product.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

OPS = frozenset({"write", "pwrite", "fsync", "ftruncate", "rename", "replace", "mkdir",
                 "makedirs", "chmod", "unlink", "fdopen"})  # fmt: skip


class _KillingOs:
    def __init__(self, target: int) -> None:
        self.target, self.seen = target, 0

    def count(self) -> None:
        self.seen += 1
        if self.seen == self.target:
            os.kill(os.getpid(), signal.SIGKILL)

    def __getattr__(self, name: str) -> Any:
        real = getattr(os, name)
        if name == "open":

            def opener(path: Any, flags: int, *args: Any, **kw: Any) -> int:
                if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
                    self.count()
                return os.open(path, flags, *args, **kw)

            return opener
        if name in OPS:

            def op(*args: Any, **kw: Any) -> Any:
                self.count()
                return real(*args, **kw)

            return op
        return real


def _noise(seed: bytes, n: int) -> bytes:
    out = b""
    while len(out) < n:
        out += hashlib.sha256(seed + len(out).to_bytes(4, "big")).digest()
    return out[:n]


def rows(tag: bytes, n: int) -> list[tuple[bytes, bytes]]:
    """Rows whose values do not compress away (segment sizes count compressed bytes)."""
    return [(b"k%05d" % i, tag + _noise(tag + b"%d" % i, i % 300)) for i in range(n)]


BATCHES = [[("p", b"k%05d" % (7 * i + j), _noise(b"batch%d" % i, 400)) for j in range(3)] + [
    ("q", b"n%d" % i, None if i % 2 else b"v")] for i in range(5)]  # fmt: skip

#: The session's steps after the five batches (each one a state a reader may see).
SESSION = ["publish-p-refused", "flush", "append", "publish-p", "publish-fresh"]


def run_session(session: Any, step: str) -> None:
    """One step of the session run (the batches are steps too: ``BATCHES``)."""
    from bbg_core.errors import FjallRefused

    if step == "publish-p-refused":  # p has journal-only rows: refused, nothing written
        try:
            session.publish("p", rows(b"pub", 300)[::4])
        except FjallRefused:
            return
        raise AssertionError("publish into a partition with journal rows went through")
    if step == "flush":
        session.flush()
    elif step == "append":
        session.append([("q", b"n-after", b"flushed"), ("p", b"k00001", None)])
    elif step == "publish-p":
        session.flush()  # the batch just appended lives in the journal: flush it first
        session.publish("p", rows(b"pub", 900)[::4])
    else:
        session.publish("fresh", rows(b"f", 60))


def main() -> None:
    op, target, n = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    from migrate.store.fjall import journal, layout, segment, session, writer

    killer = _KillingOs(n)
    writer.os = killer  # type: ignore[attr-defined]
    session.os = killer  # type: ignore[attr-defined]

    class _File:  # segment bytes go through a buffered file: count its writes too
        def __init__(self, raw: Any) -> None:
            self.raw = raw

        def write(self, data: bytes) -> int:
            killer.count()
            result: int = self.raw.write(data)
            return result

        def __getattr__(self, name: str) -> Any:
            return getattr(self.raw, name)

    real_init = segment.SegmentWriter.__init__

    def init(self: Any, out: Any, *args: Any, **kw: Any) -> None:
        real_init(self, _File(out), *args, **kw)

    segment.SegmentWriter.__init__ = init  # type: ignore[method-assign]
    writer.INGEST_TARGET = 48 << 10
    layout.PartitionConfig.compaction_target_size = property(lambda self: 32 << 10)  # type: ignore[assignment,method-assign]
    journal.PRE_ALLOCATED = 2048
    if op == "build":
        writer.build_keyspace(target, {"p": rows(b"a", 1500), "q": rows(b"q", 40), "e": []})
    elif op == "publish":
        session.publish_segments(target, "p", rows(b"new", 900)[::3])
    elif op == "append":
        for batch in BATCHES:
            session.append_batch(target, batch)
    elif op == "flush":
        session.flush_keyspace(target)
    else:
        with session.open_writer(target) as handle:
            for batch in BATCHES:
                handle.append(batch)
            for step in SESSION:
                run_session(handle, step)
    print(killer.seen, flush=True)


if __name__ == "__main__":
    main()
