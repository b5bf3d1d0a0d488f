"""Content ids of a cell store's ``application_content`` rows, as cybergraph checks them.

cybergraph's codec-checked transfer (``src/content.rs`` ``Content::from_stored``,
``src/application/transfer.rs``) decodes every content row: a Blob's key must be
hemera(payload); a Data row must be nox Model B (8 or 64 bytes) and its key its nox id; a Data
pair needs both children to be content rows.  A row of nox's older tagged scheme (9, 33 or 65
bytes, before nox dba9ceb) is refused as cybergraph refuses it (cybergraph 546853d
``src/content.rs`` ``Content::new`` calls nox ``particle_of``, which fails any length but 8 and
64 with ``InvalidLength``; ``from_stored`` turns that into ``ContentError::InvalidData``); the
report still names the scheme (``data_id_scheme``, and the error's detail).
bbg's raw converter (``migrate_redb``) never decodes content; that is content-check mode
``none``.

:class:`ContentIds` verifies the ids on one worker thread in batches (the C hash releases
the GIL, so hashing overlaps the main pass), keeping at most ``MAX_PENDING`` batches in
flight; children are looked up on the calling thread with the source's point lookups (a
batch's children in one call when the source offers ``absent``), or,
for a source without them, spilled to a scratch SQLite file and checked by one merge pass
over the content keys at the end.  Memory stays bounded either way.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from hashing import nox
from migrate.rules.sources import TableAbsent
from migrate.store.scratch import ScratchSorter

CONTENT = "application_content"
#: ``data_content_ids`` lists at most this many keys (the count is in ``content_codecs``).
MAX_LISTED_DATA_IDS = 10_000

Lookup = Callable[[str, bytes], bytes | None]
Record = Callable[[str, str, float], None]

# A batch item: (position, key, codec, payload); a finding: (position, code, detail).
_Item = tuple[int, bytes, int, bytes]
_Finding = tuple[int, str, str]
# A child to look up: (position of the parent row, parent key, child id).
_Need = tuple[int, bytes, bytes]


@dataclass
class DataStats:
    """What the Data rows of one pass showed."""

    rows_by_scheme: dict[str, int] = field(default_factory=dict)
    id_mismatches: int = 0
    blob_id_mismatches: int = 0
    keys: list[str] = field(default_factory=list)

    def count(self, payload: bytes, key: bytes) -> None:
        """Tally one Data row's scheme (by shape) and list its key."""
        scheme = nox.scheme_of(payload) or "neither"
        self.rows_by_scheme[scheme] = self.rows_by_scheme.get(scheme, 0) + 1
        if len(self.keys) < MAX_LISTED_DATA_IDS:
            self.keys.append(key.hex())

    @property
    def scheme(self) -> str:
        """``nox-model-b``, ``nox-tagged-v0``, ``mixed`` or ``none`` (no row of either shape)."""
        present = [s for s in nox.SCHEMES if self.rows_by_scheme.get(s)]
        if not present:
            return "none"
        return present[0] if len(present) == 1 else "mixed"


def _data_detail(key: bytes, payload: bytes, why: str) -> str:
    return f"content {key.hex()}: Data row of {len(payload)} payload bytes: {why}"


def _tagged(node: nox.Node) -> str:
    return (
        f"nox tagged scheme (pre-dba9ceb) {node.kind}: cybergraph Content::from_stored refuses "
        "it (nox particle_of accepts only Model B, 8 or 64 bytes: InvalidLength)"
    )


def _verify(items: list[_Item]) -> tuple[list[_Finding], list[_Need], int, int]:
    """Worker side: (findings, children to look up, Blob mismatches, Data mismatches)."""
    from hashing import hemera

    blobs = [(pos, key, payload) for pos, key, codec, payload in items if codec == 1]
    data = [(pos, key, payload) for pos, key, codec, payload in items if codec == 0]
    findings: list[_Finding] = []
    needs: list[_Need] = []
    blob_bad = data_bad = 0
    # One C call per kind per batch: the GIL is released for all of it.
    blob_ids = hemera.hash_many([p for _, _, p in blobs]) if blobs else []
    for (pos, key, _), blob_id in zip(blobs, blob_ids, strict=True):
        if blob_id != key:
            blob_bad += 1
            findings.append(
                (pos, "content-id-mismatch", f"content {key.hex()}: Blob id is not hemera(payload)")
            )
    identified = nox.identify([p for _, _, p in data]) if data else []
    for (pos, key, payload), (node, got) in zip(data, identified, strict=True):
        if node is None or isinstance(got, nox.NoxError):
            data_bad += 1
            findings.append((pos, "content-id-mismatch", _data_detail(key, payload, str(got))))
            continue
        if node.scheme == nox.TAGGED_V0:
            data_bad += 1
            findings.append((pos, "content-id-mismatch", _data_detail(key, payload, _tagged(node))))
            continue
        if got != key:
            data_bad += 1
            findings.append(
                (pos, "content-id-mismatch", _data_detail(key, payload, f"key != {node.rule}"))
            )
        if node.children is not None:
            needs.extend((pos, key, child) for child in node.children)
    findings.sort(key=lambda f: f[0])
    return findings, needs, blob_bad, data_bad


class ContentIds:
    """Verifies Blob and Data ids of the rows given to :meth:`add`, in batches off-thread.

    ``record(code, detail, position)`` receives each violation at its row's position (a
    missing Data child at its parent's), so the caller can put them back in row order.
    Missing children are recorded last, once every batch is in.
    """

    BATCH_BYTES = 4 * 1024 * 1024
    MAX_PENDING = 2

    def __init__(
        self,
        record: Record,
        stats: DataStats,
        *,
        lookup: Lookup | None,
        content_rows: Callable[[], Iterable[tuple[bytes, bytes]]],
        absent: TableAbsent | None = None,
    ) -> None:
        self._record = record
        self._stats = stats
        self._lookup = lookup
        self._absent = absent if lookup is not None else None
        self._content_rows = content_rows
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="content-ids")
        self._pending: deque[Future[tuple[list[_Finding], list[_Need], int, int]]] = deque()
        self._batch: list[_Item] = []
        self._size = 0
        self._missing: list[tuple[int, str]] = []
        self._spill: _ChildSpill | None = None

    def add(self, position: int, key: bytes, codec: int, payload: bytes) -> None:
        """Queue one content row (codec 0 Data or 1 Blob) for verification."""
        self._batch.append((position, key, codec, payload))
        self._size += len(payload) + 64
        if self._size >= self.BATCH_BYTES:
            self._flush()

    def add_many(self, items: list[_Item], nbytes: int) -> None:
        """:meth:`add` of each ``(position, key, codec, payload)`` of ``items``, whose
        payloads hold ``nbytes`` bytes in all."""
        self._batch += items
        self._size += nbytes + 64 * len(items)
        if self._size >= self.BATCH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._batch:
            self._pending.append(self._pool.submit(_verify, self._batch))
            self._batch, self._size = [], 0
        while len(self._pending) > self.MAX_PENDING:
            self._collect(self._pending.popleft())

    def _collect(self, future: Future[tuple[list[_Finding], list[_Need], int, int]]) -> None:
        findings, needs, blob_bad, data_bad = future.result()
        self._stats.blob_id_mismatches += blob_bad
        self._stats.id_mismatches += data_bad
        for position, code, detail in findings:
            self._record(code, detail, position)
        if self._absent is not None and needs:
            # The same lookups as ``lookup``, the batch's children in one call.
            for i in self._absent(CONTENT, [child for _, _, child in needs]):
                position, parent, child = needs[i]
                self._missing.append((position, _child_detail(parent, child)))
            return
        for position, parent, child in needs:
            if self._lookup is not None:
                if self._lookup(CONTENT, child) is None:
                    self._missing.append((position, _child_detail(parent, child)))
            else:
                if self._spill is None:
                    self._spill = _ChildSpill()
                self._spill.add(position, parent, child)

    def finish(self) -> None:
        """Wait for every batch, resolve the children, and record what was found."""
        try:
            self._flush()
            while self._pending:
                self._collect(self._pending.popleft())
            if self._spill is not None:
                self._missing.extend(self._spill.missing(self._content_rows()))
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
            if self._spill is not None:
                self._spill.close()
        for position, detail in sorted(self._missing):
            self._record("missing-content", detail, position)


def _child_detail(parent: bytes, child: bytes) -> str:
    return f"content {parent.hex()}: Data pair child {child.hex()} not in application_content"


class _ChildSpill:
    """Children to look up, kept in a scratch file (for sources without ``get``)."""

    def __init__(self) -> None:
        self._rows = ScratchSorter(3, prefix="bbg-children-")

    def add(self, position: int, parent: bytes, child: bytes) -> None:
        self._rows.add(child, position, parent)

    def missing(self, content: Iterable[tuple[bytes, Any]]) -> Iterator[tuple[int, str]]:
        """One merge pass of the needed children against the content keys (both sorted)."""
        keys = (bytes(k) for k, _ in content)
        current = next(keys, None)
        for child, position, parent in self._rows.sorted():
            child = bytes(child)
            while current is not None and current < child:
                current = next(keys, None)
            if current != child:
                yield int(position), _child_detail(bytes(parent), child)

    def close(self) -> None:
        self._rows.close()
