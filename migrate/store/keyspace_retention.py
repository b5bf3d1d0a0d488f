"""``nohistory`` and ``excise`` on a store on the Fjall engine, with the bytes physically gone.

A Fjall tombstone hides a row but leaves its bytes in the segments and journals that held it,
so each verb here runs in two steps, both under ``bbg.lock`` (held by the store handle, as
bbg's owner holds it):

1. **the transaction**: the same plan as on SQLite (:mod:`migrate.store.retention`; the rows
   the verb removes become tombstones in one batch, its ledger row records ids and counts,
   never the bytes); a dry run rolls it back and stops there;
2. **the rewrite** (:func:`rewrite`): the whole keyspace is read as one snapshot (every
   partition's live rows, bbg's markers among them) and built again aside as bulk segments
   (:func:`~migrate.store.fjall.writer.build_keyspace`: every row at seqno 0, empty journals)
   inside a marked temporary sibling ``.NAME.bbg-rewrite-*``; its ``bbg.lock`` is locked,
   and the new directory is exchanged with the store in one ``renameat2(RENAME_EXCHANGE)``,
   so the path always holds the old store or the new one.  The old one, now in the
   temporary sibling, is removed; the records database is vacuumed (no free page keeps a
   removed row).  A crash before the exchange leaves the old store (tombstones in place once
   step 1 committed); after it, the new store and an abandoned temporary sibling.  A rerun of
   the same verb finds its ids already excised (or the boundary already set), removes what a
   killed rewrite left (:func:`bbg_core.files.sweep`) and rewrites again.

The rewrite renumbers the history into one batch: every row has seqno 0 afterwards, so a
``tail --since`` position taken on this store before it no longer applies (read from the
start again).  Unlike SQLite, excising a namespace writes no bbg fence (a Fjall fence holds a
transfer's subject and manifest); ``apply`` refuses the excised namespace all the same, from
the ledger (:func:`migrate.store.retention.refuse_excised`).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
from pathlib import Path
from typing import Any

from bbg_core.errors import StoreError
from bbg_core.files import fsync_dir, fsync_file, owned_tempdir, sweep
from migrate.store import bbgdb, ledger
from migrate.store.codec import (
    CONTENT,
    HEADS,
    HISTORY,
    ORDINAL,
    REQUESTS,
    Head,
    commit_items,
    history_key,
    record_payload,
)
from migrate.store.fjall import build_keyspace, open_keyspace
from migrate.store.graph import head as live_head
from migrate.store.tx import Tx

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> None:
    """Swap the directories at ``a`` and ``b`` atomically (Linux ``renameat2``)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b),
                      _RENAME_EXCHANGE) != 0:  # fmt: skip
        err = ctypes.get_errno()
        raise OSError(err, f"renameat2(RENAME_EXCHANGE) {a} <-> {b}: {os.strerror(err)}")


def _prefix(store_dir: Path) -> str:
    return f".{store_dir.name}.bbg-rewrite-"


def sweep_rewrites(store_dir: Path) -> list[str]:
    """Remove what a killed rewrite of ``store_dir`` left beside it."""
    return sweep(store_dir.parent, _prefix(store_dir))


def rewrite(store: Any) -> dict[str, Any]:
    """Rebuild the keyspace of ``store`` (an open Fjall store handle: it holds ``bbg.lock``)
    from its live rows and swap it into place, then vacuum its records (module docstring).
    What it wrote: rows and bytes per partition."""
    store_dir = Path(store.path)
    sweep_rewrites(store_dir)
    parent = store_dir.parent
    with owned_tempdir(parent, _prefix(store_dir)) as work:
        lock_fd = -1
        try:
            new = work / "keyspace"
            with open_keyspace(store_dir) as ks:
                done = build_keyspace(new, {name: ks.scan(name) for name in ks.partitions()},
                                      dir_mode=bbgdb.DIR_MODE)  # fmt: skip
            lock = new / bbgdb.LOCK_NAME
            lock_fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                              bbgdb.LOCK_MODE)  # fmt: skip
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fsync_file(lock)
            fsync_dir(new)
            _exchange(new, store_dir)
            fsync_dir(parent)
            fsync_dir(work)
            shutil.rmtree(work / "keyspace")
            fsync_dir(work)
            store._conn.execute("VACUUM")
            return done
        finally:
            if lock_fd >= 0:
                os.close(lock_fd)
            shutil.rmtree(work, ignore_errors=True)


def _tombstone(tx: Any, table: str, key: bytes) -> None:
    tx.put_raw(table, key, None)


def drop_history(tx: Any, namespace: bytes) -> dict[str, Any]:
    """:func:`migrate.store.retention.drop_history` on a Fjall transaction."""
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
    for key, _ in list(tx.live_rows(HISTORY, prefix=namespace)):
        if lo <= key < hi:
            _tombstone(tx, HISTORY, key)
    tx.execute(
        f"INSERT INTO {ledger.BOUNDARIES} (namespace, first_index, prev, tx) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (namespace) DO UPDATE SET first_index = excluded.first_index, "
        "prev = excluded.prev, tx = excluded.tx",
        (namespace, first, Head(first - 1, below).encode(), tx.number),
    )
    tx.mark("nohistory", namespace.hex())
    tx.note_event({"kind": "nohistory", **report})
    return report


def _named_by(tx: Any, cid: bytes) -> list[bytes]:
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


def _live_commits(tx: Any) -> set[bytes]:
    """Every commit a history entry or a request receipt still names."""
    out = {value for _, value in tx.live_rows(HISTORY)}
    out.update(value[40:72] for _, value in tx.live_rows(REQUESTS) if len(value) == 72)
    return out


def _unshared_payloads(tx: Any, namespace: bytes, commits: list[bytes]) -> list[bytes]:
    """:func:`migrate.store.retention._unshared_payloads` on a Fjall transaction."""
    found: set[bytes] = set()
    for cid in commits:
        found.update(_named_by(tx, cid))
    for (key,) in tx.rows(
        f"SELECT key FROM {ledger.ROWS} WHERE tbl = ? AND tx IN (SELECT tx FROM {ledger.HEADS} "
        "GROUP BY tx HAVING count(*) = 1 AND min(namespace) = ?)", (ORDINAL[CONTENT], namespace),
    ):  # fmt: skip
        found.add(bytes(key))
    if not found:
        return []
    live: set[bytes] = set()
    for cid in _live_commits(tx):
        if cid in found:
            live.add(cid)
        live.update(_named_by(tx, cid))
    return sorted(c for c in found - live if tx.live_get(CONTENT, c) is not None)


def excise(tx: Any, contents: list[bytes], namespaces: list[bytes]) -> dict[str, Any]:
    """:func:`migrate.store.retention.excise` on a Fjall transaction (no fence: module
    docstring)."""
    gone_contents: list[str] = []
    gone_namespaces: list[dict[str, Any]] = []
    for ns in sorted(set(namespaces)):
        if ledger.is_excised(tx, "namespace", ns) is not None:
            continue
        current = live_head(tx, ns)
        history = list(tx.live_rows(HISTORY, prefix=ns))
        requests = list(tx.live_rows(REQUESTS, prefix=ns))
        for key, _ in history:
            _tombstone(tx, HISTORY, key)
        for key, _ in requests:
            _tombstone(tx, REQUESTS, key)
        if current is not None:
            _tombstone(tx, HEADS, ns)
        tx.execute(f"DELETE FROM {ledger.BOUNDARIES} WHERE namespace = ?", (ns,))
        commits = sorted({value for _, value in history})
        remaining = {value for _, value in tx.live_rows(HISTORY)}
        contents.extend(cid for cid in commits if cid not in remaining)
        contents.extend(_unshared_payloads(tx, ns, commits))
        tx.execute(f"INSERT INTO {ledger.EXCISED} (what, id, tx) VALUES ('namespace', ?, ?)",
                   (ns, tx.number))  # fmt: skip
        gone_namespaces.append({"namespace": ns.hex(), "history": len(history),
                                "requests": len(requests),
                                "head": None if current is None else current.index})  # fmt: skip
    for cid in sorted(set(contents)):
        if ledger.is_excised(tx, "content", cid) is not None:
            continue
        if tx.live_get(CONTENT, cid) is not None:
            _tombstone(tx, CONTENT, cid)
        tx.execute(f"INSERT INTO {ledger.EXCISED} (what, id, tx) VALUES ('content', ?, ?)",
                   (cid, tx.number))  # fmt: skip
        gone_contents.append(cid.hex())  # recorded even if absent: apply must refuse it
    if not gone_contents and not gone_namespaces:
        return {"contents": [], "namespaces": []}
    tx.mark("excise")
    tx.note_event({"kind": "excise", "contents": gone_contents,
                   "namespaces": [n["namespace"] for n in gone_namespaces]})  # fmt: skip
    return {"contents": gone_contents, "namespaces": gone_namespaces}


def redacted_transactions(tx: Tx, contents: list[bytes], namespaces: list[bytes]) -> list[int]:
    """The ledger transactions whose events the excision redacts (read before it runs)."""
    found: set[int] = set()
    wanted = set(contents)
    for cid in contents:
        for (t,) in tx.rows(f"SELECT tx FROM {ledger.ROWS} WHERE key = ?", (cid,)):
            found.add(int(t))
    hits = [k for k, v in tx.live_rows(HISTORY) if v in wanted] if wanted else []
    for key in hits:
        ns, index = key[:32], int.from_bytes(key[32:], "big")
        for t, before, after in tx.rows(
            f"SELECT tx, before, after FROM {ledger.HEADS} WHERE namespace = ?", (ns,)
        ):
            low = -1 if before is None else Head.decode(bytes(before)).index
            if low < index <= Head.decode(bytes(after)).index:
                found.add(int(t))
    for ns in namespaces:
        for (t,) in tx.rows(f"SELECT tx FROM {ledger.HEADS} WHERE namespace = ?", (ns,)):
            found.add(int(t))
    return sorted(found)
