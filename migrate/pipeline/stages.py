"""The stages after preflight: seal, stage, validate, activate.

Each stage is idempotent and resumable, and records itself in the destination's journal in
the same transaction as its effect (:mod:`migrate.store.imports`).  The destination is only
ever changed in three ways before activation -- the import's seal record, its inert staging
rows and cursor, and the journal -- none of which readers of the five tables can see.
Activation is one transaction, so a crash leaves the destination either as it was or with
the complete import published.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bbg_core.errors import Conflict, NotReady, ValidationFailed
from fences import generations
from fences.seal import BackgroundDigest, Seal
from migrate.job import CODEC, Job
from migrate.pipeline import continuity, gate, subject
from migrate.pipeline.preflight import Preflight
from migrate.rules.links import iter_link_errors
from migrate.rules.shape import check_shape
from migrate.rules.sources import PageSource
from migrate.store import guard, imports
from migrate.store.codec import ARCHIVE_ORDER as DIGEST_ORDER
from migrate.store.digest import archive_digest
from migrate.store.engine import FJALL
from migrate.store.graph import head as live_head
from migrate.store.store import Store

ROWS_STREAM = "rows"
#: An activation of the real database writes at most this much in one batch (bbg's own
#: transaction bounds); a bigger one goes in as segments (:meth:`FjallStore.publish_bulk`).
BATCH_ROWS = 4096
BATCH_BYTES = 32 * 1024 * 1024 - 1024
Progress = Callable[[int, int], None]


@dataclass
class StageResult:
    """How far staging got in this call."""

    complete: bool
    pages: int
    rows: int


def seal_doc(job: Job, pre: Preflight) -> dict[str, Any]:
    """The seal record: everything the import and its receipt are a function of."""
    return {
        "source": pre.fingerprint,
        "nonce": pre.nonce,
        "mapping": job.mapping.to_json() if job.mapping is not None else None,
        "archive_digest_sha256": pre.report["archive_digest_sha256"],
        "rows": {name: t["rows"] for name, t in pre.report["tables"].items()},
        "namespaces": {
            ns: {"head_index": v["head_index"], "head_commit": v["head_commit"]}
            for ns, v in sorted(pre.namespaces.items())
        },
        # Part of the import's identity; named only when not the default (older seals match).
        **({"content_check": job.content_check} if job.content_check != CODEC else {}),
        **({"strict": True} if job.strict else {}),
    }


def seal_stage(store: Store, job: Job, pre: Preflight) -> str:
    """Record the seal, claim the nonce and pin the namespaces; returns the import's state."""
    with store.transaction(import_id=pre.import_id) as tx:
        # The same admission ``plan`` runs on a read-only handle, here under the write lock.
        if gate.admit(tx, store.directory, job, pre).state == "active":
            return "active"
        imports.claim_nonce(tx, pre.nonce, pre.import_id)
        imports.begin_import(tx, pre.import_id)
        imports.record_seal(tx, pre.import_id, seal_doc(job, pre))
        continuity.journal_source(tx, pre.import_id, job)
        prior: dict[str, Any] = {}
        for ns in gate.pinned_namespaces(job, pre):
            current = live_head(tx, ns)
            prior[ns.hex()] = None if current is None else [current.index, current.commit.hex()]
            imports.stage_namespace(tx, pre.import_id, ns)
        if imports.journal_of(tx, pre.import_id, "sealed") is None:
            imports.journal(tx, pre.import_id, "sealed", {"prior_heads": prior})
        return "staging"


def stage_stage(
    store: Store,
    job: Job,
    pre: Preflight,
    source: PageSource,
    *,
    max_pages: int | None = None,
    progress: Progress | None = None,
) -> StageResult:
    """Copy bounded pages into inert staging, each with its cursor; resumable anywhere."""
    iid = pre.import_id
    if imports.journal_of(store, iid, "staged") is not None:
        return StageResult(True, 0, pre.rows)
    prior = imports.cursor_of(store, iid, ROWS_STREAM)
    cursor, copied = (prior[0], prior[1]) if prior else (None, 0)
    done_pages = 0
    copied_bytes = 0
    b = job.bounds
    # Each page commits with its cursor, without an fsync of its own: staged rows are inert
    # and a page a power cut rolls back is staged again.  Leaving ``staging_sync`` fsyncs the
    # log once, so whatever this call staged is durable when it returns.
    with store.staging_sync():
        for page in source.pages(cursor, max_rows=b.page_rows, max_bytes=b.page_bytes):
            if max_pages is not None and done_pages >= max_pages:
                return StageResult(False, done_pages, copied)
            with store.transaction(import_id=iid) as tx:
                by_table: dict[int, list[tuple[bytes, bytes]]] = {}
                for ordinal, key, value in page.rows:
                    by_table.setdefault(ordinal, []).append((key, value))
                for ordinal, rows in by_table.items():
                    imports.stage_rows(tx, iid, DIGEST_ORDER[ordinal], rows)
                copied += len(page.rows)
                imports.set_cursor(tx, iid, ROWS_STREAM, page.cursor, copied)
            done_pages += 1
            copied_bytes += page.nbytes
            if progress is not None:
                progress(copied, copied_bytes)
    with store.transaction(import_id=iid) as tx:
        imports.journal(tx, iid, "staged", {"rows": copied})
    return StageResult(True, done_pages, copied)


class _Staged:
    """The import's staging area as a five-table row source."""

    def __init__(self, tables: Any) -> None:
        self._t = tables

    def table_kinds(self) -> dict[str, str]:
        return {name: "table" for name in DIGEST_ORDER}

    def rows(self, table: str) -> Any:
        return self._t.rows(table)

    def get(self, table: str, key: bytes) -> bytes | None:
        value: bytes | None = self._t.get(table, key)
        return value


class _Counted:
    """A row source that counts the rows read of each table (for one digest pass), and
    reports ``progress(rows, bytes)`` every few thousand rows and at the end."""

    def __init__(self, tables: _Staged, progress: Progress | None) -> None:
        self._t = tables
        self._progress = progress
        self.counts: dict[str, int] = {}
        self.total_rows = self.total_bytes = 0

    def rows(self, table: str) -> Iterator[tuple[bytes, bytes]]:
        n = 0
        progress = self._progress
        for row in self._t.rows(table):
            n += 1
            yield row
            self.total_rows += 1
            self.total_bytes += len(row[0]) + len(row[1])
            if progress is not None and self.total_rows % 4096 == 0:
                progress(self.total_rows, self.total_bytes)
        self.counts[table] = n

    def finish(self) -> None:
        if self._progress is not None:
            self._progress(self.total_rows, self.total_bytes)


def validate_stage(
    store: Store,
    job: Job,
    pre: Preflight,
    seal: Seal | None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Check the staged rows against the source -- counts and archive digest (a cell.redb:
    equal to the rows whose shape and links preflight checked; a converted log: its shape
    and links checked here) -- and against the destination.
    ``progress(rows checked, bytes)`` while the staged rows are read."""
    iid = pre.import_id
    gate.require_known(store, store.directory, job, pre)
    done = imports.journal_of(store, iid, "validated")
    if done is not None:
        if progress is not None:
            progress(pre.rows, pre.nbytes)  # checked before: nothing left to check
        return done
    if imports.journal_of(store, iid, "staged") is None:
        raise NotReady(
            f"{store.directory}: import {iid} is not fully staged yet; "
            "run `stage` (or `run`) first",
            import_id=iid,
        )
    errors: list[dict[str, Any]] = []
    with store.snapshot(iid) as tables:
        staged = _Staged(tables)
        if pre.legacy is None:
            # A cell.redb: this preflight ran the shape and link rules on the source's rows
            # (``judge`` refused it otherwise) and the seal is re-checked in full below, so
            # equal counts and archive digest prove the staged rows are those checked rows:
            # the one pass left here reads and hashes them (links are checked once).
            counted = _Counted(staged, progress)
            digest = archive_digest(counted).hex()
            counted.finish()
            rows = counted.counts
        else:
            # Rows converted from a log: their rules are checked here, on what was staged.
            shape = check_shape(
                staged,
                content_check=pre.report.get("content_check", "codec"),
                verify_blob_ids=False,
                hemera_digest=False,
                progress=progress,
            )
            errors += list(shape.errors) + list(iter_link_errors(staged, report_malformed=False))
            rows = {name: s.rows for name, s in shape.tables.items()}
            digest = shape.archive_digest_sha256
    want = {name: t["rows"] for name, t in pre.report["tables"].items() if name in rows}
    if rows != want:
        errors.append({"code": "count-mismatch", "detail": f"staged {rows} != source {want}"})
    if digest != pre.report["archive_digest_sha256"]:
        errors.append(
            {
                "code": "digest-mismatch",
                "detail": f"staged archive digest {digest} != source "
                f"{pre.report['archive_digest_sha256']}",
            }
        )
    errors += gate.destination_conflicts(store, pre, iid)
    refuse_unvalidated(store.directory, iid, errors)
    if seal is not None:
        seal.check_unchanged(full=True)
    detail = {"archive_digest_sha256": digest, "rows": rows}
    with store.transaction(import_id=iid) as tx:
        imports.journal(tx, iid, "validated", detail)
    return detail


def refuse_unvalidated(directory: Path, iid: str, errors: list[dict[str, Any]]) -> None:
    """The validate stage's refusal of the import's rows: its first error names it (exit 3,
    or 4 when the destination is in the way); nothing when ``errors`` is empty."""
    if errors:
        code = errors[0]["code"]
        cls = Conflict if code in ("head-conflict", "fenced") else ValidationFailed
        raise cls(
            f"{directory}: import {iid} did not validate: {code}: {errors[0]['detail']}",
            import_id=iid,
            errors=errors,
        )


def activate_stage(
    store: Store,
    job: Job,
    pre: Preflight,
    seal: Seal | None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Publish the staged import in one transaction and return its receipt.
    ``progress(rows copied, 0)`` after each of the five tables is copied out of staging.
    An import found active (an exact rerun) also removes the guard its activation in
    segments may have left (a crash after the last transaction, before the guard went)."""
    receipt = _activate(store, job, pre, seal, progress)
    guard.drop(store.directory, pre.import_id)
    return receipt


def _activate(
    store: Store,
    job: Job,
    pre: Preflight,
    seal: Seal | None,
    progress: Callable[[int, int], None] | None,
) -> dict[str, Any]:
    iid = pre.import_id
    if store.engine == FJALL:
        # The real database is written outside the records' transaction: the plan (counts,
        # conflicts, pins) is recorded first, then rows too many for one batch go in as
        # segments under the import's guard, then the last transaction below.
        with store.transaction(import_id=iid) as tx:
            done = _already_active(tx, store, job, pre, seal, progress)
            if done is not None:
                return done
            if imports.journal_of(tx, iid, "activating") is None:
                gate.check_pins(tx, iid)  # before the plan (a planned import's are done)
                plan = imports.plan_activation(tx, iid)
                plan["bulk"] = plan["rows"] > BATCH_ROWS or plan["bytes"] > BATCH_BYTES
                imports.journal(tx, iid, "activating", plan)
        recorded = imports.journal_of(store, iid, "activating")
        assert recorded is not None
        if recorded["bulk"]:
            store.publish_bulk(iid)  # type: ignore[attr-defined]
    with store.transaction(import_id=iid) as tx:
        done = _already_active(tx, store, job, pre, seal, progress)
        if done is not None:
            return done
        gate.check_pins(tx, iid)
        copied = 0

        def table_done(table: str) -> None:
            nonlocal copied
            copied += int(pre.report["tables"].get(table, {}).get("rows", 0))
            if progress is not None:
                progress(copied, 0)

        inserted = imports.activate(tx, iid, None if progress is None else table_done)
        validated = imports.journal_of(tx, iid, "validated")
        assert validated is not None
        return _activated(tx, store, job, pre, inserted, validated["archive_digest_sha256"])


def _already_active(tx: Any, store: Store, job: Job, pre: Preflight, seal: Seal | None,
                    progress: Callable[[int, int], None] | None) -> dict[str, Any] | None:
    """The receipt of an import already active (an exact rerun), after the checks every
    activation makes first; None when it is still to be activated."""
    iid = pre.import_id
    gate.require_known(tx, store.directory, job, pre)
    if imports.import_state(tx, iid) == "active":
        receipt = imports.receipt_of(tx, iid)
        assert receipt is not None
        if progress is not None:
            progress(pre.rows, 0)  # copied before: nothing left to copy
        return receipt
    if imports.journal_of(tx, iid, "validated") is None:
        raise NotReady(
            f"{store.directory}: import {iid} is not validated yet; run `validate` first",
            import_id=iid,
        )
    if seal is not None:
        seal.check_unchanged(full=True)  # bytes, not just mtime: a flip may keep it
    return None


def activate_built(
    store: Store, job: Job, pre: Preflight, seal: Seal, rows: dict[str, int], cursor: bytes,
    recheck: BackgroundDigest | None = None,
) -> dict[str, Any]:
    """Seal, validate and activate, in one transaction, an import whose rows the checking pass
    loaded straight into the five tables of a store built for it (:mod:`migrate.store.build`).

    It records what the staged path records -- seal, nonce, source path, pins (nothing was
    there before), cursor, the journal of every stage, the receipt -- so the published store
    is the one ``seal``, ``stage``, ``validate`` and ``activate`` would have left.  What
    validation re-reads on the staged path was proven by the pass itself: the archive digest
    is of the very bytes loaded, the links and content ids were checked on them, and SQLite
    counted the rows inserted (compared here with the source's counts).
    """
    with store.transaction(import_id=pre.import_id) as tx:
        digest = _record_checked(tx, store, job, pre, seal, rows, cursor, recheck=recheck)
        imports.activate_loaded(tx, pre.import_id)
        return _activated(tx, store, job, pre, dict(rows), digest)


def activate_published(store: Store, job: Job, pre: Preflight, seal: Seal, rows: dict[str, int],
                       cursor: bytes, plan: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """Seal, validate and activate, in one transaction, an import whose rows the checking pass
    wrote as segments that are published into an existing BBG database already
    (:mod:`migrate.pipeline.existing`): the records of :func:`activate_built`, then the
    activation plan the staged path records before it publishes in segments (``plan``:
    new rows per table, rows, bytes) and its activation -- bbg's status put and markers in
    the one batch -- so the store and the receipt are those of the staged path."""
    iid = pre.import_id
    with store.transaction(import_id=iid) as tx:
        # The caller re-hashed the source before it published (before the guard, so that a
        # source changed by then leaves nothing to finish): the cheap check is left here.
        digest = _record_checked(tx, store, job, pre, seal, rows, cursor, full=False)
        imports.journal(tx, iid, "activating", {**plan, "bulk": True})
        inserted = imports.activate(tx, iid)
        return _activated(tx, store, job, pre, inserted, digest)


def _record_checked(tx: Any, store: Store, job: Job, pre: Preflight, seal: Seal,
                    rows: dict[str, int], cursor: bytes, *, full: bool = True,
                    recheck: BackgroundDigest | None = None) -> str:  # fmt: skip
    """What the staged path records up to validation, for rows the checking pass loaded
    (``rows`` per table, compared with the source's counts), the source checked unchanged
    (``full``: its bytes re-hashed, by ``recheck`` when the pass started one); returns the
    archive digest."""
    iid = pre.import_id
    want = {name: t["rows"] for name, t in pre.report["tables"].items()}
    if rows != {name: want.get(name, 0) for name in DIGEST_ORDER}:
        raise ValidationFailed(
            f"{store.directory}: import {iid} did not validate: count-mismatch: loaded {rows} "
            f"!= source {want}",
            import_id=iid,
            errors=[{"code": "count-mismatch", "detail": f"loaded {rows} != source {want}"}],
        )
    digest: str = pre.report["archive_digest_sha256"]
    imports.claim_nonce(tx, pre.nonce, iid)
    imports.begin_import(tx, iid)
    imports.record_seal(tx, iid, seal_doc(job, pre))
    continuity.journal_source(tx, iid, job)
    prior = {ns.hex(): None for ns in gate.pinned_namespaces(job, pre)}
    imports.journal(tx, iid, "sealed", {"prior_heads": prior})
    total = sum(rows.values())
    imports.set_cursor(tx, iid, ROWS_STREAM, cursor, total)
    imports.journal(tx, iid, "staged", {"rows": total})
    imports.journal(tx, iid, "validated", {"archive_digest_sha256": digest, "rows": want})
    seal.check_unchanged(full=full, recheck=recheck)  # bytes, not just mtime: a flip may keep it
    return digest


def _activated(tx: Any, store: Store, job: Job, pre: Preflight, inserted: dict[str, int],
               digest: str) -> dict[str, Any]:  # fmt: skip
    """The end of an activation's transaction: a mapped run's transfer, the generation, the
    receipt, the journal."""
    iid = pre.import_id
    published: dict[str, Any] = {"head": None, "manifest": None, "mappings": []}
    if job.mapping is not None:
        # Prepared, validated, inert: the origins are converted beside the activated
        # subject and staged in bbg's transfer form pinned to it, in this transaction;
        # nothing is written in the subject's namespace, no neuron fence, no import
        # manifest -- those are neuron's import's, under the subject's authority
        # (:mod:`migrate.pipeline.subject`).
        bound = subject.binding(tx, store.directory, job.mapping)
        staged = subject.transfer(job.mapping, pre.nonce, pre.namespaces,
                                  pre.report["tables"])  # fmt: skip
        subject.stage_transfer(tx, staged, pre.namespaces, iid)
        published["neuron_import"] = subject.prepared(
            store.directory, job.mapping, bound, pre.namespaces, staged
        )
    generation = generations.settle(tx)
    receipt = build_receipt(pre, published, [], generation, inserted, digest)
    imports.record_receipt(tx, iid, receipt)
    imports.journal(tx, iid, "activated", {"generation": generation})
    return receipt


def build_receipt(
    pre: Preflight,
    published: dict[str, Any],
    fenced: list[str],
    generation: str,
    inserted: dict[str, int],
    staged_digest: str,
) -> dict[str, Any]:
    """The receipt: a pure function of the source, mapping, nonce and prior destination."""
    receipt: dict[str, Any] = {
        "format": "bbg-migrate/receipt/1",
        "import_id": pre.import_id,
        "nonce": pre.nonce,
        "source": pre.fingerprint,
        "head": published["head"],
        "manifest": published["manifest"],
        "mappings": published["mappings"],
        "fences": fenced,
        "generation": generation,
        "counts": {
            "rows": {name: t["rows"] for name, t in pre.report["tables"].items()},
            "new_rows": inserted,
            "namespaces": len(pre.namespaces),
        },
        "digests": {
            "source_archive_sha256": pre.report["archive_digest_sha256"],
            "staged_archive_sha256": staged_digest,
        },
    }
    if "neuron_import" in published:  # a mapped run (optional: other receipts unchanged)
        receipt["neuron_import"] = published["neuron_import"]
    if pre.legacy is not None:
        # Optional, so a cell.redb receipt stays exactly as it was.
        receipt["legacy"] = pre.legacy.facts()
    else:
        receipt["content_check"] = pre.report["content_check"]
    import schemas

    schemas.validate(receipt, "receipt")
    return receipt
