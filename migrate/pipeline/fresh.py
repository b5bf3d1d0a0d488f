"""``run`` into a new or empty destination: one read of the source, no copy.

The staged path (:mod:`migrate.pipeline.stages`) reads the source to check it, again to stage
it, reads the staging to validate it and copies it into the five tables at activation: four
passes over the data.  When the destination does not exist yet (or is an empty directory),
there is nothing to keep apart from the import, so ``run`` instead:

1. builds the store beside the destination (:mod:`migrate.store.build`): the one checking
   pass over the source (shape, content ids, archive digest; then the links) also loads each
   table's rows into the build's five tables as they pass, page by page;
2. refuses exactly as the preflight would (same report, same first error, exit 3) and removes
   the build, so an invalid source leaves the destination as it was;
3. records seal, journal and receipt in one transaction (:func:`stages.activate_built`), the
   source re-hashed first as activation does;
4. publishes the build with one rename onto the destination.

The receipt is the staged path's, byte for byte, and an exact rerun (which finds the import
active) returns it.  A crash anywhere leaves no store or the complete one; a rerun builds
again.  A legacy log or TextArchive takes the same path, its preflight's row pass loading
the build (:mod:`.fresh_legacy`).  Anything else -- a mapping, ``--pages``, an existing
store, a destination that filled meanwhile -- takes the staged path.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Any

from bbg_core.errors import MigrateError, StoreRefused
from fences.seal import BackgroundDigest, Seal
from migrate.job import Job
from migrate.pipeline import fresh_legacy, gate, stages
from migrate.pipeline.legacy_scan import KINDS as LEGACY_KINDS
from migrate.pipeline.preflight import Preflight, import_of, judge, mapped_refusals, redb_report
from migrate.progress import Observer, finishing, phase
from migrate.rules.kept_keys import KeptKeys, bound_for
from migrate.rules.link_ahead import Ahead
from migrate.rules.sources import RedbSource, TableAbsent
from migrate.store import guard, imports, keyspace_build
from migrate.store.build import Loader, can_build, open_build
from migrate.store.codec import CONTENT, HISTORY, ID_LEN, ORDINAL
from migrate.store.connection import Connection
from migrate.store.engine import FJALL, engine_for
from migrate.store.keyspace_build import KeyspaceLoader
from migrate.store.layout import DB_NAME, resolve_store_dir
from migrate.store.opening import open_store
from migrate.store.tables import StoreTables

Progress = Callable[[int, int], None]
#: Sources built aside: a cell.redb, and the legacy logs and archives (:mod:`.fresh_legacy`).
FRESH_KINDS = ("redb", *LEGACY_KINDS)


def destination(job: Job, kind: str, max_pages: int | None, held: Seal) -> Path | None:
    """The destination directory when this ``run`` may build aside, else None.

    A BBG database (the Fjall engine) is also built aside again when this import's own
    guard is there: a conversion of it was interrupted before its guard was removed."""
    if max_pages is not None or kind not in FRESH_KINDS or job.mapping is not None:
        return None
    try:
        directory = resolve_store_dir(job.store, create=True)
        fjall = engine_for(directory, job.engine) == FJALL
    except MigrateError:
        return None  # the staged path raises it in its order
    if not fjall:
        return directory if can_build(directory) else None
    if guard.read(directory) is not None and guard.owned_by(
        directory, import_of(job, kind, held.fingerprint)[1], guard.CONVERT
    ):
        return directory
    return directory if keyspace_build.can_build(directory) else None


class _Tee:
    """The source as the checks read it, each table's first full read also loaded.

    The row-shape pass reads every table once (loading it) and looks Data children up in the
    source; the link checks that follow look commits and request heads up (``get``) in the
    built store, whose rows are the source's, loaded and counted: an SQLite point lookup
    costs a fraction of a verified descent of the redb tree, and it checks what is published.
    The content ids that pass are kept (:class:`~migrate.rules.kept_keys.KeptKeys`, bounded):
    the links check asks ``contains`` (or ``missing``, a list at a time) for every history
    commit, answered from them, and from ``get`` for an id not kept.
    """

    def __init__(self, source: RedbSource, loader: Loader | KeyspaceLoader, db: Path | None,
                 lookup_threads: int = 2) -> None:  # fmt: skip
        self._src = source
        self._lookup_threads = lookup_threads
        self._loader = loader
        self._db = db
        self._conn: Connection | None = None
        self._teed: set[str] = set()
        self._content_ids = KeptKeys(
            ID_LEN, bound_for(source.length(CONTENT), source.path.stat().st_size)
        )
        self._get: Callable[[str, bytes], bytes | None] | None = None
        self._absent: TableAbsent | None = None
        self._ahead: list[Ahead] = []

    def close(self) -> None:
        for ahead in self._ahead:
            ahead.close()  # (its thread reads the source: stopped before the source closes)
        self._ahead.clear()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def table_kinds(self) -> dict[str, str]:
        return self._src.table_kinds()

    def rows(self, table: str) -> Iterator[tuple[bytes, bytes]]:
        return chain.from_iterable(self.row_batches(table))

    def row_batches(self, table: str) -> Iterator[list[tuple[bytes, bytes]]]:
        """The rows of ``table`` in the reader's lists; the first full read of each of the
        five tables loaded as it passes (the content ids kept, a list at a time)."""
        batches = self._src.row_batches(table)
        if table not in ORDINAL or table in self._teed or self.table_kinds().get(table) != "table":
            return batches  # a multimap table among the five: refused, never loaded
        self._teed.add(table)
        if table == CONTENT:
            batches = map(self._content_ids.add, batches)
        return self._loader.tee_batches(ORDINAL[table], batches)

    @property
    def get(self) -> Callable[[str, bytes], bytes | None] | None:
        """Point lookups in the built store (every page written first); the source's when
        loading stopped at a bound."""
        self._loader.finish()
        if not self._loader.complete or self._db is None:
            return self._src.get
        if self._conn is None:
            self._conn = Connection(self._db, readonly=True)
        return self._lookup_built

    def contains(self, table: str, key: bytes) -> bool:
        """``get(table, key) is not None``: a content id kept as the rows passed is there."""
        if table == CONTENT and key in self._content_ids:
            return True
        return self._lookups()(table, key) is not None

    def missing(self, table: str, keys: Sequence[bytes]) -> list[int]:
        """The positions of ``keys`` that :meth:`contains` denies (the links check asks a
        list of history commits at a time): those not kept, then not found by ``get``."""
        if table != CONTENT:
            return [i for i, key in enumerate(keys) if not self.contains(table, key)]
        self._lookups()
        return self._missing_content(keys, self._absent)

    def _missing_content(self, keys: Sequence[bytes], absent: TableAbsent | None) -> list[int]:
        """:meth:`missing` of content ids, the ids not kept asked of ``absent`` (one of the
        source's sets of list lookups), else of ``get`` one at a time."""
        unkept = self._content_ids.missing(keys)
        if absent is None:
            get = self._lookups()
            return [i for i in unkept if get(CONTENT, keys[i]) is None]
        # The source's verified lookups, one C call for the list (the same answers).
        return [unkept[j] for j in absent(CONTENT, [keys[i] for i in unkept])]

    def history_ahead(self) -> Ahead | None:
        """The history's lists, each with its commits that name no content row, read and
        answered on threads (:mod:`migrate.rules.link_ahead`) when the answers are the
        source's own C lookups, which other threads may make: this view's own, and with
        ``lookup_threads`` 2 on a machine of several cores also a second set of lookup
        handles (:meth:`~migrate.rules.sources.RedbSource.absent_elsewhere`, whose branch
        cache holds up to 32 MiB more); None otherwise (lookups in the built store are that
        thread's connection's)."""
        self._lookups()
        if self._absent is None:
            return None
        self._content_ids.missing([])  # packed here, so the threads only read the kept ids
        missings = [partial(self._missing_content, absent=self._absent)]
        two = self._lookup_threads > 1 and (os.cpu_count() or 1) > 1
        elsewhere = self._src.absent_elsewhere() if two else None
        if elsewhere is not None:
            missings.append(partial(self._missing_content, absent=elsewhere))
        ahead = Ahead(self._src.row_batches(HISTORY), missings)
        self._ahead.append(ahead)
        return ahead

    def _lookups(self) -> Callable[[str, bytes], bytes | None]:
        if self._get is None:
            self._get = self.get
            assert self._get is not None  # the links check asks only a source with ``get``
            if self._get == self._src.get:
                self._absent = self._src.absent  # the same lookups, a list at a time
        return self._get

    def _lookup_built(self, table: str, key: bytes) -> bytes | None:
        assert self._conn is not None
        return StoreTables(self._conn).get(table, key)

    def lookup(self, table: str, key: bytes) -> bytes | None:
        return self._src.lookup(table, key)

    @property
    def absent(self) -> TableAbsent | None:
        """The source's :meth:`lookup` a list at a time (C path only, else None)."""
        return self._src.absent


def run_fresh(
    job: Job,
    kind: str,
    held: Seal,
    directory: Path,
    progress: Progress | None,
    observer: Observer | None = None,
) -> tuple[Preflight, dict[str, Any] | None]:
    """Build, check and publish (see the module docstring).  Returns the preflight and the
    receipt; the receipt is None when the destination was no longer empty at publication
    (nothing done there: continue on the staged path with this preflight)."""
    if engine_for(directory, job.engine) == FJALL:
        return _run_fresh_fjall(job, kind, held, directory, progress, observer)
    with open_build(directory) as build:
        return _build_and_publish(job, kind, held, build, build.path / DB_NAME, progress,
                                  observer)  # fmt: skip


def _run_fresh_fjall(
    job: Job, kind: str, held: Seal, directory: Path, progress: Progress | None,
    observer: Observer | None,
) -> tuple[Preflight, dict[str, Any] | None]:
    """The BBG database of a new destination (:mod:`migrate.store.keyspace_build`), under
    the import's guard from before publication until both keyspace and records are in place.

    A guard already there is taken first: this import's own (a crash of an earlier run) is
    finished or what it left cleared, anyone else's refused, before any work.  Otherwise the
    guard is taken just before publication: until then the build is a locked sibling nobody
    opens (removed if abandoned), and the import id it names waits on the seal's SHA-256,
    which is hashed beside the pass (:func:`fences.seal.seal`)."""
    taken: list[str] = []  # the import whose guard this run took

    def take() -> bool:
        iid = import_of(job, kind, held.fingerprint)[1]
        rerun = guard.take(directory, iid, guard.CONVERT)
        taken.append(iid)
        return rerun

    if guard.read(directory) is not None and take():
        if keyspace_build.finished(directory, taken[0]):
            guard.drop(directory, taken[0])
            return _rerun_receipt(job, kind, held, directory, progress)
        keyspace_build.clear_interrupted(directory)

    def before_publish() -> None:
        if taken:
            return
        iid = import_of(job, kind, held.fingerprint)[1]
        if guard.take(directory, iid, guard.CONVERT):
            raise StoreRefused(
                f"{directory}: another run of import {iid} took this destination's guard "
                "while this one was building; nothing was published. Rerun once it has "
                "finished (the rerun returns its receipt)", path=str(directory),
            )  # fmt: skip
        taken.append(iid)

    try:
        with keyspace_build.FjallBuild(directory) as build:
            pre, receipt = _build_and_publish(job, kind, held, build, None, progress, observer,
                                              before_publish)  # fmt: skip
    except BaseException:
        if taken and keyspace_build.can_build(directory):
            guard.drop(directory, taken[0])  # nothing of this import is left: the guard goes too
        raise
    # Published, or nothing published (the destination filled meanwhile): either way
    # nothing of this import is left half-done.
    guard.drop(directory, taken[0])
    return pre, receipt


def _rerun_receipt(job: Job, kind: str, held: Seal, directory: Path,
                   progress: Progress | None) -> tuple[Preflight, dict[str, Any] | None]:
    """A conversion that was complete but for its guard: its receipt, as an exact rerun
    gives it (the staged path finds the import active)."""
    from migrate.pipeline.preflight import preflight

    pre = preflight(job, kind, held.fingerprint, progress)
    with open_store(directory) as store:
        return pre, imports.receipt_of(store, pre.import_id)


def checking_pass(
    job: Job, kind: str, held: Seal, loader: Loader | KeyspaceLoader, db: Path | None,
    progress: Progress | None, lookup_threads: int = 2,
) -> tuple[Preflight, BackgroundDigest | None]:
    """The one pass over a cell.redb: the preflight's checks, each table's rows loaded by
    ``loader`` as they pass; then the preflight's refusal (same report, same first error)
    and the staged path's destination checks, in its order.  Once every row is read (and
    loaded), the seal's re-check starts on a thread of its own
    (:class:`~fences.seal.BackgroundDigest`): the links check that follows overlaps it;
    activation takes its digest."""
    loader.limit(job.bounds.max_rows, job.bounds.max_bytes)
    started: list[BackgroundDigest] = []  # (stopped with the seal if the run goes no further)
    with RedbSource(job.source) as src:
        tee = _Tee(src, loader, db, lookup_threads)
        try:
            report = redb_report(job, tee, progress,
                                 lambda: started.append(held.recheck_in_background()))
        finally:
            tee.close()
        origins = mapped_refusals(job, kind, report, src.lookup)
    pre = judge(job, kind, held.fingerprint, report, origins=origins)
    loader.check()
    gate.locate(job)
    return pre, started[0] if started else None


def checked(observer: Observer | None, pre: Preflight,
            loader: Loader | KeyspaceLoader) -> Progress | None:  # fmt: skip
    """Tell ``observer`` the stages it expects are done: the pass staged and checked every row
    (links, content ids, digest: the checking pass is the validation); returns the
    activation's callback (its rows count as done when its one transaction commits)."""
    loaded = sum(loader.rows.values())
    for name in ("stage", "validate"):
        counted = phase(observer, name, pre.rows)
        if counted is not None:
            counted(loaded, pre.nbytes)
    return phase(observer, "activate", pre.rows)


def source_pass(job: Job, kind: str, held: Seal, loader: Loader | KeyspaceLoader,
                db: Path | None, progress: Progress | None,
                lookup_threads: int = 2) -> fresh_legacy.Loaded:  # fmt: skip
    """The one pass over a source of ``kind``, each table loaded by ``loader``: a cell.redb's
    (:func:`checking_pass`), a log's or archive's (:func:`.fresh_legacy.checking_pass`, whose
    validate-stage findings the result keeps: :meth:`~.fresh_legacy.Loaded.validate` refuses
    them where the staged path would); the preflight and the cursor of the last row loaded."""
    if kind in LEGACY_KINDS:
        return fresh_legacy.checking_pass(job, kind, held, loader, progress)
    pre, recheck = checking_pass(job, kind, held, loader, db, progress, lookup_threads)
    return fresh_legacy.Loaded(pre, loader.cursor, [], recheck)


def _build_and_publish(
    job: Job, kind: str, held: Seal, build: Any, db: Path | None, progress: Progress | None,
    observer: Observer | None, before_publish: Callable[[], None] | None = None,
) -> tuple[Preflight, dict[str, Any] | None]:
    loader = build.loader(job.bounds.page_rows, job.bounds.page_bytes)
    loaded = source_pass(job, kind, held, loader, db, progress)
    pre = loaded.pre
    loaded.validate(build.directory)  # the validate stage's refusal, in its order
    store = build.open()
    activated = checked(observer, pre, loader)
    receipt = stages.activate_built(store, job, pre, held, loader.rows, loaded.cursor,
                                    loaded.recheck)  # fmt: skip
    if activated is not None:
        activated(sum(loader.rows.values()), pre.nbytes)
    if before_publish is not None:
        before_publish()
    with finishing(activated, "publish"):  # Fjall: the segments are written and synced here
        published = build.publish()
    return pre, receipt if published else None
