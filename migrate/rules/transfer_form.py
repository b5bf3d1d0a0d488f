"""bbg's transfer form: the manifest and the copy cursor (cyberia-to/bbg@36cc420b
``rs/src/storage/application/transfer.rs``), shared by the BBG → BBG transfer
(:mod:`migrate.transfer`) and a mapped run, which stages its origins in that form pinned to
the subject (:mod:`migrate.pipeline.subject`).

The manifest (``from_archive``, L50-60): hemera over ``bbg/application-transfer/1\\0`` ‖
target ‖ key (nonce) ‖ prior ‖ for each pinned namespace in key order: namespace ‖ head index
u64 LE ‖ head commit.

The cursor (``Cursor``, L281-304):

``table u8 ‖ len(after) u8 ‖ rows u64 LE ‖ bytes u64 LE ‖ after`` — the table ordinal
(0..4 in archive order: content, claims, requests, history, heads; 5 = every table copied),
the last key copied from that table (absent at a table's start), and the running totals of
rows and key+value bytes copied.  It is committed with each page (``bbg_import_v1_cursors``),
so a transfer stopped anywhere resumes after the last committed page.
"""

from __future__ import annotations

from dataclasses import dataclass

from bbg_core.errors import StoreCorrupt
from migrate.store.codec import MAX_KEY_LEN, Head

DONE = 5  # the table ordinal past the last table
_FIXED = 18
SEAL_DOMAIN = b"bbg/application-transfer/1\x00"
Sources = list[tuple[bytes, Head]]


def manifest_of(target: bytes, nonce: bytes, prior: bytes, sources: Sources) -> bytes:
    """The transfer manifest (bbg ``TransferSource::from_archive``), over sorted sources."""
    from hashing import hemera

    h = hemera.Hasher()
    h.update(SEAL_DOMAIN)
    h.update(target + nonce + prior)
    for namespace, head in sources:
        h.update(namespace + head.index.to_bytes(8, "little") + head.commit)
    return h.digest()


@dataclass(frozen=True)
class Cursor:
    """Where the copy stands: next table, last key copied from it, totals so far."""

    table: int = 0
    after: bytes | None = None
    rows: int = 0
    nbytes: int = 0

    @property
    def complete(self) -> bool:
        """True once every table was copied."""
        return self.table == DONE

    def encode(self) -> bytes:
        """The cursor's bytes (bbg's layout)."""
        after = self.after or b""
        return (
            bytes([self.table, len(after)])
            + self.rows.to_bytes(8, "little")
            + self.nbytes.to_bytes(8, "little")
            + after
        )

    @classmethod
    def decode(cls, raw: bytes) -> Cursor:
        """Parse cursor bytes; StoreCorrupt for anything bbg's decoder refuses."""
        if (
            len(raw) < _FIXED
            or raw[0] > DONE
            or raw[1] > MAX_KEY_LEN
            or len(raw) != _FIXED + raw[1]
        ):
            raise StoreCorrupt(
                f"transfer cursor of {len(raw)} bytes is malformed ({raw[:_FIXED].hex()}…)",
                cursor=raw.hex(),
            )
        return cls(
            table=raw[0],
            after=raw[_FIXED:] if raw[1] else None,
            rows=int.from_bytes(raw[2:10], "little"),
            nbytes=int.from_bytes(raw[10:18], "little"),
        )

    def to_json(self) -> dict[str, object]:
        """The cursor in reports."""
        return {
            "table": self.table,
            "after": None if self.after is None else self.after.hex(),
            "rows": self.rows,
            "bytes": self.nbytes,
            "complete": self.complete,
        }
