"""Test stores for the share suite, built only through the store API.

* :func:`cell_small_store`: the legacy cell-small rows (tests/store/data, dumped by the real
  redb crate) staged and activated like a migration: 50 history entries in 3 namespaces, 55
  content rows no history entry names, 12 claims, a seal, a receipt and a journal record.
* :func:`graph_store`: GraphPort commits in several namespaces, some carrying extra content
  and a claim, plus a fenced namespace and a promoted generation.
"""

from __future__ import annotations

from pathlib import Path

from fences import generations, namespaces
from hashing import hemera
from migrate.store import Head, Store, imports, open_store
from migrate.store.codec import ARCHIVE_ORDER
from tests.store.helpers import Write, h, load_rows


def activate_rows(store: Store, rows: dict[str, list[tuple[bytes, bytes]]], iid: str) -> None:
    """Stage ``rows`` as import ``iid`` and activate them, like a plain conversion."""
    with store.transaction() as tx:
        imports.begin_import(tx, iid)
        imports.record_seal(tx, iid, {"source": iid, "sha256": h(iid).hex()})
        for ns in {k[:32] for k, _ in rows.get("application_heads", [])}:
            imports.stage_namespace(tx, iid, ns)
    for table in ARCHIVE_ORDER:
        with store.transaction() as tx:
            imports.stage_rows(tx, iid, table, rows.get(table, []), stream=table, cursor=b"end")
    with store.transaction() as tx:
        counts = imports.activate(tx, iid)
        generations.settle(tx)
        imports.record_receipt(tx, iid, {"import": iid, "inserted": counts})
        imports.journal(tx, iid, "activate", {"ok": True})


def cell_small_store(directory: Path) -> Path:
    """A store holding the cell-small legacy rows (see the module docstring)."""
    with open_store(directory, create=True) as store:
        activate_rows(store, load_rows("cell-small")["tables"], "cell-small")
    return directory


def blob(payload: bytes) -> tuple[bytes, bytes]:
    """(id, stored value) of a Blob: id = hemera(payload), as doctor and inspect verify."""
    return hemera.hash(payload), b"\x01" + payload


def birth(seed: str) -> Write:
    """The index-0 write of a fresh namespace (its birth record is a Blob)."""
    ns, value = blob(b"birth/" + seed.encode())
    return Write(ns, h("req", ns, 0), None, Head(0, ns), {ns: value})


def follow(prev: Write | Head, namespace: bytes, tag: str) -> Write:
    """The next write after ``prev``: a commit record plus one extra record it carries."""
    head = prev.new_head if isinstance(prev, Write) else prev
    commit, value = blob(b"commit/" + namespace + head.commit + tag.encode())
    record_id, record = blob(b"record/" + commit)
    return Write(
        namespace,
        h("req", namespace, head.index + 1, tag),
        head,
        Head(head.index + 1, commit),
        {commit: value, record_id: record},
    )


def graph_writes(namespaces_n: int = 3, commits: int = 4, tag: str = "g") -> list[Write]:
    """Writes for ``namespaces_n`` namespaces of ``commits`` commits after their births."""
    out: list[Write] = []
    for n in range(namespaces_n):
        w = birth(f"{tag}-{n}")
        out.append(w)
        for i in range(commits):
            w = follow(w, w.namespace, f"{tag}-{n}-{i}")
            if i == 1:  # one commit per namespace also takes a unique claim
                w.claims[h("claim", tag, n)] = h("holder", tag, n)
            out.append(w)
    return out


def graph_store(directory: Path, *, fence: bool = True) -> Path:
    """A store written through GraphPort (see the module docstring)."""
    with open_store(directory, create=True) as store:
        for w in graph_writes():
            w.apply(store)
        if fence:
            with store.transaction() as tx:
                namespaces.fence(tx, birth("g-2").namespace, import_id="moved", reason="test")
                generations.promote(tx, "neuron-v1")
    return directory
