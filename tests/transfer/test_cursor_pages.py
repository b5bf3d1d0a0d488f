"""bbg's transfer cursor, the manifest layout, and bounded pages of a sealed source.

The cursor's byte layout and the inputs ``Cursor::decode`` refuses are those of
cyberia-to/bbg ``rs/src/storage/application/transfer.rs`` (commit
1d39975ad199b48c350fa4cc011cbf6f289480ee): ``table u8 ‖ len u8 ‖ rows u64 LE ‖ bytes u64 LE ‖
after``; refused when shorter than 18 bytes, table > 5, len > 64 or the length disagrees.
The manifest input is that file's ``from_archive`` hash: domain ``bbg/application-transfer/1\\0``,
target, nonce, prior, then each (namespace, head index u64 LE, head commit).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bbg_core.errors import StoreCorrupt
from hashing import hemera
from migrate import transfer
from migrate.rules.shape import DIGEST_ORDER
from migrate.rules.transfer_form import DONE, Cursor
from migrate.transfer.source import SourceStore
from tests.pipeline.helpers import cli
from tests.transfer.helpers import copy_store, migrated_store

#: bbg's change id of the one-change transaction {bbg_import_v1["status"] = "complete"}, the
#: last transaction of bbg's converter (research note issue27-findings.md E.3, derived from
#: bbg@36cc420b database/mod.rs change_id): the last transaction of a store `run` converted.
COMPLETE_ID = "c41f3d5e4a51c68180d2fd3f278d4d501cbc3597a30fc997da1e99d89e476725"


def test_cursor_layout_round_trip() -> None:
    c = Cursor(3, b"\xaa" * 40, 1234, 5678)
    raw = c.encode()
    assert raw == bytes([3, 40]) + (1234).to_bytes(8, "little") + (5678).to_bytes(8, "little") + (
        b"\xaa" * 40
    )
    assert Cursor.decode(raw) == c
    assert Cursor.decode(Cursor().encode()) == Cursor(0, None, 0, 0)
    assert Cursor(DONE, None, 7, 9).complete


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        bytes(17),  # shorter than 18
        bytes([6, 0]) + bytes(16),  # table > 5
        bytes([0, 65]) + bytes(16) + bytes(65),  # after longer than 64
        bytes([0, 2]) + bytes(16) + b"\x01",  # length disagrees
        bytes([0, 0]) + bytes(16) + b"\x01",
    ],
)
def test_cursor_decode_refuses_what_bbg_refuses(raw: bytes) -> None:
    with pytest.raises(StoreCorrupt):
        Cursor.decode(raw)


@pytest.fixture(scope="module")
def sealed(
    tmp_path_factory: pytest.TempPathFactory, transfer_engine: str
) -> tuple[Path, dict[str, object]]:
    base = tmp_path_factory.mktemp("pages")
    source = copy_store(migrated_store(base), base / "sealed")
    res = cli("transfer", "--yes", str(source), "--store", str(base / "t"), "--json")
    assert res.returncode == 0, res.stderr
    return source, json.loads(res.stdout)


def test_manifest_recomputes_from_the_receipt(sealed: tuple[Path, dict[str, object]]) -> None:
    _, receipt = sealed
    data = b"bbg/application-transfer/1\x00" + b"".join(
        bytes.fromhex(receipt[k]) for k in ("target", "nonce", "prior")  # type: ignore[arg-type]
    )
    for s in receipt["sources"]:  # type: ignore[attr-defined]
        data += bytes.fromhex(s["namespace"]) + s["index"].to_bytes(8, "little")
        data += bytes.fromhex(s["commit"])
    assert hemera.hash(data).hex() == receipt["manifest"]
    prior = bytes.fromhex(receipt["prior"])  # type: ignore[arg-type]
    # bbg's prior: the source's last_transaction change id, on either engine (a SQLite store
    # records the change id of its last transaction, here the activation's status put).
    assert prior.hex() == COMPLETE_ID


@pytest.mark.parametrize(("rows", "nbytes"), [(512, 32 * 2**20), (7, 2**20), (50, 900)])
def test_pages_are_bounded_per_table_and_resume_from_any_cursor(
    sealed: tuple[Path, dict[str, object]], rows: int, nbytes: int
) -> None:
    source, receipt = sealed
    with SourceStore(source) as src:
        pages = list(src.pages(None, max_rows=rows, max_bytes=nbytes))
        total = 0
        for i, page in enumerate(pages):
            assert 1 <= len(page.rows) <= rows
            assert page.nbytes <= nbytes or len(page.rows) == 1
            assert len({t for t, _, _ in page.rows}) == 1  # one table per page
            total += len(page.rows)
            cursor = Cursor.decode(page.cursor)
            assert cursor.rows == total
            assert cursor.complete == (i == len(pages) - 1)
            rest = list(src.pages(page.cursor, max_rows=rows, max_bytes=nbytes))
            assert [p.rows for p in rest] == [p.rows for p in pages[i + 1 :]]
        copied = [(DIGEST_ORDER[t], k) for p in pages for t, k, _ in p.rows]
        assert copied == sorted(copied, key=lambda x: (DIGEST_ORDER.index(x[0]), x[1]))
        assert total == sum(receipt["counts"]["rows"].values())  # type: ignore[index,attr-defined]
        assert Cursor.decode(pages[-1].cursor).nbytes == receipt["counts"]["key_value_bytes"]  # type: ignore[index]


def test_the_transfer_reader_reads_a_sealed_source_and_plan_agrees(
    sealed: tuple[Path, dict[str, object]],
) -> None:
    source, receipt = sealed
    doc = transfer.plan(transfer.TransferJob(source=source, store=source.parent / "t"))
    assert doc["action"].startswith("none (already activated")
    assert doc["source"]["seal"]["manifest"] == receipt["manifest"]
