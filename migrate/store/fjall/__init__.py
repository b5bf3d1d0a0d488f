"""The Fjall keyspace on-disk format, read and written exactly as fjall 2.11.2 and lsm-tree
2.10.4 do: the real BBG database's files (BRIEF §3).

This package knows the format only: it imports the standard library, :mod:`bbg_core`,
``xxhash``, ``lz4`` and its own C twin, nothing else of bbg-migrate.

Reading (read-only, never changes the directory, safe beside a live owner)::

    from migrate.store.fjall import open_keyspace, report

    with open_keyspace("/srv/bbg") as ks:
        for name in ks.partitions():                       # sorted names
            for key, value in ks.scan(name, prefix=b"\\x01"):  # live rows in key order
                ...
        ks.get("bbg_storage_v1", b"last_transaction")      # bytes or None
        ks.entries("application_heads")                    # newest version per key, with
                                                           # seqno and tombstone flag
        report.info(ks)                                    # journals, levels, rows, bytes
        report.check(ks)                                   # every checksum, every rule

Writing::

    from migrate.store.fjall import (append_batch, build_keyspace, flush_keyspace,
                                     open_writer, publish_segments)

    build_keyspace("/srv/new", {"data": sorted_rows})      # a new keyspace, atomically
    publish_segments("/srv/new", "data", more_sorted_rows)  # new segments, levels swapped
    append_batch("/srv/new", [("data", b"k", b"v"), ("data", b"gone", None)])  # a batch
    flush_keyspace("/srv/new")                              # journals into segments

    with open_writer("/srv/bbg", create_lock=True) as w:   # a session: locks held, opened once
        w.create_partitions(["data", "meta"])              # as fjall creates partitions
        seqno = w.append([("meta", b"k", b"v")])           # a batch (fsynced)
        w.flush()                                          # as fjall flushes its journals
        w.publish("data", sorted_rows)                     # new L0 segments
        with w.reader() as ks:                             # a snapshot of all written so far
            ...

Modules, one per on-disk structure: :mod:`.layout` (directory names, ``version``,
``config``, ``manifest``), :mod:`.journal`, :mod:`.block`, :mod:`.segment`, :mod:`.bloom`,
:mod:`.levels`; then :mod:`.merge` (sources into rows), :mod:`.reader`, :mod:`.writer`
(the bulk build and the shared writing steps), :mod:`.session` (the writer session and
our flush), :mod:`.report` (dump lines, ``info`` and ``check`` documents) and :mod:`.backend` (the C
twin or the pure-Python one).  Damage is :class:`bbg_core.errors.FjallCorrupt` (exit 3)
naming the file, the offset and the structure.
"""

from __future__ import annotations

from migrate.store.fjall.backend import BACKEND
from migrate.store.fjall.reader import Entry, Keyspace, open_keyspace
from migrate.store.fjall.session import (
           KeyspaceWriter,
           append_batch,
           flush_keyspace,
           open_writer,
           publish_segments,
)
from migrate.store.fjall.writer import build_keyspace

__all__ = ["BACKEND", "Entry", "Keyspace", "KeyspaceWriter", "append_batch", "build_keyspace",
           "flush_keyspace", "open_keyspace", "open_writer", "publish_segments"]  # fmt: skip
