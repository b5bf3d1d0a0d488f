"""The target side of a transfer: reserve once per manifest, stage, validate, activate.

Rules from cyberia-to/bbg ``rs/src/storage/application/transfer.rs`` (``prepare_target``,
``stage``) and ``specs/application-transfer.md``; the machinery is the pipeline's
(:mod:`migrate.pipeline.stages`, :mod:`migrate.store.imports`):

* **prepare** (one transaction, once per manifest: skipped when the import's cursor exists):
  promote the target to ``neuron-v1`` (old binaries refuse it from then on); each source
  namespace must have no head, no fence and no staging in the target (else Conflict) and is
  reserved for good -- bbg's ``bbg_import_v1['s' ‖ namespace] = manifest``, which bbg never
  removes, so GraphPort writes to it are Fenced from now on, also after activation (on the
  SQLite engine a fence record naming the transfer) -- and staged; the nonce is bound to
  this transfer; the seal record, the journal entry and the cursor start ``(0, -, 0, 0)``
  (on Fjall also bbg's ``'u' ‖ manifest = target`` and ``'t' ‖ manifest = cursor``).  The
  import id is the manifest (hex).
* **stage**: :func:`migrate.pipeline.stages.stage_stage` over the sealed source's pages, each
  page and its cursor in one transaction, into inert staging.
* **validate**: :func:`migrate.pipeline.stages.validate_stage`: shape and links of the staged
  rows, counts and archive digest equal to the sealed source's, no conflict in the target.
* **activate** (one transaction): the source is still sealed with this manifest and its
  heads recompute it; the reserved namespaces are still headless here; the staged rows are
  published (immutable puts), the generation is at least ``neuron-v1``, and the receipt,
  which names the manifest, is recorded: an exact rerun returns it unchanged.  On Fjall the
  activation's plan is recorded first and its batch also moves bbg's ``'t'`` cursor to its
  end (table 5: the rows are in the live tables now); an activation beyond bbg's batch
  bounds goes in as segments first, as the pipeline's does
  (:func:`migrate.pipeline.stages.activate_stage`).  The reservations stay.
"""

from __future__ import annotations

import hashlib
from typing import Any

import schemas
from bbg_core.errors import Conflict, HeadMismatch, NotReady
from fences import generations
from fences.namespaces import fence_of
from migrate.job import Job
from migrate.pipeline import stages
from migrate.pipeline.preflight import Preflight
from migrate.rules.transfer_form import Cursor
from migrate.store import export, guard, imports
from migrate.store.engine import FJALL
from migrate.store.graph import head as live_head
from migrate.store.layout import store_id_of
from migrate.store.store import Store
from migrate.transfer.source import ExportSeal, SourceState, SourceStore

TARGET_DOMAIN = b"bbg-migrate/transfer-target/1\x00"
NONCE_DOMAIN = b"bbg-migrate/transfer-nonce/1\x00"
RECORD_FORMAT = "bbg-migrate/transfer-record/1"
RECEIPT_FORMAT = "bbg-migrate/transfer-receipt/1"
STREAM = stages.ROWS_STREAM


def target_id(store_id: str) -> bytes:
    """The 32-byte transfer target of a store: bound to its store id (not to its path)."""
    from hashing import hemera

    out: bytes = hemera.hash(TARGET_DOMAIN + store_id.encode())
    return out


def default_nonce(source_store_id: str) -> bytes:
    """The nonce used when the operator names none: bound to the source store."""
    return hashlib.sha256(NONCE_DOMAIN + source_store_id.encode()).digest()


def preflight(state: SourceState, seal: ExportSeal) -> Preflight:
    """The pipeline's view of a sealed source (what stage/validate compare against)."""
    return Preflight(
        kind="bbg",
        report=state.report,
        fingerprint={
            "kind": "bbg",
            "store_id": state.store_id,
            "manifest": seal.manifest.hex(),
            "prior_transaction": int(seal.detail["prior_transaction"]),
        },
        nonce=seal.nonce.hex(),
        import_id=seal.manifest.hex(),
    )


def record(state: SourceState, seal: ExportSeal) -> dict[str, Any]:
    """The seal record the target keeps for this transfer (``bbg_import_v1_seals``)."""
    return {
        "format": RECORD_FORMAT,
        "manifest": seal.manifest.hex(),
        "target": seal.target.hex(),
        "nonce": seal.nonce.hex(),
        "prior": seal.prior.hex(),
        "source": {
            "store_id": state.store_id,
            "prior_transaction": seal.detail["prior_transaction"],
            "sealed_transaction": seal.detail["sealed_transaction"],
            "archive_digest_sha256": state.report["archive_digest_sha256"],
        },
        "sources": [
            {"namespace": ns.hex(), "index": h.index, "commit": h.commit.hex()}
            for ns, h in state.sources
        ],
    }


def collisions(db: Any, import_id: str, target: bytes, state: SourceState) -> list[dict[str, str]]:
    """Why a source namespace cannot be reserved in the target (bbg: head, fence or stage)."""
    out: list[dict[str, str]] = []
    for ns, _ in state.sources:
        if ns == target:
            out.append({"code": "target-collision", "detail": f"{ns.hex()} is the target id"})
        if live_head(db, ns) is not None:
            out.append({"code": "head-conflict", "detail": f"namespace {ns.hex()} has a head"})
        record_ = fence_of(db, ns)
        if record_ is not None and record_["import_id"] != import_id:
            out.append(
                {
                    "code": "fenced",
                    "detail": f"namespace {ns.hex()} is fenced by import {record_['import_id']}",
                }
            )
        staged = imports.import_of_staged_namespace(db, ns)
        if staged is not None and staged != import_id:
            out.append(
                {
                    "code": "staged",
                    "detail": f"namespace {ns.hex()} is being imported by {staged}",
                }
            )
    return out


def refuse_collisions(db: Any, import_id: str, target: bytes, state: SourceState) -> None:
    """Conflict naming every source namespace that cannot be reserved in the target."""
    found = collisions(db, import_id, target, state)
    if found:
        raise Conflict(
            f"{db.path}: cannot reserve the source's namespaces for transfer {import_id}: "
            f"{found[0]['detail']}"
            + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")
            + "; nothing was written",
            import_id=import_id,
            errors=found,
        )


def cursor_of(db: Any, import_id: str) -> Cursor | None:
    """The transfer's cursor in the target, or None before preparation."""
    found = imports.cursor_of(db, import_id, STREAM)
    return None if found is None else Cursor.decode(found[0])


def prepare(target: Store, state: SourceState, seal: ExportSeal) -> bool:
    """Reserve the target for this manifest, once; True if this call did it."""
    iid = seal.manifest.hex()
    with target.transaction(import_id=iid) as tx:
        if imports.cursor_of(tx, iid, STREAM) is not None:
            return False
        refuse_collisions(tx, iid, seal.target, state)
        generations.promote(tx, "neuron-v1")
        imports.claim_nonce(tx, seal.nonce.hex(), iid)
        imports.begin_import(tx, iid)
        imports.record_seal(tx, iid, record(state, seal))
        for ns, _ in state.sources:
            imports.stage_namespace(tx, iid, ns)
            export.reserve_source(tx, ns, seal.manifest, iid)
        export.put_target(tx, seal.manifest, seal.target)
        export.put_cursor(tx, seal.manifest, Cursor().encode())
        imports.journal(
            tx, iid, "sealed", {"prior_heads": {ns.hex(): None for ns, _ in state.sources}}
        )
        imports.set_cursor(tx, iid, STREAM, Cursor().encode(), 0)
    return True


def validate(target: Store, job: Job, pre: Preflight) -> dict[str, Any]:
    """The pipeline's validation of the staged rows against the sealed source."""
    return stages.validate_stage(target, job, pre, None)


def activate(
    target: Store, source: SourceStore, state: SourceState, seal: ExportSeal
) -> dict[str, Any]:
    """Publish the validated transfer in one transaction; the receipt (same on a rerun)."""
    iid = seal.manifest.hex()
    done = imports.receipt_of(target, iid)
    if done is not None and imports.import_state(target, iid) == "active":
        guard.drop(target.directory, iid)
        return done
    source.recheck(seal)
    if target.engine == FJALL:
        # The real database is written outside the records' transaction: the plan (counts,
        # conflicts) is recorded first; rows too many for one batch then go in as segments
        # under the import's guard; the last transaction below completes the activation.
        with target.transaction(import_id=iid) as tx:
            if imports.import_state(tx, iid) != "active":
                _require_validated(target, tx, iid)
                if imports.journal_of(tx, iid, "activating") is None:
                    _require_headless(target, tx, state, iid)
                    plan = imports.plan_activation(tx, iid)
                    plan["bulk"] = (plan["rows"] > stages.BATCH_ROWS
                                    or plan["bytes"] > stages.BATCH_BYTES)  # fmt: skip
                    imports.journal(tx, iid, "activating", plan)
        recorded = imports.journal_of(target, iid, "activating")
        active = imports.import_state(target, iid) == "active"
        if recorded is not None and recorded["bulk"] and not active:
            target.publish_bulk(iid)  # type: ignore[attr-defined]
    with target.transaction(import_id=iid) as tx:
        if imports.import_state(tx, iid) == "active":
            receipt = imports.receipt_of(tx, iid)
            assert receipt is not None
        else:
            receipt = _activate(target, tx, state, seal)
    guard.drop(target.directory, iid)
    return receipt


def _require_validated(target: Store, tx: Any, iid: str) -> dict[str, Any]:
    validated = imports.journal_of(tx, iid, "validated")
    if validated is None:
        raise NotReady(
            f"{target.directory}: transfer {iid} is not validated yet; run `validate` "
            "(or `transfer`) first",
            import_id=iid,
        )
    return validated


def _require_headless(target: Store, tx: Any, state: SourceState, iid: str) -> None:
    for ns, _ in state.sources:
        if live_head(tx, ns) is not None:
            raise HeadMismatch(
                f"{target.directory}: namespace {ns.hex()} gained a head while it was "
                "reserved for the transfer; nothing was activated",
                namespace=ns.hex(),
                import_id=iid,
            )


def _activate(target: Store, tx: Any, state: SourceState, seal: ExportSeal) -> dict[str, Any]:
    """The activating transaction's work (see the module docstring)."""
    iid = seal.manifest.hex()
    validated = _require_validated(target, tx, iid)
    if imports.journal_of(tx, iid, "activating") is None:
        _require_headless(target, tx, state, iid)  # (a planned activation checked them then)
    cursor = imports.cursor_of(tx, iid, STREAM)
    assert cursor is not None
    inserted = imports.activate(tx, iid)
    export.put_cursor(tx, seal.manifest, cursor[0])
    generation = generations.promote(tx, "neuron-v1")
    receipt = build_receipt(state, seal, store_id_of(tx), generation, inserted, validated)
    imports.record_receipt(tx, iid, receipt)
    imports.journal(tx, iid, "activated", {"generation": generation})
    return receipt


def build_receipt(
    state: SourceState,
    seal: ExportSeal,
    target_store_id: str,
    generation: str,
    inserted: dict[str, int],
    validated: dict[str, Any],
) -> dict[str, Any]:
    """The transfer receipt: a pure function of the sealed source, target and nonce."""
    tables = state.report["tables"]
    receipt = {
        "format": RECEIPT_FORMAT,
        "manifest": seal.manifest.hex(),
        "import_id": seal.manifest.hex(),
        "target": seal.target.hex(),
        "nonce": seal.nonce.hex(),
        "prior": seal.prior.hex(),
        "source": {
            "store_id": state.store_id,
            "prior_transaction": seal.detail["prior_transaction"],
            "sealed_transaction": seal.detail["sealed_transaction"],
        },
        "target_store": {"store_id": target_store_id},
        "sources": [
            {"namespace": ns.hex(), "index": h.index, "commit": h.commit.hex()}
            for ns, h in state.sources
        ],
        "generation": generation,
        "counts": {
            "rows": {name: int(t["rows"]) for name, t in sorted(tables.items())},
            "new_rows": inserted,
            "namespaces": len(state.sources),
            "key_value_bytes": state.nbytes,
        },
        "digests": {
            "source_archive_sha256": state.report["archive_digest_sha256"],
            "staged_archive_sha256": validated["archive_digest_sha256"],
        },
    }
    schemas.validate(receipt, "transfer-receipt")
    return receipt
