"""``nohistory`` and ``excise`` on a store on the Fjall engine: the verbs of
:mod:`migrate.share.retention` (same checks, plans and receipts), then the keyspace rewritten
so that the removed bytes are physically gone (:mod:`migrate.store.keyspace_retention`).
A dry run writes nothing and rewrites nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bbg_core.errors import ValidationFailed
from migrate.store import keyspace_retention as ops
from migrate.store import ledger, open_store


def _rewritten(store: Any, dry_run: bool) -> None:
    if not dry_run:
        ops.rewrite(store)


def nohistory(store_dir: Path, wanted: list[bytes], *, dry_run: bool
              ) -> tuple[dict[str, Any], Any]:  # fmt: skip
    """The Fjall twin of :func:`migrate.share.retention.nohistory` (ids parsed already): the
    report and the transaction, which the caller seals into the receipt."""
    if not dry_run:
        ops.sweep_rewrites(store_dir)
    with open_store(store_dir) as store:
        with store.transaction(kind="nohistory") as tx:
            done = []
            for ns in sorted(set(wanted)):
                if store.head(ns) is None:
                    raise ValidationFailed(
                        f"namespace {ns.hex()} has no head in {store_dir}; nothing to keep or "
                        "drop", errors=[{"code": "unknown-namespace", "detail": ns.hex()}],
                    )  # fmt: skip
                done.append(ops.drop_history(tx, ns))
            if dry_run:
                tx.discard()
            report = {"kind": "bbg-nohistory", "dry_run": dry_run, "namespaces": done,
                      "dropped": sum(d["dropped"] for d in done)}  # fmt: skip
        _rewritten(store, dry_run)
    return report, tx


def excise(store_dir: Path, cids: list[bytes], nss: list[bytes], *, dry_run: bool
           ) -> tuple[dict[str, Any], Any]:  # fmt: skip
    """The Fjall twin of :func:`migrate.share.retention.excise` (ids parsed already): the
    report and the transaction, which the caller seals into the receipt."""
    if not dry_run:
        ops.sweep_rewrites(store_dir)
    with open_store(store_dir) as store:
        with store.transaction(kind="excise") as tx:
            for cid in cids:
                if tx.live_get("application_content", cid) is None and ledger.is_excised(
                        tx, "content", cid) is None:  # fmt: skip
                    raise ValidationFailed(
                        f"content {cid.hex()} is not in {store_dir}",
                        errors=[{"code": "unknown-content", "detail": cid.hex()}],
                    )
            for ns in nss:
                if ledger.is_excised(tx, "namespace", ns) is not None:
                    continue
                if store.head(ns) is None and next(
                        tx.live_rows("application_history", prefix=ns), None) is None:  # fmt: skip
                    raise ValidationFailed(
                        f"namespace {ns.hex()} is not in {store_dir}",
                        errors=[{"code": "unknown-namespace", "detail": ns.hex()}],
                    )
            redacted = ops.redacted_transactions(tx, cids, nss)
            done = ops.excise(tx, list(cids), list(nss))
            if dry_run:
                tx.discard()
            report = {"kind": "bbg-excise", "dry_run": dry_run,
                      "contents": done["contents"], "namespaces": done["namespaces"],
                      "redacted_transactions": redacted}  # fmt: skip
        _rewritten(store, dry_run)
    return report, tx
