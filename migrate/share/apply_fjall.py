"""``apply`` into a store on the Fjall engine (the real BBG database).

The stream is applied exactly as into a SQLite store (:mod:`migrate.share.apply`): one write
transaction of the store API (:class:`~migrate.store.keyspace.FjallTx`), which holds
``bbg.lock`` for its whole life and at commit writes bbg's rows as **one Fjall batch**,
fsynced, with bbg's marker rows, then commits the ledger, imports and receipts in the records
beside the store (``DIR.bbg-migrate``).  What differs:

* **Memory.**  A Fjall batch is held in memory until it commits, so the rows a stream writes
  are bounded: past :data:`MAX_BATCH_BYTES` bytes of keys and values (checked before each
  event, so the batch ends at most one event -- one line, ``max_line`` -- beyond it) the
  stream is refused (ValidationFailed, code ``limit-exceeded``, naming the line) and nothing
  is written.  Apply a longer history in pieces (``tail --since``), or ``restore`` a
  snapshot.  Peak memory is about four times the batch (the overlay's rows, then the encoded
  journal batch): measured 527 MiB peak RSS for a 124 MB batch.  The stream's content keys
  (for the content check) stay in a TEMP table of the records' connection, not in Python
  (:mod:`migrate.store.stream_keys`).
* **Fences.**  bbg keeps a fence in ``bbg_import_v1`` as ``subject ‖ manifest``.  A stream
  tailed from a Fjall store carries both in the fence fact (``subject``, ``manifest``), and
  the fence is written with them; a namespace fenced here already with other values is a
  conflict.  A stream tailed from a SQLite store carries neither, so its fence event is
  applied only when the namespace is fenced here already (a no-op); otherwise the stream is
  refused by name (store error, exit 1) and nothing is written.
* **A new store** (``DIR`` absent or an empty directory, the Fjall engine chosen) is built
  aside in a marked temporary sibling and published by rename only once the stream has
  committed (:class:`~migrate.share.publish.Aside`): a refused stream leaves no store, no
  records and no empty keyspace behind.  Into a store the cyber code wrote (no records of
  ours yet) a refused stream leaves no records either
  (:func:`migrate.store.opening.provisional_store`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bbg_core.errors import Conflict, StoreRefused, UsageError, ValidationFailed
from migrate.share.publish import Aside, clear_abandoned_records, is_free
from migrate.store import Store, bbgdb, open_store
from migrate.store.engine import FJALL, engine_for, engine_of, records_dir
from migrate.store.keyspace import FjallTx, fence_key
from migrate.store.tx import Tx

#: The most bytes (keys + values) one ``apply`` puts into a Fjall store's batch.
MAX_BATCH_BYTES = 128 << 20


def creates_fjall(store_dir: Path) -> bool:
    """True when ``apply`` would create a new store at ``store_dir`` on the Fjall engine."""
    path = Path(store_dir)
    try:
        free = engine_of(path) is None and is_free(path)
    except OSError:
        return False  # unreadable: the store's own checks say why
    return free and engine_for(path, None) == FJALL


def apply_new(store_dir: Path, run: Callable[[Store], dict[str, Any]]) -> dict[str, Any]:
    """Create a Fjall store at ``store_dir`` holding what ``run`` applies (module docstring)."""
    dest = Path(store_dir)
    clear_abandoned_records(dest)
    if records_dir(dest).exists():
        raise UsageError(f"{records_dir(dest)}: already exists beside {dest}, which holds no "
                         "store; move it away to create a store there", path=str(dest))  # fmt: skip
    with Aside(dest, "apply") as aside:
        store = open_store(aside.store, create=True, engine=FJALL)
        try:
            report = run(store)
        finally:
            store.close()
        aside.publish("apply")
    return report


def check_event(tx: Tx, doc: dict[str, Any], line: int, max_batch: int) -> None:
    """Before an event is applied to a Fjall store: the batch bound and the fence rule
    (module docstring); nothing on a SQLite store."""
    if not isinstance(tx, FjallTx):
        return
    if tx.change_bytes > max_batch:
        raise ValidationFailed(
            f"line {line} (event {doc['event']}): the rows applied so far ({tx.change_bytes} "
            f"bytes) exceed the {max_batch}-byte bound of one Fjall batch; nothing was "
            "applied. Apply the stream in pieces (tail --since) or restore a snapshot",
            line=line, event=doc["event"], limit=max_batch,
            errors=[{"code": "limit-exceeded", "detail": f"line {line}: one Fjall batch holds "
                     f"at most {max_batch} bytes"}],
        )  # fmt: skip
    if doc["kind"] == "fence":
        fact = doc["asserted"][0]
        ns = bytes.fromhex(fact["namespace"])
        have = tx.live_get(bbgdb.MIGRATION, fence_key(ns))
        carried = fact.get("subject", "") + fact.get("manifest", "")
        if have is None and not carried:
            raise StoreRefused(
                f"{tx.path}: a fence event (namespace {ns.hex()}) without bbg's subject and "
                "manifest cannot be applied to a store on the Fjall engine: bbg keeps a fence "
                "as subject ‖ manifest, and a stream tailed from a SQLite store does not carry "
                "them. Move the store with snapshot/restore instead",
                path=str(tx.path), namespace=ns.hex(), engine=FJALL,
            )  # fmt: skip
        if have is not None and carried and have.hex() != carried:
            raise Conflict(
                f"{tx.path}: the stream fences namespace {ns.hex()} with subject ‖ manifest "
                f"{carried}, but it is fenced here with {have.hex()}",
                path=str(tx.path), namespace=ns.hex(),
            )  # fmt: skip


__all__ = ["MAX_BATCH_BYTES", "apply_new", "check_event", "creates_fjall"]
