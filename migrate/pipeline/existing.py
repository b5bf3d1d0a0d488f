"""``run`` into a BBG database that already holds history: one pass, no staging.

The staged path reads the source to check it, again to stage it into the records, reads the
staging to validate it and again to publish it in segments: four passes.  For a run (no
``--pages``) of a cell.redb, a legacy log or a TextArchive into an existing Fjall store --
a mapped run too: its origins staged in bbg's transfer form in the same activation
(:mod:`.subject`) --, ``run`` instead:

1. holds the keyspace's writer session (``bbg.lock``) from the start, so nothing else
   writes it until the end, and writes nothing in the store yet;
2. makes the one checking pass of :func:`.fresh.source_pass` (a cell.redb's, or a log's or
   archive's: :mod:`.fresh_legacy`), which also writes each table's rows as new segments
   beside the store and merges them with the store's rows (:mod:`migrate.store.keyspace_aside`:
   what is new, what conflicts); refuses exactly as the preflight would, the segments
   removed, the store byte for byte as it was;
3. opens the store's records and admits the import as the staged path's seal does (a
   mapped run's subject and origins included); anything
   the staged path would treat differently -- a known import, a namespace the store holds
   already, a conflict, a row holding other bytes, an activation small enough for one batch
   -- is left to it (the segments removed, the store untouched, the preflight reused); then
   a log's rows that fail the validate stage's checks are refused as it refuses them (the
   store untouched);
4. takes the import's guard ``<store>.bbg-importing`` (op ``activate``; bbg refuses the
   store while it exists) with the activation plan in it, publishes the segments (a level
   update per partition), then writes in one transaction bbg's status put and markers (one
   journal batch) and the records -- seal, journal, receipt -- exactly as the staged path's
   activation in segments does (:func:`.stages.activate_published`), and removes the guard.

A crash before the guard leaves the store as it was (a killed run's segment folder is swept
by the next run); after it, the store is guarded, and only the rerun of the same import --
the guard names it -- finishes it, with the plan the guard keeps (so the receipt is the
first run's): it publishes again (the same bytes at a newer seqno) and activates.  A crash
after the records commit leaves an active import whose rerun, on the staged path, returns
the receipt and removes the guard.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bbg_core.errors import MigrateError
from fences import generations
from fences.seal import Seal
from migrate.job import Job
from migrate.pipeline import fresh, fresh_legacy, gate, stages
from migrate.pipeline.preflight import Preflight, import_of
from migrate.progress import Observer, finishing
from migrate.store import bbgdb, guard, imports, layout
from migrate.store.codec import ARCHIVE_ORDER
from migrate.store.connection import Connection
from migrate.store.engine import FJALL, engine_for, engine_of
from migrate.store.fjall.session import KeyspaceWriter
from migrate.store.graph import head as live_head
from migrate.store.keyspace_aside import AsideSegments
from migrate.store.keyspace_build import KeyspaceLoader
from migrate.store.keyspace_store import open_fjall_store, open_fjall_view, writer_session
from migrate.store.layout import resolve_store_dir
from migrate.store.runlock import run_lock

Progress = Callable[[int, int], None]


def destination(job: Job, kind: str, max_pages: int | None) -> Path | None:
    """The store directory when this ``run`` may take the single pass into an existing BBG
    database, else None (the staged path)."""
    if max_pages is not None or kind not in fresh.FRESH_KINDS:
        return None
    try:
        directory = resolve_store_dir(job.store, create=True)
        if engine_of(directory) != FJALL or engine_for(directory, job.engine) != FJALL:
            return None
    except MigrateError:
        return None  # the staged path raises it in its order
    if not os.path.lexists(directory / bbgdb.LOCK_NAME):
        return None
    return directory


def _open_to_single_pass(directory: Path, iid: str) -> bool:
    """True when the single pass may go on: the store's records do not know ``iid`` and no
    guard is there, or only this path's own for ``iid`` (an interrupted run of it, whose
    plan the guard keeps).  Anything else -- an import in progress or active, another
    guard -- is the staged path's to continue or refuse."""
    owner = guard.read(directory)
    if owner is not None and not (owner.get("import_id") == iid
                                  and owner.get("op") == guard.ACTIVATE
                                  and isinstance(owner.get("plan"), dict)):  # fmt: skip
        return False
    with open_fjall_view(directory) as view:
        return imports.import_state(view, iid) is None


def run_existing(
    job: Job, kind: str, held: Seal, directory: Path, progress: Progress | None,
    observer: Observer | None = None,
) -> tuple[Preflight | None, dict[str, Any] | None]:
    """The single pass (see the module docstring).  Returns the preflight (None when the
    pass was not made) and the receipt (None: continue on the staged path with it)."""
    iid = import_of(job, kind, held.fingerprint)[1]
    try:
        if not _open_to_single_pass(directory, iid):
            return None, None
        session = writer_session(directory, 0.0)
    except MigrateError:
        return None, None  # busy, refused, unreadable: the staged path says so in its order
    try:
        with session.reader() as snapshot:
            if not set(ARCHIVE_ORDER) <= set(snapshot.partitions()):
                session.close()  # the staged path creates a missing partition as it publishes
                return None, None
            aside = AsideSegments(directory, session, snapshot)
            try:
                loader = KeyspaceLoader(aside, job.bounds.page_rows, job.bounds.page_bytes)
                # One lookup thread in the links check: with a second (and its branch cache)
                # this path's peak RSS at 10 GB was 145.3 MB against 127.2 MB (goal 150).
                loaded = fresh.source_pass(job, kind, held, loader, None, progress,
                                           lookup_threads=1)  # fmt: skip
            except BaseException:
                aside.discard()
                raise
    except BaseException:
        session.close()
        raise
    return loaded.pre, _publish(job, loaded, held, directory, session, aside, loader, observer)


def _bulk(pre: Preflight) -> bool:
    """The staged path publishes in segments only an activation too big for one batch."""
    return pre.rows > stages.BATCH_ROWS or pre.nbytes > stages.BATCH_BYTES


def _publish(job: Job, loaded: fresh_legacy.Loaded, held: Seal, directory: Path,
             session: KeyspaceWriter, aside: AsideSegments, loader: KeyspaceLoader,
             observer: Observer | None) -> dict[str, Any] | None:  # fmt: skip
    """After a valid pass: admit, guard, publish, activate; None (nothing written) when the
    staged path is to go on.  Owns ``session`` and ``aside``."""
    pre = loaded.pre
    iid = pre.import_id
    with ExitStack() as stack:
        stack.callback(aside.discard)
        if not _bulk(pre) or aside.conflict is not None:
            session.close()
            return None
        try:  # the handle takes the session over (and closes it when refused)
            store = open_fjall_store(directory, create=False,
                                     reader_generation=generations.BUILD_GENERATION,
                                     maintenance=False, hash_suite=layout.DEFAULT_HASH_SUITE,
                                     writer=session)  # fmt: skip
        except MigrateError:
            return None  # the staged path refuses it so, after the same preflight
        stack.callback(store.close)
        stack.enter_context(run_lock(store.directory))
        owner = guard.read(directory)
        resumed = owner.get("plan") if owner is not None else None
        try:
            if imports.import_state(store, iid) is not None:
                return None
            # Resumed: what the store holds of the import's namespaces is its own (a crash
            # after the marker batch leaves a mapped run's origins reserved by its transfer).
            gate.admit(store, directory, job, pre, planned=resumed is not None)
        except MigrateError:
            return None  # the staged path's seal refuses it, after the same preflight
        if resumed is None and any(live_head(store, bytes.fromhex(ns)) is not None
                                   for ns in pre.namespaces):  # fmt: skip
            return None  # a namespace there already: the staged path's pins and checks
        loaded.validate(directory)  # a log's rows: the validate stage's refusal, its order
        plan = resumed if resumed is not None else {
            "inserted": aside.new_rows, "rows": pre.rows, "bytes": pre.nbytes}  # fmt: skip
        activated = fresh.checked(observer, pre, loader)
        hook = Connection.commit_hook  # fault injection, None normally
        with finishing(activated, "publish"):
            aside.wait()
            if hook is not None:
                hook("after")  # the segments written and fsynced aside; nothing in the store yet
            # Bytes, not just mtime (a flip may keep it): hashed since the rows were read.
            held.check_unchanged(full=True, recheck=loaded.recheck)
            guard.take(directory, iid, guard.ACTIVATE, plan)
            aside.publish(hook)
        receipt = stages.activate_published(store, job, pre, held, loader.rows, loaded.cursor,
                                            plan)  # fmt: skip
        if activated is not None:
            activated(sum(loader.rows.values()), pre.nbytes)
        guard.drop(directory, iid)
        return receipt
    raise AssertionError("unreachable")  # pragma: no cover
