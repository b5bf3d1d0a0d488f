"""Row-shape rules of a cell store over an in-memory row source."""

from __future__ import annotations

from collections.abc import Iterator

from importers import hemera
from migrate.cell_rules import DIGEST_ORDER, _BlobVerifier, check_shape


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
    _BlobVerifier.BATCH_BYTES = 1
    try:
        report = check_shape(Rows(tables))
    finally:
        _BlobVerifier.BATCH_BYTES = 4 * 1024 * 1024
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
