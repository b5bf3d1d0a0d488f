"""A legacy Signal log or frame log as the five-table rows it becomes in BBG (a TextArchive
becomes cybergraph's observations: :mod:`migrate.pipeline.legacy_text`, built on this).

The rows of one source (records in :mod:`migrate.pipeline.legacy_records`, ids in
:mod:`migrate.pipeline.identity`), for its namespace ``ns`` and items 1..N:

| table | rows |
|---|---|
| content | ns → Blob(import record); per item: raw id → Blob(raw bytes), commit → Blob(record) |
| requests | ns ‖ request(i) → fingerprint(i) ‖ (i, commit i), for i = 0..N |
| history | ns ‖ i → commit i (commit 0 = ns) |
| heads | ns → (N, commit N) |
| claims | none |

:class:`LegacyImport` keeps only compact per-item arrays (span, raw id, commit id: 80 bytes
an item) and rebuilds an item's rows from its re-read raw bytes when they are needed.  The
archive digest needs every table in key order, so :class:`LegacyRows` sorts the content and
request keys in memory: about 250 more bytes per item while the digest is taken.  The format
limits bound that: a log has at most 65,536 events (≈ 20 MB), an archive at most 1,000,000
lines (≈ 330 MB); ``run`` into a new store (:mod:`migrate.pipeline.fresh_legacy`) also keeps
the content keys it loaded, 32 bytes a content row, while it checks the links.

Staging goes item by item (:class:`LegacySource`): a page holds whole or partial items in
history order, and its cursor is ``index u64 BE ‖ rows of that item staged (u8)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, Self

from bbg_core.closing import Closing
from bbg_core.errors import SourceError, ValidationFailed
from migrate.job import MAX_PAGE_BYTES, MAX_PAGE_ROWS
from migrate.pipeline import identity
from migrate.pipeline import legacy_records as records
from migrate.pipeline.legacy_scan import LOG_KINDS, Scan, decode_item, ordinal_of, scan
from migrate.rules.kept_keys import find_key
from migrate.rules.shape import RowSource, ShapeReport, check_shape
from migrate.rules.sources import Page
from migrate.store.codec import (
    ARCHIVE_ORDER,
    CLAIMS,
    CONTENT,
    HEADS,
    HISTORY,
    ID_LEN,
    ORDINAL,
    REQUESTS,
    Head,
    history_key,
    request_value,
)

Row = tuple[int, bytes, bytes]  # (table ordinal, key, value)
_BLOB = identity.CODEC_BLOB
_ROLE_RECORD, _ROLE_RAW, _ROLE_COMMIT = 0, 1, 2


def _file_digests(path: Path, kind: str) -> tuple[str, str]:
    if kind in LOG_KINDS:  # both frame-log dialects: hemera(legacy-source domain ‖ file)
        from importers.signal_log import file_digests
    else:
        from importers.text_archive import file_digests
    return file_digests(path)


@dataclass
class LegacyImport:
    """One legacy source, decoded and checked, as compact arrays (see the module docstring)."""

    path: Path
    kind: str
    fingerprint: dict[str, Any]
    hemera_digest: str
    scan: Scan
    record: bytes  # the import record payload
    namespace: bytes
    raw_ids: bytearray
    commits: bytearray
    first_raw: bytearray  # 1 where the item is the first with its raw id (content is unique)
    import_doc: dict[str, Any] = field(default_factory=dict)  # the import record (as JSON)

    #: The item staged first: 0 is the import record (history index 0 of the namespace).
    first_item: ClassVar[int] = 0

    @classmethod
    def read(
        cls,
        path: Path,
        kind: str,
        fingerprint: dict[str, Any],
        *,
        accept_torn_tail: bool = False,
        strict: bool = False,
        progress: Callable[[int, int], None] | None = None,
        namespace: bytes | None = None,
    ) -> Self:
        """Decode the whole source strictly, then derive every record and id (no writes).
        The namespace is hemera(the import record) unless the caller names one."""
        found = scan(
            path, kind, accept_torn_tail=accept_torn_tail, strict=strict, progress=progress
        )
        sha256, hemera_digest = _file_digests(path, kind)
        if sha256 != fingerprint["sha256"]:
            raise ValidationFailed(
                f"{path}: the source changed while it was read; stop whatever writes it, "
                "then start again",
                path=str(path),
                errors=[{"code": "source-changed", "detail": str(path)}],
            )
        doc = records.import_record(
            kind, fingerprint, hemera_digest, found.items, found.torn_tail, found.lenient
        )
        record = records.payload(doc)
        imp = cls(
            path, kind, fingerprint, hemera_digest, found, record,
            identity.hemera(record) if namespace is None else namespace,
            bytearray(), bytearray(), bytearray(found.items), doc,
        )  # fmt: skip
        imp._derive()
        return imp

    def _derive(self) -> None:
        """Second pass, in item order: raw ids and the chain of commit ids."""
        seen: set[bytes] = set()  # dropped on return; ≈ 100 bytes an item meanwhile
        # Every item record comes from one builder fed with decoded, typed values, so the
        # schema is checked once per summary shape (signal, intent, line; with or without
        # ``created``): jsonschema costs ~0.8 ms a record, 8 s for a 10,000-line archive.
        # The tests validate every record of the fixtures in the destination.
        shapes: set[str] = set()
        with self.open() as fh:
            for i in range(1, self.items + 1):
                raw = self.read_raw(fh, i)
                raw_id = identity.hemera(raw)
                payload = self._record_payload(i, raw, raw_id, shapes)
                self.raw_ids += raw_id
                self.commits += identity.hemera(payload)
                if raw_id not in seen:
                    seen.add(raw_id)
                    self.first_raw[i - 1] = 1

    # -- per item ----------------------------------------------------------------------
    @property
    def items(self) -> int:
        return self.scan.items

    def span(self, index: int) -> tuple[int, int]:
        return self.scan.starts[index - 1], self.scan.ends[index - 1]

    def commit(self, index: int) -> bytes:
        """The commit id at history ``index`` (index 0 is the namespace id)."""
        if index == 0:
            return self.namespace
        return bytes(self.commits[ID_LEN * (index - 1) : ID_LEN * index])

    def raw_id(self, index: int) -> bytes:
        return bytes(self.raw_ids[ID_LEN * (index - 1) : ID_LEN * index])

    @property
    def head(self) -> Head:
        return Head(self.items, self.commit(self.items))

    @property
    def history_rows(self) -> int:
        return self.items + 1

    def open(self) -> BinaryIO:
        try:
            return self.path.open("rb")
        except OSError as exc:
            raise SourceError(
                f"{self.path}: cannot open: {exc.strerror}", path=str(self.path)
            ) from exc

    def other_content_id(self, key: bytes) -> bool:
        """Whether ``key`` is the id of a content row other than an item's record (whose
        ids are :attr:`commits`): the import record, or an item's raw bytes
        (:meth:`LegacyRows._keys`)."""
        return key == self.namespace or find_key(self.raw_ids, key, ID_LEN) >= 0

    def read_raw(self, fh: BinaryIO, index: int) -> bytes:
        """The exact raw bytes of item ``index`` (frame incl. header, or line incl. LF)."""
        start, end = self.span(index)
        try:
            fh.seek(start)
            raw = fh.read(end - start)
        except OSError as exc:
            raise SourceError(
                f"{self.path}: cannot read: {exc.strerror}", path=str(self.path)
            ) from exc
        if len(raw) != end - start:
            raise SourceError(
                f"{self.path}: the file shrank while it was read (byte {start + len(raw)})",
                path=str(self.path),
                offset=start + len(raw),
            )
        return raw

    def _record_payload(
        self, index: int, raw: bytes, raw_id: bytes, shapes: set[str] | None = None
    ) -> bytes:
        """The item record's payload; validated when its summary shape is not in ``shapes``."""
        start, end = self.span(index)
        facts = decode_item(self.kind, raw, index, start, self.path)
        doc = records.item_record(
            self.kind, self.namespace, index, self.commit(index - 1), raw_id, len(raw),
            self.fingerprint["sha256"], ordinal_of(self.kind, index), (start, end), facts,
        )  # fmt: skip
        schema = None
        if shapes is not None:
            shape = ",".join(k for k, v in sorted(facts.items()) if v is not None)
            if shape not in shapes:
                shapes.add(shape)
                schema = records.ITEM_SCHEMA
        return records.payload(doc, schema)

    def record_payload(self, fh: BinaryIO, index: int) -> bytes:
        """The item record of ``index``, rebuilt from the re-read raw bytes."""
        return self._record_payload(index, self.read_raw(fh, index), self.raw_id(index))

    def request(self, index: int) -> bytes:
        return identity.legacy_request_id(self.fingerprint["sha256"], index)

    def request_row(self, index: int) -> tuple[bytes, bytes]:
        """(key, value) of the request receipt of history ``index``."""
        commit = self.commit(index)
        head = Head(index, commit)
        contents = [commit] if index == 0 else [self.raw_id(index), commit]
        req = self.request(index)
        fp = identity.fingerprint(self.namespace, req, head.encode(), contents)
        return self.namespace + req, request_value(fp, head)

    def item_rows(self, fh: BinaryIO, item: int) -> list[Row]:
        """Every row ``item`` contributes, in a fixed order (the staging unit): its content,
        its request receipt, its history entry, and the head after the last item."""
        ns, index = self.namespace, item - self.first_item
        rows = self.content_rows(fh, item)
        rows.append((ORDINAL[REQUESTS], *self.request_row(item)))
        rows.append((ORDINAL[HISTORY], history_key(ns, index), self.commit(index)))
        if item == self.items:
            rows.append((ORDINAL[HEADS], ns, self.head.encode()))
        return rows

    def content_rows(self, fh: BinaryIO, index: int) -> list[Row]:
        """The content rows history ``index`` writes (the import record at 0)."""
        if index == 0:
            return [(ORDINAL[CONTENT], self.namespace, _BLOB + self.record)]
        raw = self.read_raw(fh, index)
        raw_id = self.raw_id(index)
        rows = [(ORDINAL[CONTENT], raw_id, _BLOB + raw)] if self.first_raw[index - 1] else []
        payload = self._record_payload(index, raw, raw_id)
        rows.append((ORDINAL[CONTENT], self.commit(index), _BLOB + payload))
        return rows

    def rows_of(self, fh: BinaryIO) -> RowSource:
        """The rows this source becomes, as a RowSource (five tables in key order)."""
        return LegacyRows(self, fh)

    # -- reports -------------------------------------------------------------------------
    def facts(self) -> dict[str, Any]:
        """What the report, plan and receipt say about the legacy source."""
        return {
            "kind": self.kind,
            "namespace": self.namespace.hex(),
            "items": self.items,
            records.HEMERA_NAME[self.kind]: self.hemera_digest,
            "torn_tail": self.scan.torn_tail,
            **({"lenient_frames": self.scan.lenient} if self.scan.lenient else {}),
        }

    def report(self, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """The five-table report of the rows this source becomes (the cell report's fields).

        Blob ids are not re-verified here: they are hemera(payload) by construction, and
        validation checks them on the staged rows, which is what gets published.
        """
        with self.open() as fh:
            return self.report_of(check_rows(self.rows_of(fh), progress))

    def report_of(self, shape: ShapeReport) -> dict[str, Any]:
        """The report of :meth:`report` from the shape check of this source's rows (whoever
        read them: :meth:`report`, or the single pass that also loads them)."""
        namespaces = {}
        if self.history_rows:  # an empty TextArchive writes no namespace (cybergraph: no head)
            head = self.head
            namespaces[self.namespace.hex()] = {
                "head_index": head.index,
                "head_commit": head.commit.hex(),
                "history_rows": self.history_rows,
            }
        return {
            "kind": self.kind,
            "tables": {name: stats.to_json() for name, stats in sorted(shape.tables.items())},
            "content_codecs": shape.codecs,
            "namespaces": namespaces,
            "archive_digest_sha256": shape.archive_digest_sha256,
            "archive_digest_hemera": shape.archive_digest_hemera,
            "valid": True,
            "error_count": 0,
            "errors": [],
            "legacy": self.facts(),
        }


def check_rows(rows: RowSource, progress: Callable[[int, int], None] | None = None) -> ShapeReport:
    """The shape check of a converted source's rows, as preflight and validation run it.

    Blob ids are not re-verified: they are hemera(payload) by construction."""
    return check_shape(rows, verify_blob_ids=False, hemera_digest=False, progress=progress)


class LegacyRows:
    """The rows of a :class:`LegacyImport` as a RowSource: five tables in key order."""

    def __init__(self, imp: LegacyImport, fh: BinaryIO) -> None:
        self._imp, self._fh = imp, fh

    def table_kinds(self) -> dict[str, str]:
        return {name: "table" for name in ARCHIVE_ORDER}

    def rows(self, table: str) -> Iterator[tuple[bytes, bytes]]:
        imp = self._imp
        items = range(imp.first_item, imp.items + 1)  # item i sits at history i - first_item
        if table == CONTENT:
            return self._content()
        if table == REQUESTS:
            order = sorted(imp.request(i) + i.to_bytes(8, "big") for i in items)
            return (imp.request_row(int.from_bytes(k[ID_LEN:], "big")) for k in order)
        if table == HISTORY:
            at = imp.first_item
            return ((history_key(imp.namespace, i - at), imp.commit(i - at)) for i in items)
        if table == HEADS:
            return iter([(imp.namespace, imp.head.encode())] if imp.history_rows else [])
        assert table == CLAIMS
        return iter(())

    def _keys(self) -> list[bytes]:
        """``id ‖ role ‖ item u64 BE`` of every content row (a role per kind of payload)."""
        imp = self._imp
        keys = [imp.namespace + bytes([_ROLE_RECORD]) + bytes(8)]
        for i in range(1, imp.items + 1):
            tail = i.to_bytes(8, "big")
            if imp.first_raw[i - 1]:
                keys.append(imp.raw_id(i) + bytes([_ROLE_RAW]) + tail)
            keys.append(imp.commit(i) + bytes([_ROLE_COMMIT]) + tail)
        return keys

    def _value(self, role: int, item: int) -> bytes:
        """The payload of the content row of ``role`` for ``item``."""
        imp = self._imp
        if role == _ROLE_RECORD:
            return imp.record
        if role == _ROLE_RAW:
            return imp.read_raw(self._fh, item)
        return imp.record_payload(self._fh, item)

    def _content(self) -> Iterator[tuple[bytes, bytes]]:
        keys = self._keys()
        keys.sort()
        last = b""
        for key in keys:
            cid, role, item = key[:ID_LEN], key[ID_LEN], int.from_bytes(key[ID_LEN + 1 :], "big")
            if cid == last:
                continue  # one content row per id: equal ids hold equal bytes
            last = cid
            yield cid, _BLOB + self._value(role, item)


def encode_cursor(index: int, staged: int) -> bytes:
    """Cursor after ``staged`` rows of history ``index``."""
    return index.to_bytes(8, "big") + bytes([staged])


def decode_cursor(cursor: bytes | None) -> tuple[int, int]:
    """(history index, rows of it staged); (0, 0) before the first page."""
    if not cursor:
        return 0, 0
    return int.from_bytes(cursor[:8], "big"), cursor[8]


class LegacySource(Closing):
    """Staging pages of a :class:`LegacyImport`, item by item (holds the file open)."""

    def __init__(self, imp: LegacyImport) -> None:
        self.imp = imp
        self._fh = imp.open()

    def close(self) -> None:
        self._fh.close()

    def pages(
        self,
        cursor: bytes | None,
        *,
        max_rows: int = MAX_PAGE_ROWS,
        max_bytes: int = MAX_PAGE_BYTES,
    ) -> Iterator[Page]:
        """Bounded pages of rows in history order, starting after ``cursor``."""
        first, skip = decode_cursor(cursor)
        rows: list[Row] = []
        nbytes = 0
        position = cursor or b""
        for index in range(max(first, self.imp.first_item), self.imp.items + 1):
            item = self.imp.item_rows(self._fh, index)
            done = skip if index == first else 0
            for n, row in enumerate(item[done:], start=done + 1):
                size = len(row[1]) + len(row[2])
                if rows and (len(rows) >= max_rows or nbytes + size > max_bytes):
                    yield Page(rows, position, nbytes)
                    rows, nbytes = [], 0
                rows.append(row)
                nbytes += size
                position = encode_cursor(index, n)
        if rows:
            yield Page(rows, position, nbytes)
