"""Retention with redaction: ``nohistory`` and ``excise``, as operations inside a write
transaction (the verbs with their plans and receipts are :mod:`migrate.share.retention`).

* :func:`drop_history`: delete the history rows of a namespace below its head.  The head, every
  request receipt (so ``resolve`` still answers) and every claim stay; the content rows stay
  too (content is immutable and may be shared; ``excise`` is what removes bytes).  The
  namespace's **boundary** (its first retained index and the head just below it) is recorded in
  ``bbg_retention_v1_boundaries``; links, ``doctor`` and ``tail`` read history from there.
* :func:`excise`: delete content rows by id, or a whole namespace (its history, head, receipts,
  boundary, and the content of its commits that no other history entry names), record the ids
  in ``bbg_retention_v1_excised`` and fence an excised namespace for good.  Nothing else records
  the bytes, so every event ``tail`` derives that carried them is redacted from then on.
* :func:`apply_boundary`: what ``apply`` does with a ``boundary`` event: a namespace that starts
  at a retained boundary (its head set to the head just below it, no history rows).
"""

from __future__ import annotations

from typing import Any

from bbg_core.errors import Conflict, HeadMismatch, StoreError
from fences import namespaces as fence_ns
from migrate.store import ledger
from migrate.store.codec import (
    CONTENT,
    HEADS,
    HISTORY,
    ID_LEN,
    REQUESTS,
    U64_MAX,
    Head,
    commit_items,
    history_key,
    record_payload,
)
from migrate.store.graph import head as live_head
from migrate.store.keyspace import FjallTx
from migrate.store.tx import Tx


def _remove(tx: Tx, table: str, keys: list[bytes]) -> int:
    """Remove ``keys`` from bbg's ``table`` in ``tx``: SQLite deletes the rows; a Fjall store
    writes tombstones (its keyspace is rewritten afterwards so that the bytes are gone,
    :mod:`migrate.store.keyspace_retention`).  How many were there."""
    if isinstance(tx, FjallTx):
        present = [k for k in keys if tx.live_get(table, k) is not None]
        for key in present:
            tx.put_raw(table, key, None)
        return len(present)
    return sum(tx.delete(table, k) for k in keys)


def drop_history(tx: Tx, namespace: bytes) -> dict[str, Any]:
    """Drop ``namespace``'s superseded history rows; what went (``dropped`` 0: nothing)."""
    current = live_head(tx, namespace)
    if current is None:
        raise StoreError(f"{tx.path}: namespace {namespace.hex()} has no head; nothing to drop",
                         path=str(tx.path), namespace=namespace.hex())  # fmt: skip
    prior = ledger.boundary_of(tx, namespace)
    low = 0 if prior is None else prior[0]
    first = current.index
    report = {"namespace": namespace.hex(), "index": first, "commit": current.commit.hex(),
              "dropped": max(first - low, 0)}  # fmt: skip
    if first <= low:
        report["dropped"] = 0
        return report
    below = tx.live_get(HISTORY, history_key(namespace, first - 1))
    if below is None:
        raise StoreError(f"{tx.path}: namespace {namespace.hex()} history index {first - 1} is "
                         "missing; run doctor", path=str(tx.path))  # fmt: skip
    lo, hi = history_key(namespace, low), history_key(namespace, first)
    _remove(tx, HISTORY, [k for k, _ in tx.live_rows(HISTORY, prefix=namespace)
                          if lo <= k < hi])  # fmt: skip
    tx.execute(
        f"INSERT INTO {ledger.BOUNDARIES} (namespace, first_index, prev, tx) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (namespace) DO UPDATE SET first_index = excluded.first_index, "
        "prev = excluded.prev, tx = excluded.tx",
        (namespace, first, Head(first - 1, bytes(below)).encode(), tx.number),
    )
    tx.mark("nohistory", namespace.hex())
    tx.note_event({"kind": "nohistory", **report})
    return report


def apply_boundary(tx: Tx, namespace: bytes, first: int, prev: Head) -> bool:
    """A ``boundary`` event: ``namespace`` starts at ``first`` after ``prev``; True if this
    changed the store (a namespace already at ``prev`` or past the boundary is left alone)."""
    current = live_head(tx, namespace)
    known = ledger.boundary_of(tx, namespace)
    if known is not None and known[0] >= first:
        return False
    if current is not None:
        if current.index >= prev.index:
            at = tx.live_get(HISTORY, history_key(namespace, prev.index))
            if current == prev or at == prev.commit:
                return False  # the receiver holds this history itself (more than the sender)
        raise HeadMismatch(
            f"{tx.path}: namespace {namespace.hex()} is at {current.describe()}; the stream "
            f"starts it at a retained boundary after {prev.describe()}",
            path=str(tx.path), namespace=namespace.hex(),
        )  # fmt: skip
    if first != prev.index + 1 or not 0 < first <= U64_MAX:
        raise StoreError(f"boundary {first} does not follow head {prev.describe()}")
    tx.set_head(namespace, prev)  # absent until now (above)
    # tx 0: received from a stream, not yet marked by its nohistory event (mark_boundary).
    tx.execute(
        f"INSERT INTO {ledger.BOUNDARIES} (namespace, first_index, prev, tx) VALUES (?, ?, ?, 0)",
        (namespace, first, prev.encode()),
    )
    tx.note_head(namespace, None, prev)
    return True


def mark_boundary(tx: Tx, doc: dict[str, Any]) -> bool:
    """A ``nohistory`` event whose boundary a ``boundary`` event already set up here: record
    the event (as the sender's ledger has it); True if it was not recorded yet."""
    namespace = bytes.fromhex(doc["namespace"])
    cur = tx.execute(
        f"UPDATE {ledger.BOUNDARIES} SET tx = ? WHERE namespace = ? AND first_index = ? "
        "AND tx = 0",
        (tx.number, namespace, int(doc["index"])),
    )
    if not cur.rowcount:
        return False
    tx.mark("nohistory", namespace.hex())
    tx.note_event({"kind": "nohistory", **doc})
    return True


def excise(tx: Tx, contents: list[bytes], namespaces: list[bytes]) -> dict[str, Any]:
    """Remove ``contents`` (ids) and ``namespaces``; what went (ids and counts, no bytes).
    A SQLite store also fences an excised namespace; a Fjall store cannot (bbg's fence holds
    a transfer's subject and manifest), and ``apply`` refuses it from the ledger alike
    (:func:`refuse_excised`)."""
    gone_contents: list[str] = []
    gone_namespaces: list[dict[str, Any]] = []
    for ns in sorted(set(namespaces)):
        if ledger.is_excised(tx, "namespace", ns) is not None:
            continue
        current = live_head(tx, ns)
        entries = list(tx.live_rows(HISTORY, prefix=ns))
        history = _remove(tx, HISTORY, [k for k, _ in entries])
        requests = _remove(tx, REQUESTS, [k for k, _ in tx.live_rows(REQUESTS, prefix=ns)])
        _remove(tx, HEADS, [ns])
        tx.execute(f"DELETE FROM {ledger.BOUNDARIES} WHERE namespace = ?", (ns,))
        commits = sorted({bytes(v) for _, v in entries})
        remaining = {bytes(v) for _, v in tx.live_rows(HISTORY)}
        contents.extend(cid for cid in commits if cid not in remaining)
        contents.extend(_unshared_payloads(tx, ns, commits))
        tx.execute(f"INSERT INTO {ledger.EXCISED} (what, id, tx) VALUES ('namespace', ?, ?)",
                   (ns, tx.number))  # fmt: skip
        if not isinstance(tx, FjallTx):
            fence_ns.fence(tx, ns, import_id="excise",
                           reason=f"excised at transaction {tx.number}")  # fmt: skip
        gone_namespaces.append({"namespace": ns.hex(), "history": history, "requests": requests,
                                "head": None if current is None else current.index})  # fmt: skip
    for cid in sorted(set(contents)):
        if ledger.is_excised(tx, "content", cid) is not None:
            continue
        _remove(tx, CONTENT, [cid])
        tx.execute(f"INSERT INTO {ledger.EXCISED} (what, id, tx) VALUES ('content', ?, ?)",
                   (cid, tx.number))  # fmt: skip
        gone_contents.append(cid.hex())  # recorded even if absent: apply must refuse it
    if not gone_contents and not gone_namespaces:
        return {"contents": [], "namespaces": []}
    tx.mark("excise")
    tx.note_event({"kind": "excise", "contents": gone_contents,
                   "namespaces": [n["namespace"] for n in gone_namespaces]})  # fmt: skip
    return {"contents": gone_contents, "namespaces": gone_namespaces}


def _named_by(tx: Tx, cid: bytes) -> list[bytes]:
    """The payload ids content row ``cid`` names: a commit record's items, an item record's
    raw payload, and the raw payloads of those items (:func:`commit_items`)."""
    value = tx.live_get(CONTENT, cid)
    if value is None:
        return []
    items = commit_items(value)
    out = items + record_payload(value)
    for item in items:
        item_value = tx.live_get(CONTENT, item)
        if item_value is not None:
            out += record_payload(item_value)
    return out


def _live_commits(tx: Tx) -> set[bytes]:
    """Every commit a history entry or a request receipt still names."""
    out = {bytes(value) for _, value in tx.live_rows(HISTORY)}
    out.update(bytes(v[40:72]) for _, v in tx.live_rows(REQUESTS) if len(v) == 72)
    return out


def _unshared_payloads(tx: Tx, namespace: bytes, commits: list[bytes]) -> list[bytes]:
    """The item and record payloads of an excised namespace (named by its commits, or written
    by transactions that moved this namespace's head alone) that nothing live still needs:
    no remaining history entry or receipt has them as its commit or names them.  Content is
    shared by id, so a payload another namespace still references stays.  Reads every
    remaining commit once (``excise`` is rare)."""
    found: set[bytes] = set()
    for cid in commits:
        found.update(_named_by(tx, cid))
    found.update(ledger.contents_of_lone_moves(tx, namespace))
    if not found:
        return []
    live: set[bytes] = set()
    for cid in _live_commits(tx):
        if cid in found:
            live.add(cid)
        live.update(_named_by(tx, cid))
    return sorted(c for c in found - live if tx.live_get(CONTENT, c) is not None)


def redacted_transactions(tx: Tx, contents: list[bytes], namespaces: list[bytes]) -> list[int]:
    """The ledger transactions whose events the excision of ``contents`` and ``namespaces``
    redacts (read before it runs)."""
    found: set[int] = set()
    wanted = set(contents)
    for cid in contents:
        found.update(ledger.txs_recording(tx, cid))
    hits = [bytes(k) for k, v in tx.live_rows(HISTORY) if bytes(v) in wanted] if wanted else []
    for key in hits:
        ns, index = key[:ID_LEN], int.from_bytes(key[ID_LEN:], "big")
        for t, before, after in ledger.moves_of(tx, ns):
            low = -1 if before is None else Head.decode(bytes(before)).index
            if low < index <= Head.decode(bytes(after)).index:
                found.add(int(t))
    for ns in namespaces:
        found.update(ledger.txs_moving(tx, ns))
    return sorted(found)


def refuse_excised(tx: Tx, what: str, ident: bytes, line_event: str) -> None:
    """Conflict if ``ident`` was excised here (``apply`` of an older, unredacted stream)."""
    when = ledger.is_excised(tx, what, ident)
    if when is not None:
        raise Conflict(
            f"{tx.path}: {what} {ident.hex()} was excised from this store at transaction {when}; "
            f"{line_event} would bring it back, so the stream is refused",
            path=str(tx.path), what=what, id=ident.hex(), excised_tx=when,
        )  # fmt: skip
