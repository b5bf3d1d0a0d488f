"""Test helpers: deterministic ids and a builder of valid commits."""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.store import Head, Store

DATA = Path(__file__).parent / "data"


def h(*parts: bytes | str | int) -> bytes:
    """SHA-256 of the parts (a stand-in id function for tests)."""
    d = hashlib.sha256()
    for p in parts:
        d.update(
            p.encode()
            if isinstance(p, str)
            else p
            if isinstance(p, bytes)
            else p.to_bytes(8, "little")
        )
    return d.digest()


@dataclass
class Write:
    """One GraphPort commit's arguments."""

    namespace: bytes
    request: bytes
    expected: Head | None
    new_head: Head
    contents: dict[bytes, bytes]
    claims: dict[bytes, bytes] = field(default_factory=dict)

    @property
    def fingerprint(self) -> bytes:
        return h(
            self.namespace,
            self.request,
            self.expected.encode() if self.expected else b"\0",
            self.new_head.encode(),
            *sorted(self.contents),
            *(k + v for k, v in sorted(self.claims.items())),
        )

    def apply_once(self, store: Store) -> Head:
        return store.commit_once(
            self.namespace,
            self.request,
            self.expected,
            self.new_head,
            self.contents,
            self.claims,
            self.fingerprint,
        )

    def apply(self, store: Store) -> Head:
        return store.commit(
            self.namespace,
            self.request,
            self.expected,
            self.new_head,
            self.contents,
            self.claims,
            self.fingerprint,
        )


def birth(seed: str | int) -> Write:
    """The index-0 write of a fresh namespace."""
    payload = b"\x01birth/" + str(seed).encode()
    ns = h(payload)
    return Write(ns, h("req", ns, 0), None, Head(0, ns), {ns: payload})


def follow(prev: Write | Head, namespace: bytes, tag: str | int = "") -> Write:
    """The next write after ``prev`` (a Write or a head) in ``namespace``."""
    head = prev.new_head if isinstance(prev, Write) else prev
    payload = b"\x01commit/" + namespace + head.commit + str(tag).encode()
    commit = h(payload)
    event = b"\x00event/" + commit
    return Write(
        namespace,
        h("req", namespace, head.index + 1, str(tag)),
        head,
        Head(head.index + 1, commit),
        {commit: payload, h(event): event},
    )


def load_rows(name: str) -> dict[str, Any]:
    """A row-set fixture from ``data/`` with keys/values as bytes."""
    with gzip.open(DATA / f"{name}.rows.json.gz", "rt") as f:
        doc: dict[str, Any] = json.load(f)
    doc["tables"] = {
        t: [(bytes.fromhex(k), bytes.fromhex(v)) for k, v in rows]
        for t, rows in doc["tables"].items()
    }
    return doc


class DictTables:
    """A plain in-memory five-table source (no ``get``: exercises the spill index)."""

    def __init__(self, tables: dict[str, list[tuple[bytes, bytes]]]) -> None:
        self.tables = {t: sorted(rows) for t, rows in tables.items()}

    def rows(self, table: str) -> list[tuple[bytes, bytes]]:
        return self.tables.get(table, [])

#: A fence's subject and manifest (bbg keeps ``subject ‖ manifest`` as its value).
FENCED = {"subject": b"\x5a" * 32, "manifest": b"\x6b" * 32}
