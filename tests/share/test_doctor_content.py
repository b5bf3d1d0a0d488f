"""doctor classifies content rows that are no history commit: what a legacy import
legitimately carries (items a commit record lists, Data pair children, legacy record payloads,
a birth transaction's shared artifact -- fixtures/legacy/README.md "Write semantics") is
reported by class and never warned about; a true orphan is."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import schemas
from migrate import api
from migrate.pipeline.identity import hemera
from migrate.share import doctor
from migrate.store import DB_NAME
from tests.conftest import gunzip_to
from tests.pipeline.helpers import LEGACY

# (fixture, the classes its import must show). Counts: cell-small has 105 content rows, 50
# of them commits; 54 are listed by commit records and one birth's shared artifact is not
# listed anywhere (only the birth request's fingerprint covers it).  texts-small: 20 raw
# lines and 19 distinct texts (its expected file), each named by a cybergraph observation.
CASES = [
    ("cell-small.redb.gz", {"commit_items": 54, "birth_content": 1}),
    ("cell-data-tagged-ids.redb.gz", {"commit_items": 74, "birth_content": 2}),
    ("signals-small.log", {"record_payloads": 10}),
    ("texts-small.jsonl", {"record_payloads": 20 + 19}),
]


def _migrate(name: str, tmp_path: Path) -> Path:
    src = LEGACY / name
    if name.endswith(".gz"):
        src = gunzip_to(src, tmp_path)
    store = tmp_path / "store"
    # The tagged-scheme store converts under bbg's raw converter only (cybergraph's codec
    # check refuses tagged Data rows).
    check = "none" if "tagged" in name else "codec"
    api.run(api.make_job(src, store, content_check=check))
    return store


def _insert(store: Path, rows: list[tuple[bytes, bytes]]) -> None:
    db = sqlite3.connect(store / DB_NAME, isolation_level=None)
    try:
        db.executemany("INSERT INTO application_content (key, value) VALUES (?, ?)", rows)
        # As the transaction that wrote them would: its ledger row records them (a content
        # row no transaction records is a ledger-mismatch problem, tests/share/test_trust.py).
        db.executemany(
            "INSERT INTO bbg_ledger_v1_rows (tx, tbl, key) "
            "VALUES ((SELECT max(tx) FROM bbg_ledger_v1), 0, ?)", [(k,) for k, _ in rows])
    finally:
        db.close()


@pytest.mark.parametrize(("name", "classes"), CASES, ids=[c[0] for c in CASES])
def test_legacy_content_is_classified_not_warned(
    name: str, classes: dict[str, int], tmp_path: Path
) -> None:
    report = doctor(_migrate(name, tmp_path))
    schemas.validate(report, "doctor")
    want = {"commit_items": 0, "data_children": 0, "record_payloads": 0, "birth_content": 0,
            "receipt_commits": 0, "orphans": 0, **classes}  # fmt: skip
    assert report["content_classes"] == want
    assert report["orphan_content"] == {"count": 0, "sample": []}
    assert "orphan-content" not in {w["code"] for w in report["warnings"]}
    if "tagged" in name:
        # doctor checks content as cybergraph's codec-checked import does (cybergraph 546853d
        # src/content.rs refuses tagged Data rows): each is a problem naming the old scheme.
        codes = {p["code"] for p in report["problems"]}
        assert codes == {"content-id-mismatch"} and report["healthy"] is False
        assert all("pre-dba9ceb" in p["detail"] for p in report["problems"])
        return
    assert report["healthy"] is True


def test_a_true_orphan_is_warned_about(tmp_path: Path) -> None:
    store = _migrate("cell-small.redb.gz", tmp_path)
    payload = b"cell/event/1\x00written by nobody's transaction"
    orphan = hemera(payload)
    _insert(store, [(orphan, b"\x01" + payload)])
    report = doctor(store)
    schemas.validate(report, "doctor")
    assert report["content_classes"]["orphans"] == 1
    assert report["content_classes"]["birth_content"] == 1  # the legitimate one stays
    assert report["orphan_content"] == {"count": 1, "sample": [orphan.hex()]}
    [warning] = [w for w in report["warnings"] if w["code"] == "orphan-content"]
    assert warning["detail"].startswith("1 content rows are not the commit of any history")
    assert report["healthy"] is True  # a warning, not a problem


def test_children_of_a_data_pair_are_not_orphans(tmp_path: Path) -> None:
    store = _migrate("signals-small.log", tmp_path)
    left, right = (v.to_bytes(8, "little") for v in (7, 11))
    left_id, right_id = (api.nox_data_id(p.hex())[0] for p in (left, right))
    pair = left_id + right_id
    pair_id = api.nox_data_id(pair.hex())[0]
    _insert(store, [(left_id, b"\x00" + left), (right_id, b"\x00" + right),
                    (pair_id, b"\x00" + pair)])  # fmt: skip
    report = doctor(store)
    assert report["content_classes"]["data_children"] == 2
    # Nothing names the pair itself: it is the one true orphan.
    assert report["orphan_content"] == {"count": 1, "sample": [pair_id.hex()]}


def test_content_of_history_dropped_by_nohistory_is_not_orphaned(tmp_path: Path) -> None:
    store = _migrate("cell-small.redb.gz", tmp_path)
    before = doctor(store)["content_classes"]
    heads = sqlite3.connect(store / DB_NAME).execute(
        "SELECT key, substr(value, 1, 8) FROM application_heads"
    ).fetchall()
    deep = [bytes(k).hex() for k, index in heads if int.from_bytes(index, "little") > 0]
    api.nohistory(store, deep)
    report = doctor(store)
    schemas.validate(report, "doctor")
    classes = report["content_classes"]
    # The dropped entries' commits stay as receipts' heads; their items stay items.
    assert classes["receipt_commits"] > 0 and classes["orphans"] == 0
    assert classes["commit_items"] == before["commit_items"]
    assert "orphan-content" not in {w["code"] for w in report["warnings"]}
