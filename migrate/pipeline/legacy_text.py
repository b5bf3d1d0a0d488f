"""A TextArchive as the rows cybergraph's ``TextArchive::import_jsonl`` writes.

cybergraph@78d2343e ``src/text_archive.rs`` (``prepare_import_line``, ``prepare``) and
cybergraph@546853d9 ``src/text_archive/legacy.rs`` (``import_jsonl``), read into an empty
namespace ``ns`` chosen by the caller; line ``i`` (1-based) is history index ``i - 1``:

| table | rows of line i |
|---|---|
| content | text id → Blob(text), raw id → Blob(raw line incl. LF), commit → Blob(observation) |
| requests | ns ‖ request(i) → cybergraph fingerprint ‖ (i - 1, commit) |
| history | ns ‖ (i - 1) → commit |
| heads | ns → (n - 1, commit of line n) |
| claims | none |

The observation is serde_json of ``{schema, previous, request, text, created, provenance:
{source, line, raw}}`` (:func:`importers.text_archive.budget.observation_record`); the
request is hemera("cybergraph/text-import-request/1\\0" ‖ source ‖ line u64 LE) and the
source hemera(the whole file).  The fingerprint is cybergraph's application transaction
fingerprint (:func:`migrate.pipeline.identity.cybergraph_fingerprint`) with
``required = [text, raw, previous commit]`` and no claims.

Our own provenance that cybergraph's record has no field for -- the source's SHA-256 and
size, the import record -- stays beside the store, in the receipt's ``legacy.import_record``
(the records database), never in the namespace.  A line's byte span needs no record: the
lines are contiguous from byte 0, so line ``i`` spans the sizes of the raw Blobs of lines
``1..i``, and those Blobs in history order are the file itself.
"""

from __future__ import annotations

from typing import Any, BinaryIO

from importers.text_archive import TextRecord
from migrate.pipeline import identity
from migrate.pipeline.legacy import LegacyImport, LegacyRows, Row
from migrate.pipeline.legacy_scan import decode_text
from migrate.rules.kept_keys import find_key
from migrate.store.codec import (
    CONTENT,
    ID_LEN,
    ORDINAL,
    Head,
    request_value,
)

_BLOB = identity.CODEC_BLOB
_TEXT, _RAW, _OBSERVATION = 0, 1, 2


class TextImport(LegacyImport):
    """One TextArchive, decoded and checked, as cybergraph's observations (no writes)."""

    first_item = 1  # line 1 is history index 0: no import record in the namespace
    text_ids: bytearray
    first_text: bytearray

    @property
    def source(self) -> bytes:
        return bytes.fromhex(self.hemera_digest)

    def _derive(self) -> None:
        """In line order: raw and text ids, and the chain of observation commits."""
        self.text_ids, self.first_text = bytearray(), bytearray(self.items)
        raws: set[bytes] = set()
        texts: set[bytes] = set()
        with self.open() as fh:
            for line in range(1, self.items + 1):
                raw, rec = self._line(fh, line)
                raw_id = identity.hemera(raw)
                self.raw_ids += raw_id
                self.text_ids += rec.particle_bytes
                self.commits += identity.hemera(self._observation(line, rec, raw_id))
                for seen, flags, key in (
                    (raws, self.first_raw, raw_id),
                    (texts, self.first_text, rec.particle_bytes),
                ):
                    if key not in seen:
                        seen.add(key)
                        flags[line - 1] = 1

    def _line(self, fh: BinaryIO, line: int) -> tuple[bytes, TextRecord]:
        raw = self.read_raw(fh, line)
        return raw, decode_text(raw, line, self.span(line)[0], self.path)

    def _observation(self, line: int, rec: TextRecord, raw_id: bytes) -> bytes:
        from importers.text_archive.budget import observation_record

        previous = None if line == 1 else self.commit(line - 2)
        return observation_record(
            previous, self.request(line), rec.particle_bytes, rec.created, self.source, line,
            raw_id,
        )  # fmt: skip

    # -- per line (``line`` 1-based; history index = line - 1) ------------------------------
    def commit(self, index: int) -> bytes:
        """The commit id at history ``index`` (line ``index + 1``)."""
        return bytes(self.commits[ID_LEN * index : ID_LEN * (index + 1)])

    def other_content_id(self, key: bytes) -> bool:
        """Whether ``key`` is the id of a content row other than an observation: a text or a
        raw line (:meth:`TextRows._keys`)."""
        return any(find_key(ids, key, ID_LEN) >= 0 for ids in (self.text_ids, self.raw_ids))

    def text_id(self, line: int) -> bytes:
        return bytes(self.text_ids[ID_LEN * (line - 1) : ID_LEN * line])

    @property
    def head(self) -> Head:
        return Head(self.items - 1, self.commit(self.items - 1))

    @property
    def history_rows(self) -> int:
        return self.items

    def request(self, line: int) -> bytes:
        from importers.text_archive.budget import request_id

        return request_id(identity.hemera, self.source, line)

    def request_row(self, line: int) -> tuple[bytes, bytes]:
        """(key, value) of the request receipt of ``line``: cybergraph's fingerprint."""
        index = line - 1
        head = Head(index, self.commit(index))
        text, raw = self.text_id(line), self.raw_id(line)
        expected = None if index == 0 else Head(index - 1, self.commit(index - 1))
        required = [text, raw] + ([] if expected is None else [expected.commit])
        req = self.request(line)
        fp = identity.cybergraph_fingerprint(
            self.namespace, req, expected, head, [text, raw, head.commit], required
        )
        return self.namespace + req, request_value(fp, head)

    def content_rows(self, fh: BinaryIO, line: int) -> list[Row]:
        """The text (first time), the raw line (first time) and the observation of ``line``."""
        raw, rec = self._line(fh, line)
        rows: list[Row] = []
        if self.first_text[line - 1]:
            rows.append((ORDINAL[CONTENT], rec.particle_bytes, _BLOB + rec.text.encode()))
        if self.first_raw[line - 1]:
            rows.append((ORDINAL[CONTENT], self.raw_id(line), _BLOB + raw))
        observation = self._observation(line, rec, self.raw_id(line))
        rows.append((ORDINAL[CONTENT], self.commit(line - 1), _BLOB + observation))
        return rows

    def rows_of(self, fh: BinaryIO) -> TextRows:
        return TextRows(self, fh)

    def facts(self) -> dict[str, Any]:
        """The receipt's ``legacy``: cybergraph's namespace, and our import record beside it."""
        return {**super().facts(), "import_record": self.import_doc}


class TextRows(LegacyRows):
    """The rows of a :class:`TextImport` as a RowSource: five tables in key order."""

    _imp: TextImport

    def _keys(self) -> list[bytes]:
        imp = self._imp
        keys = []
        for line in range(1, imp.items + 1):
            tail = line.to_bytes(8, "big")
            if imp.first_text[line - 1]:
                keys.append(imp.text_id(line) + bytes([_TEXT]) + tail)
            if imp.first_raw[line - 1]:
                keys.append(imp.raw_id(line) + bytes([_RAW]) + tail)
            keys.append(imp.commit(line - 1) + bytes([_OBSERVATION]) + tail)
        return keys

    def _value(self, role: int, line: int) -> bytes:
        raw, rec = self._imp._line(self._fh, line)
        if role == _TEXT:
            return rec.text.encode()
        if role == _RAW:
            return raw
        return self._imp._observation(line, rec, self._imp.raw_id(line))
