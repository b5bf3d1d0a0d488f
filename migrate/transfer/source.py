"""The transfer reader: the one way to open a BBG store that is (or becomes) a transfer source.

Rules from cyberia-to/bbg ``rs/src/storage/application/archive.rs`` (``ApplicationArchive``)
and ``transfer.rs`` (``TransferSource``), ``specs/application-transfer.md``:

* a source is an existing store whose status is absent, ``complete`` or ``export-v1``
  (anything else, e.g. ``neuron-v1`` after a mapped import, is a Conflict): an original
  application store with 1..256 namespaces;
* the seal binds the target, the transfer nonce and the source's last transaction before
  sealing (``prior``); the manifest is hemera over ``bbg/application-transfer/1\\0`` ‖ target ‖
  nonce ‖ prior ‖ every (namespace ‖ head index u64 LE ‖ head commit) in namespace order;
* sealing re-checks every pinned head under the store's write lock and commits the seal with
  status := ``export-v1`` in one transaction; from then on every normal open or write is
  refused (:mod:`fences.generations`), even through a handle opened before;
* an existing seal for another target or nonce is a Conflict; a seal that no longer
  recomputes from the current heads, or ``export-v1`` without a seal, is corrupt.

This module writes to the source exactly once: the sealing transaction (on the Fjall engine
one batch holding bbg's two keys, ``application-export`` and ``status``, plus bbg's
``last_transaction``; the records beside it keep the seal's facts).  Everything else reads,
in one snapshot per call (:func:`read_state`), or page by page after the seal (the sealed
source cannot change).

``prior``: bbg's -- the source's ``last_transaction``, bbg's change id of its last
transaction that changed bbg's tables, 32 zero bytes if it has none.  On the Fjall engine
that is the key ``bbg_storage_v1["last_transaction"]``; a SQLite store records the same id
(:mod:`migrate.store.bbg_changes`).  A SQLite store that recorded none (written before this
release, or restored from a snapshot, until its next such write) has no honest change id:
its seal binds the transaction counter as u64 LE, zero-padded to 32 bytes, and says so
(``prior_warning`` in ``plan``'s source and in the seal's facts, :data:`PRIOR_IS_COUNTER`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bbg_core.canonical import canonical_json
from bbg_core.closing import Closing
from bbg_core.errors import Conflict, StoreCorrupt, ValidationFailed
from fences import generations
from migrate.job import MAX_PAGE_BYTES, MAX_PAGE_ROWS
from migrate.rules.report import cell_report
from migrate.rules.shape import DIGEST_ORDER
from migrate.rules.sources import Page
from migrate.rules.transfer_form import DONE, Cursor, Sources, manifest_of
from migrate.store import export, graph, open_store
from migrate.store.codec import Head
from migrate.store.connection import Connection
from migrate.store.engine import FJALL, SQLITE
from migrate.store.store import Store
from migrate.store.tables import StoreTables

MAX_SOURCES = 256  # bbg: at most 256 pinned namespaces
SEAL_FORMAT = "bbg-migrate/transfer-seal/1"
Progress = Callable[[int, int], None]
ALLOWED_STATUS = (None, "complete", generations.EXPORT_MARKER)


#: The warning of a seal of a SQLite store that recorded no change id (module docstring).
PRIOR_IS_COUNTER = (
    "prior-is-counter: this SQLite store records no bbg change id (written before "
    "bbg-migrate recorded it, or restored from a snapshot, and not written since), so the "
    "seal's prior is its transaction counter (u64 LE, zero-padded), not bbg's last_transaction"
)


def prior_of(last_transaction: int) -> bytes:
    """The 32-byte ``prior`` of a SQLite store that recorded no change id: its transaction
    counter ``last_transaction``."""
    return last_transaction.to_bytes(8, "little") + bytes(24)


def bbg_prior(last_transaction: bytes | None) -> bytes:
    """bbg's ``prior``: the store's ``last_transaction`` change id, or 32 zero bytes when it
    has none (bbg ``transfer.rs`` ``from_archive``)."""
    return bytes(32) if last_transaction is None else last_transaction


@dataclass(frozen=True)
class ExportSeal:
    """A source's seal: bbg's 128 bytes (target, nonce, prior, manifest) plus our facts."""

    target: bytes
    nonce: bytes
    prior: bytes
    manifest: bytes
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The seal in reports."""
        return {
            "manifest": self.manifest.hex(),
            "target": self.target.hex(),
            "nonce": self.nonce.hex(),
            "prior": self.prior.hex(),
            **self.detail,
        }


def export_seal(db: Any) -> ExportSeal | None:
    """The export seal of a store, or None (on SQLite the table is absent in older stores).

    On the Fjall engine bbg's key is the seal; its facts come from the records' row when it
    names the same seal, else the seal has none (``detail`` empty: the records of an
    interrupted seal, or a store sealed by bbg itself)."""
    import json

    row = export.export_row(db)
    if export.is_keyspace(db):
        raw = export.keyspace_seal(db)
        if raw is None:
            return None
        if len(raw) != export.SEAL_LEN:
            raise StoreCorrupt(
                f"{db.path}: bbg_import_v1['application-export'] is {len(raw)} bytes, not "
                f"{export.SEAL_LEN}; the store is damaged", path=str(db.path),
            )  # fmt: skip
        fields = [raw[i : i + 32] for i in range(0, export.SEAL_LEN, 32)]
        same = row is not None and [bytes(v) for v in row[:4]] == fields
        detail = dict(json.loads(row[4])) if same and row is not None else {}
        return ExportSeal(raw[:32], raw[32:64], raw[64:96], raw[96:], detail)
    if row is None:
        return None
    fields = [bytes(v) for v in row[:4]]
    if any(len(v) != 32 for v in fields):
        raise StoreCorrupt(
            f"{db.path}: the export seal is malformed (fields of {[len(v) for v in fields]} "
            "bytes, want 4 x 32)",
            path=str(db.path),
        )
    target, nonce, prior, manifest = fields
    return ExportSeal(target, nonce, prior, manifest, dict(json.loads(row[4])))


def sources_of(report: dict[str, Any]) -> Sources:
    """The pinned (namespace, head) pairs of a store report, in namespace order."""
    return [
        (bytes.fromhex(ns), Head(v["head_index"], bytes.fromhex(v["head_commit"])))
        for ns, v in sorted(report["namespaces"].items())
    ]


@dataclass
class SourceState:
    """One consistent read of the source: report, counter, marker, seal, pinned heads."""

    path: Path
    store_id: str
    last_transaction: int
    marker: str | None
    seal: ExportSeal | None
    report: dict[str, Any]
    sources: Sources
    engine: str = SQLITE
    #: bbg's ``last_transaction`` (change id), None when it has none, ``export.UNKNOWN`` on
    #: a SQLite store that recorded none.
    bbg_last: bytes | str | None = None

    @property
    def prior(self) -> bytes:
        """The ``prior`` a seal made now binds (see the module docstring)."""
        if isinstance(self.bbg_last, str):
            return prior_of(self.last_transaction)
        return bbg_prior(self.bbg_last)

    @property
    def prior_warning(self) -> str | None:
        """:data:`PRIOR_IS_COUNTER` when :attr:`prior` is the counter, else None."""
        return PRIOR_IS_COUNTER if isinstance(self.bbg_last, str) else None

    def check(self) -> None:
        """Raise unless this store may be a transfer source (bbg ``ApplicationArchive``)."""
        path = str(self.path)
        if self.marker not in ALLOWED_STATUS:
            raise Conflict(
                f"{self.path}: status marker {self.marker!r}: only an original application "
                "store (status absent, 'complete' or a sealed 'export-v1') can be a transfer "
                "source; nothing was written",
                path=path,
                marker=self.marker,
            )
        if self.marker == generations.EXPORT_MARKER and self.seal is None:
            raise StoreCorrupt(
                f"{self.path}: status 'export-v1' but no export seal; the store is damaged",
                path=path,
            )
        if self.seal is not None and self.marker != generations.EXPORT_MARKER:
            raise StoreCorrupt(
                f"{self.path}: an export seal but status {self.marker!r}; the store is damaged",
                path=path,
            )
        if not self.report["valid"]:
            first = self.report["errors"][0]
            more = self.report["error_count"] - 1
            raise ValidationFailed(
                f"{self.path}: the source store breaks the store rules: {first['code']}: "
                f"{first['detail']}" + (f" (and {more} more)" if more else "")
                + "; nothing was written",
                path=path,
                errors=self.report["errors"],
            )  # fmt: skip
        if not 1 <= len(self.sources) <= MAX_SOURCES:
            raise ValidationFailed(
                f"{self.path}: a transfer source has 1..{MAX_SOURCES} namespaces, this one "
                f"{len(self.sources)}; nothing was written",
                path=path,
                errors=[{"code": "limit-exceeded", "detail": f"namespaces: {len(self.sources)}"}],
            )
        if self.seal is not None:
            verify(self.seal, self.sources, self.path)

    @property
    def rows(self) -> int:
        return sum(int(t["rows"]) for t in self.report["tables"].values())

    @property
    def nbytes(self) -> int:
        return sum(int(t["total_bytes"]) for t in self.report["tables"].values())


def verify(seal: ExportSeal, sources: Sources, path: Path) -> None:
    """StoreCorrupt unless the seal's manifest recomputes from the current heads."""
    if manifest_of(seal.target, seal.nonce, seal.prior, sources) != seal.manifest:
        raise StoreCorrupt(
            f"{path}: the export seal (manifest {seal.manifest.hex()}) no longer recomputes "
            "from the store's heads: the sealed source was changed; do not activate from it",
            path=str(path),
            manifest=seal.manifest.hex(),
        )


class _Five:
    """A store's five tables as the RowSource :func:`cell_report` reads."""

    def __init__(self, conn: Any) -> None:
        self._t = StoreTables(conn)

    def table_kinds(self) -> dict[str, str]:
        return {name: "table" for name in DIGEST_ORDER}

    def rows(self, table: str) -> Iterator[tuple[bytes, bytes]]:
        return self._t.rows(table)

    def get(self, table: str, key: bytes) -> bytes | None:
        return self._t.get(table, key)


def read_state(
    conn: Any, path: Path, progress: Progress | None = None, content_check: str = "codec"
) -> SourceState:
    """Read everything in one snapshot of ``conn`` (a read handle of either engine: a SQLite
    connection or a Fjall store's view): shape, content ids and links of every row (the
    project's cell rules, :func:`migrate.rules.report.cell_report`; ``content_check`` as
    there), heads, marker, seal, and bbg's ``last_transaction``."""
    with conn.read():
        store_id, last_transaction = export.counter(conn)
        marker, _ = generations.read_status(conn)
        seal = export_seal(conn)
        bbg_last = export.bbg_last_transaction(conn)
        report = cell_report(
            _Five(conn), progress=progress, hemera_digest=False, content_check=content_check
        )
    return SourceState(
        path=path,
        store_id=store_id,
        last_transaction=last_transaction,
        marker=marker,
        seal=seal,
        report=report,
        sources=sources_of(report),
        engine=FJALL if export.is_keyspace(conn) else SQLITE,
        bbg_last=bbg_last,
    )


class SourceStore(Closing):
    """A BBG store opened by the transfer reader (see the module docstring)."""

    def __init__(self, directory: Path, content_check: str = "codec") -> None:
        self.directory = Path(directory)
        self.content_check = content_check
        # maintenance: the open itself does not refuse 'export-v1'; every write still does.
        # On the Fjall engine the handle holds bbg.lock: nothing else writes the source.
        self.store: Store = open_store(self.directory, maintenance=True)
        self.engine = self.store.engine
        self._conn = Connection(self.store.db_path)

    def close(self) -> None:
        self._conn.close()
        self.store.close()

    @contextmanager
    def _view(self) -> Iterator[Any]:
        """A read handle of the source as of now: the SQLite connection, or a Fjall view (the
        keyspace as the writer last committed it, and the records)."""
        if self.engine != FJALL:
            yield self._conn
            return
        from migrate.store.keyspace import FjallView
        from migrate.store.keyspace_store import FjallStore

        assert isinstance(self.store, FjallStore)
        view = FjallView(self.store.writer.reader(), self.directory,
                         Connection(self.store.db_path, readonly=True))  # fmt: skip
        try:
            yield view
        finally:
            view.close()

    def read(self, progress: Progress | None = None) -> SourceState:
        """One consistent read of the source (see :func:`read_state`), checked."""
        with self._view() as db:
            state = read_state(db, self.directory, progress, self.content_check)
        state.check()
        return state

    def seal(
        self, state: SourceState, target: bytes, nonce: bytes, detail: dict[str, Any]
    ) -> ExportSeal:
        """Seal the source for (target, nonce), or check the seal it already has."""
        path = str(self.directory)
        if any(ns == target for ns, _ in state.sources):
            raise Conflict(
                f"{path}: the transfer target id {target.hex()} is one of the source's namespaces",
                path=path,
            )
        if state.seal is not None:
            _same_seal(state.seal, target, nonce, self.directory)
            if not state.seal.detail:
                return self._record_facts(state.seal, detail)
            return state.seal
        prior = state.prior
        manifest = manifest_of(target, nonce, prior, state.sources)
        with self.store.transaction(kind="transfer-seal", action="seal the transfer source") as tx:
            # Under the store's write lock: nothing committed since the read, every pinned
            # head is still the head (bbg re-checks the heads in the sealing transaction).
            moved = tx.number - 1 != state.last_transaction
            if state.engine == FJALL:
                moved = moved or export.bbg_last_transaction(tx) != state.bbg_last
            if moved:
                raise Conflict(
                    f"{path}: the source store changed while it was read (transaction "
                    f"{state.last_transaction} -> {tx.number - 1}); nothing was sealed, rerun",
                    path=path,
                )
            for ns, head in state.sources:
                if export.head_value(tx, ns) != head.encode():
                    raise Conflict(
                        f"{path}: namespace {ns.hex()} moved after it was pinned; nothing "
                        "was sealed, rerun",
                        path=path,
                        namespace=ns,
                    )
            if export.head_count(tx, len(state.sources)) != len(state.sources):
                raise Conflict(f"{path}: a namespace appeared after the heads were pinned")
            doc = {
                "format": SEAL_FORMAT,
                "prior_transaction": state.last_transaction,
                "sealed_transaction": tx.number,
                **detail,
            }
            if state.prior_warning is not None:
                doc["prior_warning"] = state.prior_warning
            export.write_export(tx, target, nonce, prior, manifest, canonical_json(doc))
            generations.set_transitional(tx, generations.EXPORT_MARKER)
        sealed = ExportSeal(target, nonce, prior, manifest, doc)
        verify(sealed, state.sources, self.directory)
        return sealed

    def _record_facts(self, seal: ExportSeal, detail: dict[str, Any]) -> ExportSeal:
        """A Fjall source sealed in the keyspace whose records lack the seal's facts (the
        sealing batch landed, its records did not: a crash between the two): record them now,
        in the records only, as the sealing transaction would have (same counter, same
        facts), so the rerun's receipt is the uninterrupted run's."""
        with self.store.transaction(check_status=False, kind="transfer-seal",
                                    action="record the seal's facts") as tx:  # fmt: skip
            doc = {
                "format": SEAL_FORMAT,
                "prior_transaction": tx.number - 1,
                "sealed_transaction": tx.number,
                **detail,
            }
            export.record_export(tx, seal.target, seal.nonce, seal.prior, seal.manifest,
                                 canonical_json(doc))  # fmt: skip
        return ExportSeal(seal.target, seal.nonce, seal.prior, seal.manifest, doc)

    def recheck(self, seal: ExportSeal) -> None:
        """Before activation: still sealed, nothing written since, and the seal recomputes."""
        with self._view() as db, db.read():
            marker, _ = generations.read_status(db)
            now = export_seal(db)
            last = export.counter(db)[1]
            bbg_last = export.bbg_last_transaction(db)
            heads = graph.heads(db)
        path = self.directory
        if marker != generations.EXPORT_MARKER or now is None or now.manifest != seal.manifest:
            raise StoreCorrupt(
                f"{path}: the source is no longer sealed for manifest {seal.manifest.hex()} "
                f"(status {marker!r}); nothing was activated",
                path=str(path),
            )
        if last != int(seal.detail["sealed_transaction"]):
            raise StoreCorrupt(
                f"{path}: the sealed source was written after sealing (transaction "
                f"{seal.detail['sealed_transaction']} -> {last}); nothing was activated",
                path=str(path),
            )
        if not isinstance(bbg_last, str):  # a SQLite store sealed before it recorded ids: str
            sealed = seal.target + seal.nonce + seal.prior + seal.manifest
            if bbg_last != export.seal_change_id(sealed):
                now_id = None if bbg_last is None else bbg_last.hex()
                raise StoreCorrupt(
                    f"{path}: bbg's last_transaction is {now_id}, not the sealing batch's change "
                    "id: the sealed source was written after sealing; nothing was activated",
                    path=str(path),
                )
        verify(seal, heads, path)

    def pages(
        self,
        cursor: bytes | None,
        *,
        max_rows: int = MAX_PAGE_ROWS,
        max_bytes: int = MAX_PAGE_BYTES,
    ) -> Iterator[Page]:
        """Bounded pages after ``cursor`` (bbg's layout, :mod:`.cursor`), one table per page.

        Only a sealed source is paged: it cannot change between pages.  The last page's
        cursor says table 5 (every table copied).
        """
        with self._view() as db:
            yield from self._pages(db, cursor, max_rows, max_bytes)

    def _pages(
        self, db: Any, cursor: bytes | None, max_rows: int, max_bytes: int
    ) -> Iterator[Page]:
        at = Cursor.decode(cursor) if cursor else Cursor()
        table, after, rows, nbytes = at.table, at.after, at.rows, at.nbytes
        pending: tuple[list[tuple[int, bytes, bytes]], int, int, bytes] | None = None
        while table < DONE:
            name = DIGEST_ORDER[table]
            batch = export.rows_after(db, name, after or b"", max_rows)
            if not batch:
                table, after = table + 1, None
                continue
            page: list[tuple[int, bytes, bytes]] = []
            size = 0
            for key, value in batch:
                k, v = bytes(key), bytes(value)
                if page and size + len(k) + len(v) > max_bytes:
                    break
                page.append((table, k, v))
                size += len(k) + len(v)
            after = page[-1][1]
            rows += len(page)
            nbytes += size
            if pending is not None:
                yield Page(pending[0], pending[3], pending[1])
            pending = (page, size, table, Cursor(table, after, rows, nbytes).encode())
        if pending is not None:
            yield Page(pending[0], Cursor(DONE, None, rows, nbytes).encode(), pending[1])


def _same_seal(seal: ExportSeal, target: bytes, nonce: bytes, path: Path) -> None:
    if seal.target != target or seal.nonce != nonce:
        where = seal.detail.get("target_store", {}).get("path")
        raise Conflict(
            f"{path}: the source is already sealed for another transfer (target "
            f"{seal.target.hex()}{f' at {where}' if where else ''}, nonce {seal.nonce.hex()}, "
            f"manifest {seal.manifest.hex()}); resealing with another target or nonce is "
            "refused. Finish that transfer (same --store and --nonce)",
            path=str(path),
            manifest=seal.manifest.hex(),
            target=seal.target.hex(),
            nonce=seal.nonce.hex(),
        )


def check_same_seal(seal: ExportSeal | None, target: bytes, nonce: bytes, path: Path) -> None:
    """The Conflict a reseal would raise (for ``plan``)."""
    if seal is not None:
        _same_seal(seal, target, nonce, path)
