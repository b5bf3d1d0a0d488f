"""Row-shape rules of a cell store over an in-memory row source."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hashing import hemera
from migrate.rules.content_ids import ContentIds
from migrate.rules.shape import DIGEST_ORDER, check_shape


class Rows:
    def __init__(self, tables: dict[str, dict[bytes, bytes]]) -> None:
        self.tables = tables

    def table_kinds(self) -> dict[str, str]:
        return {name: "table" for name in self.tables}

    def rows(self, table: str) -> Iterator[tuple[bytes, bytes]]:
        return iter(sorted(self.tables[table].items()))


def blob(payload: bytes) -> tuple[bytes, bytes]:
    return hemera.hash(payload), b"\x01" + payload


def test_blob_ids_are_verified_and_errors_keep_row_order() -> None:
    good_id, good = blob(b"good")
    bad_payload = b"lies"
    bad_id = b"\x00" * 31 + b"\x01"  # sorts first: row 0
    unknown_id = b"\xff" * 32  # sorts last
    tables = {name: {} for name in DIGEST_ORDER}
    tables["application_content"] = {
        bad_id: b"\x01" + bad_payload,
        good_id: good,
        unknown_id: b"\x07xyz",
    }
    # Small batches so the verifier thread really runs several of them.
    ContentIds.BATCH_BYTES = 1
    try:
        report = check_shape(Rows(tables))
    finally:
        ContentIds.BATCH_BYTES = 4 * 1024 * 1024
    codes = [e["code"] for e in report.errors]
    assert codes == ["content-id-mismatch", "unknown-codec"]
    assert bad_id.hex() in report.errors[0]["detail"]
    assert report.blob_id_mismatches == 1
    assert report.codecs == {"data": 0, "blob": 2, "other": 1}


def test_many_rows_keep_order_across_batches() -> None:
    tables: dict[str, dict[bytes, bytes]] = {name: {} for name in DIGEST_ORDER}
    content = tables["application_content"]
    wrong = []
    for i in range(300):
        key, value = blob(i.to_bytes(4, "big") * 100)
        if i % 7 == 0:
            key = bytes([i % 256]) + key[1:] if key[0] != i % 256 else b"\x00" + key[1:]
            wrong.append(key)
        content[key] = value
    report = check_shape(Rows(tables))
    found = [bytes.fromhex(e["detail"].split()[1].rstrip(":")) for e in report.errors]
    assert found == sorted(wrong)
    assert report.blob_id_mismatches == len(wrong)
    unchecked = check_shape(Rows(tables), verify_blob_ids=False)
    assert unchecked.errors == [] and not unchecked.blob_ids_checked
    assert unchecked.archive_digest_sha256 == report.archive_digest_sha256


class RowsWithGet(Rows):
    def get(self, table: str, key: bytes) -> bytes | None:
        return self.tables[table].get(key)


class RowsWithAbsent(RowsWithGet):
    """Point lookups, and a batch's children in one ``absent`` call (counted)."""

    def __init__(self, tables: dict[str, dict[bytes, bytes]]) -> None:
        super().__init__(tables)
        self.lists: list[int] = []

    def lookup(self, table: str, key: bytes) -> bytes | None:
        raise AssertionError("children go to absent() when the source has it")

    def absent(self, table: str, keys: list[bytes]) -> list[int]:
        self.lists.append(len(keys))
        return [i for i, key in enumerate(keys) if key not in self.tables[table]]


def test_data_ids_and_children_with_and_without_point_lookups() -> None:
    from hashing import nox

    a1, a2 = (1).to_bytes(8, "little"), (2).to_bytes(8, "little")
    k1, k2 = nox.particle(a1), nox.particle(a2)
    absent = b"\x77" * 32
    pair_ok, pair_missing = k1 + k2, k1 + absent
    tables: dict[str, dict[bytes, bytes]] = {name: {} for name in DIGEST_ORDER}
    tables["application_content"] = {
        k1: b"\x00" + a1,
        k2: b"\x00" + a2,
        nox.particle(pair_ok): b"\x00" + pair_ok,
        nox.particle(pair_missing): b"\x00" + pair_missing,
        b"\x00" * 32: b"\x00" + a1,  # wrong key for its atom: sorts first
        b"\xff" * 32: b"\x01blob",  # wrong Blob id: sorts last
    }
    tables["application_unique_claims"] = {b"\x01" * 32: b"\x02" * 32}
    reports = []
    listed = RowsWithAbsent(tables)
    for source in (Rows(tables), RowsWithGet(tables), listed):
        ContentIds.BATCH_BYTES = 1  # several batches on the worker thread
        try:
            reports.append(check_shape(source))
        finally:
            ContentIds.BATCH_BYTES = 4 * 1024 * 1024
    spilled, looked_up, in_lists = reports
    assert spilled.errors == looked_up.errors == in_lists.errors
    assert listed.lists == [2, 2]  # the two pairs' children, a batch each
    assert [e["code"] for e in spilled.errors] == [
        "content-id-mismatch", "content-id-mismatch", "missing-content",
    ]  # fmt: skip
    assert spilled.errors[0]["detail"].startswith(f"content {'00' * 32}: Data row of 8 payload")
    assert absent.hex() in spilled.errors[2]["detail"]
    assert spilled.data.id_mismatches == 1 and spilled.blob_id_mismatches == 1
    assert spilled.data.scheme == "nox-model-b" and len(spilled.data.keys) == 5
    # bbg's raw converter decodes nothing.
    raw = check_shape(Rows(tables), content_check="none")
    assert raw.errors == [] and not raw.data_ids_checked and not raw.blob_ids_checked


def test_tagged_data_rows_are_refused_in_codec_mode_and_copied_in_none() -> None:
    """cybergraph 546853d ``src/content.rs`` ``Content::new`` hands a Data payload to nox
    ``particle_of`` (nox 04425ac ``rs/encode.rs``), which takes 8 or 64 bytes only; nox's
    test ``invalid_length_rejected`` refuses ``[0; 9]``, ``[0; 65]`` and ``[]`` with
    ``InvalidLength`` (cybergraph: ``ContentError::InvalidData``).  The tagged scheme's rows are
    exactly such lengths (9 field/word atom, 33 hash atom, 65 cell), with key = their old id
    hemera(tag ‖ payload).  nox's own three cases are refused too (``[0; 9]`` is a tagged field
    atom; ``[0; 65]`` and ``[]`` fit neither scheme)."""
    from hashing import nox

    word = b"\x01" + (7).to_bytes(8, "little")
    cases = [bytes(9), b"\x03" + bytes(64), b"\x02" + bytes(32), word]
    tables: dict[str, dict[bytes, bytes]] = {name: {} for name in DIGEST_ORDER}
    for payload in cases:
        assert nox.scheme_of(payload) == nox.TAGGED_V0
        tables["application_content"][hemera.hash(payload)] = b"\x00" + payload
    report = check_shape(Rows(tables))
    assert [e["code"] for e in report.errors] == ["content-id-mismatch"] * len(cases)
    assert all("nox tagged scheme (pre-dba9ceb)" in e["detail"] for e in report.errors)
    assert report.data.id_mismatches == len(cases)
    assert report.data.scheme == nox.TAGGED_V0  # the scheme is still named
    assert check_shape(Rows(tables), content_check="none").errors == []
    tables["application_content"] = {hemera.hash(p): b"\x00" + p for p in (bytes(65), b"")}
    assert [e["code"] for e in check_shape(Rows(tables)).errors] == ["content-id-mismatch"] * 2


class _Batched(Rows):
    """The same rows, also offered in lists of uneven sizes (``row_batches``)."""

    def row_batches(self, table: str) -> Iterator[list[tuple[bytes, bytes]]]:
        rows = list(self.rows(table))
        start, size = 0, 1
        while start < len(rows):
            yield rows[start : start + size]
            start, size = start + size, size % 5 + 1


def test_the_pass_reports_the_same_from_lists_as_from_rows() -> None:
    """Shapes, stats, digest and error positions are the same whether a source gives rows or
    lists of rows (the checking pass reads the redb reader's lists)."""
    tables: dict[str, dict[bytes, bytes]] = {name: {} for name in DIGEST_ORDER}
    for i in range(40):
        key, value = blob(b"p%d" % i)
        tables["application_content"][key] = value if i % 9 else b"\x07" + value[1:]
        tables["application_history"][bytes([i]) * 32 + i.to_bytes(8, "big")] = key
        tables["application_heads"][bytes([i]) * 32] = b"h" * (40 if i % 7 else 39)
        tables["application_unique_claims"][bytes([i]) * (32 if i % 11 else 31)] = b"c" * 32
    a = check_shape(Rows(tables), hemera_digest=True)
    b = check_shape(_Batched(tables), hemera_digest=True)
    assert a.errors and [e["code"] for e in a.errors].count("bad-value-length") == 6
    assert (a.errors, a.positions, a.phases) == (b.errors, b.positions, b.phases)
    assert {t: s.to_json() for t, s in a.tables.items()} == {
        t: s.to_json() for t, s in b.tables.items()
    }
    assert (a.archive_digest_sha256, a.archive_digest_hemera, a.codecs, a.row) == (
        b.archive_digest_sha256, b.archive_digest_hemera, b.codecs, b.row,
    )  # fmt: skip


def test_content_rows_checked_in_a_list_as_one_by_one() -> None:
    """The checking pass's loop over content rows (Blob rows inline) says and queues exactly
    what ``_check_row`` does row by row: errors, positions, codecs, ids queued."""
    from migrate.rules import shape

    good_id, good = blob(b"fine")
    rows = [
        (good_id, good),
        (b"\x01" * 31, good),  # bad key length
        (b"\x02" * 32, b""),  # empty value
        (b"\x03" * 32, b"\x07abc"),  # unknown codec
        (b"\x04" * 32, b"\x00" + b"d" * 8),  # Data
        (b"\x05" * 64, b"\x01x"),  # a Blob under a 64-byte key
        (b"\x06" * 32, b"\x01" + b"z" * 3),  # a Blob with a wrong id (the ids say so later)
        (b"\x07" * 32, b"\x01"),  # an empty Blob
    ]

    class Ids:
        def __init__(self) -> None:
            self.added: list[tuple[int, bytes, int, bytes]] = []

        def add(self, position: int, key: bytes, codec: int, payload: bytes) -> None:
            self.added.append((position, key, codec, bytes(payload)))

        def add_many(self, items: list[tuple[int, bytes, int, bytes]], nbytes: int) -> None:
            assert nbytes == sum(len(p) for *_, p in items)
            for item in items:
                self.add(*item)

    def run(listed: bool) -> tuple[object, ...]:
        report, ids = shape.ShapeReport(), Ids()
        report.row = 9
        if listed:
            shape._check_content(rows, report, ids)  # type: ignore[arg-type]
        else:
            for key, value in rows:
                report.row += 1
                shape._check_row(shape.CONTENT, key, value, report, ids)  # type: ignore[arg-type]
        return report.errors, report.positions, report.phases, report.codecs, report.row, ids.added

    one_by_one = run(False)
    assert [e["code"] for e in one_by_one[0]] == ["bad-key-length", "bad-value-length",
                                                  "unknown-codec", "bad-key-length"]  # fmt: skip
    assert run(True) == one_by_one


def test_lists_cut_from_rows_end_at_a_byte_bound_and_big_lists_hash_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A source without lists of its own is cut at ``BATCH_BYTES`` as well as ``BATCH_ROWS``
    (3 MiB rows are not held 512 at a time: apply and restore stay bounded by one event), and
    a list over ``JOIN_BYTES`` is hashed row by row to the same digests."""
    from migrate.rules import shape

    tables: dict[str, dict[bytes, bytes]] = {name: {} for name in DIGEST_ORDER}
    for i in range(6):
        key, value = blob(bytes([i]) * (600 << 10))
        tables["application_content"][key] = value
    sizes = [len(b) for b in shape.row_batches(Rows(tables), "application_content")]
    assert sizes == [2, 2, 2]  # each list ends once it holds 1 MiB
    a = check_shape(Rows(tables), hemera_digest=True)
    monkeypatch.setattr(shape, "JOIN_BYTES", 1000)
    b = check_shape(_Batched(tables), hemera_digest=True)
    assert (a.archive_digest_sha256, a.archive_digest_hemera) == (
        b.archive_digest_sha256, b.archive_digest_hemera,
    )  # fmt: skip
