"""``nohistory`` and ``excise``: retention with redaction, as sealed operations.

Each verb runs in ONE write transaction of the store (its ledger row, kind ``nohistory`` or
``excise``, records what went: ids and counts, never the bytes) and returns a receipt.
``dry_run`` runs exactly the same code in the same transaction and then rolls it back, so the
plan is what the operation would do, to the row (it takes the write lock for a moment and
writes nothing).  The store-level operations are :mod:`migrate.store.retention`.

What neither can reach, and every receipt says so: backups, snapshots and event streams
written before the operation (collectors of ``tail --follow``, files, source control) still
hold what was removed; copies made by ``apply`` keep it until the same operation is applied
there (its event travels in the stream).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bbg_core.errors import ValidationFailed
from migrate.store import keyspace_retention, ledger, open_store
from migrate.store import retention as ops
from migrate.store.codec import CONTENT, HISTORY, ID_LEN
from migrate.store.engine import FJALL, engine_of

CANNOT_REACH = [
    "backups taken before this transaction (bbg-migrate backup, file copies, replicas)",
    "snapshots written before this transaction",
    "event streams already written: tail --follow collectors, files, source control",
    "stores this one was copied into by apply (until this operation's event is applied there)",
]


def _ids(values: list[str], what: str) -> list[bytes]:
    out = []
    for value in values:
        try:
            raw = bytes.fromhex(value)
        except ValueError:
            raw = b""
        if len(raw) != ID_LEN:
            raise ValidationFailed(
                f"{value!r} is not a {what} id (64 hex digits)",
                errors=[{"code": "bad-id", "detail": f"{what} {value!r}"}],
            )
        out.append(raw)
    return out


def nohistory(store_dir: Path, namespaces: list[str], *, dry_run: bool = False) -> dict[str, Any]:
    """Drop the superseded history rows of ``namespaces`` (hex), keeping their heads, every
    receipt and every claim; the plan (``dry_run``) or the receipt."""
    wanted = _ids(namespaces, "namespace")
    with _retention_store(store_dir, dry_run) as store:
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
            report = {
                "kind": "bbg-nohistory",
                "dry_run": dry_run,
                "namespaces": done,
                "dropped": sum(d["dropped"] for d in done),
            }
    return _sealed(report, tx, dry_run)


@contextmanager
def _retention_store(store_dir: Path, dry_run: bool) -> Iterator[Any]:
    """The store a verb runs on.  On the Fjall engine, once the verb's transaction committed
    (and not for a dry run), the keyspace is rewritten so that the removed bytes are gone
    (:mod:`migrate.store.keyspace_retention`); what a killed rewrite left is removed first."""
    fjall = engine_of(store_dir) == FJALL and not dry_run
    if fjall:
        keyspace_retention.sweep_rewrites(store_dir)
    with open_store(store_dir) as store:
        yield store
        if fjall:
            keyspace_retention.rewrite(store)


def _sealed(report: dict[str, Any], tx: Any, dry_run: bool) -> dict[str, Any]:
    wrote = not dry_run and tx.last_written is not None
    return {
        **report,
        "tx": tx.last_written if wrote else None,
        "at": tx.at if wrote else None,
        "cannot_reach": CANNOT_REACH,
    }


def excise(
    store_dir: Path, contents: list[str], namespaces: list[str], *, dry_run: bool = False
) -> dict[str, Any]:
    """Remove content rows (ids) and whole namespaces, and redact every event that carried
    them; the plan (``dry_run``) or the receipt."""
    cids, nss = _ids(contents, "content"), _ids(namespaces, "namespace")
    if not cids and not nss:
        raise ValidationFailed("name at least one --content ID or --namespace NS",
                               errors=[{"code": "nothing-to-excise", "detail": ""}])  # fmt: skip
    with _retention_store(store_dir, dry_run) as store:
        with store.transaction(kind="excise") as tx:
            # An id this store already excised is no error: a rerun after a kill finishes the
            # job (the excision committed, or it did not and runs now).
            for cid in cids:
                if tx.live_get(CONTENT, cid) is None and ledger.is_excised(
                        tx, "content", cid) is None:  # fmt: skip
                    raise ValidationFailed(
                        f"content {cid.hex()} is not in {store_dir}",
                        errors=[{"code": "unknown-content", "detail": cid.hex()}],
                    )
            for ns in nss:
                if ledger.is_excised(tx, "namespace", ns) is not None:
                    continue
                if store.head(ns) is None and next(
                        tx.live_rows(HISTORY, prefix=ns), None) is None:  # fmt: skip
                    raise ValidationFailed(
                        f"namespace {ns.hex()} is not in {store_dir}",
                        errors=[{"code": "unknown-namespace", "detail": ns.hex()}],
                    )
            redacted = ops.redacted_transactions(tx, cids, nss)
            done = ops.excise(tx, list(cids), list(nss))
            if dry_run:
                tx.discard()
            report = {
                "kind": "bbg-excise",
                "dry_run": dry_run,
                "contents": done["contents"],
                "namespaces": done["namespaces"],
                "redacted_transactions": redacted,
            }
    return _sealed(report, tx, dry_run)
