"""``run`` of a legacy log or TextArchive in one pass: into a new or empty destination (a store
built aside, :mod:`.fresh`) or a BBG database holding history (segments written aside,
:mod:`.existing`).

On the staged path a log (:mod:`.legacy`) is converted in preflight -- decoded strictly,
its ids derived, then the rows it becomes read once in key order for the shape check and the
archive digest --, then those rows are generated again to be staged item by item, the
staging is read back to validate it (shape, links, counts, digest), and copied into the five
tables at activation.  On the single pass, the preflight's row pass also loads each table as
it passes -- into the store built aside, or into the new segments written beside an existing
BBG database (the page cutter every build uses, :class:`~migrate.store.pages.PageLoader`), so
the rows checked and digested are the rows published, and the validate stage's checks run on
what was loaded (the rows of this import alone, as the staged path's validation reads its
staging, not the live tables):

* the shape rules: the pass's own findings (validation runs the same check,
  :func:`.legacy.check_rows`, on the same rows);
* the links (:func:`migrate.rules.links.iter_link_errors`): over the history, heads and
  requests generated again (the same rows: a pure function of the import's arrays, no source
  read), with content looked up among the ids loaded (kept as they passed, bounded:
  :class:`~migrate.rules.kept_keys.KeptKeys`; an id not kept is looked for among the
  import's own ids, the source of the rows loaded);
* counts and digest: the loader's counts against the report's (:func:`stages.activate_built`);
  the digest is of the very rows loaded.

An invalid source is refused by the decoder before anything is loaded, as preflight refuses
it (the same error, exit 3); a refusal of the loaded rows is the validate stage's own
(:func:`stages.refuse_unvalidated`, :meth:`Loaded.validate`), raised where the staged path
raises it: after the destination checks (and, into an existing store, after the import's
admission).  Memory: what preflight holds (the import's arrays, the key sort of the
pass), and the content ids kept (at most 4 MiB).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

from fences.seal import BackgroundDigest, Seal
from migrate.job import Job
from migrate.pipeline import gate, stages
from migrate.pipeline.legacy import LegacyImport, check_rows, encode_cursor
from migrate.pipeline.preflight import Preflight, judge, mapped_refusals, read_legacy
from migrate.rules.kept_keys import KeptKeys, find_key
from migrate.rules.links import iter_link_errors
from migrate.rules.shape import RowSource, row_batches
from migrate.store.codec import CONTENT, HISTORY, ID_LEN, ORDINAL
from migrate.store.pages import PageLoader

Progress = Callable[[int, int], None]


class _Loading:
    """A converted source's rows as the shape pass reads them (once each, in key order, in
    lists), each table loaded as it passes; the content ids are kept (bounded)."""

    def __init__(self, rows: RowSource, loader: PageLoader) -> None:
        self._rows, self._loader = rows, loader
        self.content = KeptKeys(ID_LEN)
        self._read: set[str] = set()

    def table_kinds(self) -> dict[str, str]:
        return self._rows.table_kinds()

    def rows(self, table: str) -> Iterator[tuple[bytes, bytes]]:
        return chain.from_iterable(self.row_batches(table))

    def row_batches(self, table: str) -> Iterator[list[tuple[bytes, bytes]]]:
        assert table not in self._read, f"{table} read twice: it would be loaded twice"
        self._read.add(table)
        batches = row_batches(self._rows, table)
        if table == CONTENT:
            batches = map(self.content.add, batches)
        return self._loader.tee_batches(ORDINAL[table], batches)


class _Loaded:
    """The loaded rows as the link rules read them (see the module docstring)."""

    def __init__(self, imp: LegacyImport, loading: _Loading, rows: RowSource) -> None:
        self._imp, self._loading, self._rows = imp, loading, rows
        self._at = 0  # where in the import's packed commits the next one is looked for

    def rows(self, table: str) -> Iterator[tuple[bytes, bytes]]:
        return self._rows.rows(table)

    def get(self, table: str, key: bytes) -> bytes | None:
        """Presence of a loaded content key (its value is not needed: ``b""``); a history
        commit (the row :class:`~.legacy.LegacyRows` loaded at that index)."""
        imp = self._imp
        if table == CONTENT:
            return b"" if key in self._loading.content or self._content_id(key) else None
        if table == HISTORY and len(key) == ID_LEN + 8 and key[:ID_LEN] == imp.namespace:
            index = int.from_bytes(key[ID_LEN:], "big")
            if index < imp.history_rows:
                return imp.commit(index)
        return None

    def _content_id(self, key: bytes) -> bool:
        """Whether ``key`` is the id of one of the import's content rows (those the pass
        loaded), for an id not kept.  The links check asks for the history commits in
        order: each commit is searched for from the last one found on."""
        imp, at = self._imp, self._at
        pos = find_key(imp.commits, key, ID_LEN, at)
        if pos < 0 and at:
            pos = find_key(imp.commits, key, ID_LEN)
        if pos >= 0:
            self._at = pos + ID_LEN
            return True
        return imp.other_content_id(key)


@dataclass
class Loaded:
    """A legacy source checked and loaded: its preflight, the staging cursor its last item
    leaves (as the staged path records it), and what validation found in the loaded rows."""

    pre: Preflight
    cursor: bytes
    errors: list[dict[str, Any]]
    #: The seal's re-check, started once every row was read (None: activation re-hashes).
    recheck: BackgroundDigest | None = None

    def validate(self, directory: Path) -> None:
        """Refuse as the validate stage refuses (after the destination checks)."""
        stages.refuse_unvalidated(directory, self.pre.import_id, self.errors)


def check_and_load(
    job: Job, kind: str, held: Seal, loader: PageLoader, progress: Progress | None
) -> Loaded:
    """Preflight a legacy source (the same refusals) while loading its rows (see the module
    docstring); the loader is finished when this returns."""
    imp = read_legacy(job, kind, held.fingerprint, progress)
    with imp.open() as fh:
        rows = imp.rows_of(fh)
        loading = _Loading(rows, loader)
        shape = check_rows(loading)
        loader.finish()  # Fjall: the partitions are finished meanwhile
        report = imp.report_of(shape)
        origins = mapped_refusals(job, kind, report, None)
        pre = judge(job, kind, held.fingerprint, report, imp, origins)
        errors = list(shape.errors)
        errors += iter_link_errors(_Loaded(imp, loading, rows), report_malformed=False)
        last = imp.items
        cursor = b""
        if last >= imp.first_item:  # the cursor of the last item's last row
            cursor = encode_cursor(last, len(imp.item_rows(fh, last)))
    return Loaded(pre, cursor, errors)


def checking_pass(
    job: Job, kind: str, held: Seal, loader: PageLoader, progress: Progress | None
) -> Loaded:
    """:func:`check_and_load` with the staged path's refusals that precede the import's
    admission, in its order: the preflight's (the loading stopped at a bound), what loading
    met, the destination's location.  The validate stage's refusal is left to the caller
    (:meth:`Loaded.validate`), after what it checks first."""
    loader.limit(job.bounds.max_rows, job.bounds.max_bytes)
    loaded = check_and_load(job, kind, held, loader, progress)
    loader.check()
    gate.locate(job)
    return loaded


__all__ = ["Loaded", "check_and_load", "checking_pass"]
