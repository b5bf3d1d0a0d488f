"""Our flush (``KeyspaceWriter.flush`` / ``flush_keyspace``) without the real crate: it
changes no row of any fixture, writes exactly the memtables fjall's recovery rebuilds
(checked against an independent parse of the journals and of the segments written), seals
and deletes the journals as fjall does, and lets segments be published afterwards.  The
real crate's view of the same flushes is in test_oracle.py (behind ``BBG_FJALL_ORACLE``)."""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path
from typing import Any

import pytest

from bbg_core.errors import FjallRefused
from migrate.store.fjall import bloom, journal, open_keyspace
from migrate.store.fjall import report as fjreport
from migrate.store.fjall.session import append_batch, flush_keyspace, open_writer, publish_segments
from migrate.store.fjall.writer import build_keyspace
from tests.fjall.conftest import CASES, expected
from tests.fjall.test_writer_evidence import _items, _journal_batches, _structure

JOURNAL_CASES = [c for c in CASES if any(j["items"] for j in expected(c)["journals"])]


def _digest(path: Path) -> str:
    """Every partition's newest entry of every key (value, seqno, tombstone or not): the
    live rows and what hides the others, as the reader sees them."""
    h = hashlib.sha256()
    with open_keyspace(path) as ks:
        for name in ks.partitions():
            h.update(b"\x00partition " + name.encode())
            for e in ks.entries(name):
                h.update(b"%d %s %d %d %d " % (len(e.key), e.key, e.seqno, e.tombstone,
                                              len(e.value)) + e.value)  # fmt: skip
    return h.hexdigest()


def _memtables(root: Path, case: str) -> dict[str, list[tuple[str, list[Any]]]]:
    """Independently of the package: per partition, the memtables fjall's recovery makes
    from the journals (journal name, items newest first per key), from the fixture's
    expected levels and the segments' own metadata."""
    parts = expected(case)["partitions"]
    persisted: dict[str, int | None] = {}
    for name, part in parts.items():
        top = None
        for ids in part["levels"].values():
            for sid in ids:
                raw = (root / "partitions" / name / "segments" / str(sid)).read_bytes()
                seqno_max = _structure(raw)["metadata"][16]
                top = seqno_max if top is None else max(top, seqno_max)
        persisted[name] = top
    names = sorted((j["name"] for j in expected(case)["journals"]), key=int)
    out: dict[str, list[tuple[str, list[Any]]]] = {}
    for n, jname in enumerate(names):
        batches = _journal_batches((root / "journals" / jname).read_bytes())
        tables: dict[str, dict[tuple[bytes, int], tuple[bytes, int]]] = {}
        for _s, _e, seqno, items in batches:
            for pname, key, value, vtype in items:
                if pname in parts:
                    tables.setdefault(pname, {})[(key, seqno)] = (value, vtype)  # later wins
        for pname, table in tables.items():
            lsn = max(seqno for _k, seqno in table)
            top = persisted[pname]
            if n < len(names) - 1 and top is not None and top >= lsn:
                continue  # a sealed journal the partition's segments already reach
            rows = sorted(((k, v, s, t) for (k, s), (v, t) in table.items()),
                          key=lambda r: (r[0], -r[2]))  # fmt: skip
            out.setdefault(pname, []).append((jname, rows))
    return out


@pytest.mark.parametrize("case", CASES)
def test_a_flush_changes_no_row_and_leaves_one_empty_journal(case: str, copy_case: Any) -> None:
    root = copy_case(case)
    before = _digest(root)
    report = flush_keyspace(root, created_at=1)
    assert _digest(root) == before
    with open_keyspace(root) as ks:
        assert fjreport.check(ks)["ok"]
        assert not [n for n in ks.partitions() if ks.view(n).journal]
        (active,) = ks.journals
        assert active.role == "active" and active.batches == 0
    names = [j["name"] for j in expected(case)["journals"]]
    had_items = any(j["items"] for j in expected(case)["journals"])
    if had_items:  # every journal had live items: sealed and deleted, a new one active
        assert report["rotated"] == max(names, key=int)
        assert sorted(report["deleted_journals"], key=int) == sorted(names, key=int)
        assert report["journals"] == [active.name] == [str(int(report["rotated"]) + 1)]
    else:
        assert report["partitions"] == {} and report["deleted_journals"] == []
        assert os.listdir(root / "journals") == names  # nothing to do: nothing touched
    again = flush_keyspace(root)  # a second flush has nothing left to do
    assert again["partitions"] == {} and again["rotated"] is None
    assert again["deleted_journals"] == [] and _digest(root) == before


@pytest.mark.parametrize("case", JOURNAL_CASES)
def test_a_flush_writes_the_memtables_fjall_rebuilds(case: str, copy_case: Any) -> None:
    root = copy_case(case)
    want = _memtables(root, case)
    old = {name: {sid for ids in part["levels"].values() for sid in ids}
           for name, part in expected(case)["partitions"].items()}  # fmt: skip
    report = flush_keyspace(root, created_at=7)
    assert sorted(report["partitions"]) == sorted(want)
    with open_keyspace(root) as ks:
        for name, tables in want.items():
            first = max(old[name], default=0) + 1  # the tree's counter after recovery
            ids = list(range(first, first + len(tables)))
            assert report["partitions"][name]["segments"] == ids
            assert report["partitions"][name]["journals"] == [j for j, _ in tables]
            view = ks.view(name)
            assert set(ids) <= set(view.level_ids[0])  # flushed into L0
            for sid, (_j, rows) in zip(ids, tables, strict=True):
                raw = (root / "partitions" / name / "segments" / str(sid)).read_bytes()
                st = _structure(raw)
                got = [item for *_, payload in st["data"] for item in _items(payload)]
                assert got == rows, (name, sid)
                meta = st["metadata"]
                assert meta[1] == sid and int.from_bytes(meta[2], "big") == 7
                keys = len({r[0] for r in rows})
                assert (meta[3], meta[4]) == (len(rows), keys)
                assert meta[5] == sum(r[3] != 0 for r in rows)
                m, k = struct.unpack_from(">QQ", st["bloom"], 6)
                assert (m, k) == bloom.size(bloom.FpRate(1e-5), keys)  # a flush's filter
                assert all(b[0] == (1, 0) for b in st["data"])  # LZ4, as configured


def test_the_sealed_journals_fixture_flushes_as_fjall_would(copy_case: Any) -> None:
    root = copy_case("sealed-journals")
    report = flush_keyspace(root, created_at=1)
    # small: one memtable per journal (0, 1 and the active 2); big: its sealed journals are
    # reached by its segments, so only the active journal's items
    assert report["partitions"]["small"]["segments"] == [1, 2, 3]
    assert report["partitions"]["small"]["journals"] == ["0", "1", "2"]
    assert report["partitions"]["big"]["segments"] == [2]
    assert report["rotated"] == "2" and report["deleted_journals"] == ["0", "1", "2"]
    assert report["journals"] == ["3"]
    assert os.listdir(root / "journals") == ["3"]
    data = (root / "journals" / "3").read_bytes()
    assert len(data) == journal.PRE_ALLOCATED and not data.strip(b"\0")
    with open_keyspace(root) as ks:
        assert ks.view("big").level_ids[0] == [2, 1, 0]  # overlapping L0: newest first
        assert fjreport.check(ks)["ok"]


@pytest.mark.parametrize(("case", "partition"), [("bbg-small", "application_content"),
                                                 ("journal-only", "rows")])  # fmt: skip
def test_after_a_flush_segments_can_be_published(
    case: str, partition: str, copy_case: Any
) -> None:
    root = copy_case(case)
    with pytest.raises(FjallRefused, match="live only in its journals"):
        publish_segments(root, partition, [(b"\xff-new", b"v")])
    flush_keyspace(root)
    with open_keyspace(root) as ks:
        first = next(iter(ks.scan(partition)))
        rows = dict(ks.scan(partition))
    got = publish_segments(root, partition, [(first[0], b"replaced"), (b"\xff-new", b"v")])
    with open_keyspace(root) as ks:
        assert ks.get(partition, first[0]) == b"replaced"
        assert dict(ks.scan(partition)) == {**rows, first[0]: b"replaced", b"\xff-new": b"v"}
        assert got["segments"][0] in ks.view(partition).level_ids[0]
        assert fjreport.check(ks)["ok"]


def test_every_version_and_weak_tombstones_are_flushed(tmp_path: Path) -> None:
    """A flush keeps every version of a key (fjall's GC watermark is 0 in a freshly opened
    keyspace) and every kind of item; a weak tombstone stays one."""
    root = tmp_path / "ks"
    build_keyspace(root, {"p": [(b"a", b"old"), (b"b", b"old")]})
    append_batch(root, [("p", b"a", b"1"), ("p", b"c", b"1")])
    append_batch(root, [("p", b"a", None), ("p", b"c", b"2"), ("p", b"c", b"3")])
    with open_keyspace(root) as ks:  # a weak tombstone, written as fjall's remove_weak does
        (j,) = ks.journals
        at, seqno = j.data_bytes, 3
    data = journal.encode_batch([("p", b"b", b"", 2), ("p", b"a", b"4", 0)], seqno)
    fd = os.open(root / "journals" / "0", os.O_WRONLY)
    os.pwrite(fd, data, at)
    os.close(fd)
    before = _digest(root)
    flush_keyspace(root, created_at=1)
    assert _digest(root) == before
    raw = (root / "partitions" / "p" / "segments" / "1").read_bytes()
    got = [item for *_, payload in _structure(raw)["data"] for item in _items(payload)]
    assert got == [(b"a", b"4", 3, 0), (b"a", b"", 2, 1), (b"a", b"1", 1, 0),
                   (b"b", b"", 3, 2), (b"c", b"3", 2, 0), (b"c", b"1", 1, 0)]  # fmt: skip


def test_a_flush_refuses_active_items_its_segments_already_pass(tmp_path: Path) -> None:
    root = tmp_path / "ks"
    build_keyspace(root, {"p": [(b"a", b"0")]})
    publish_segments(root, "p", [(b"a", b"1")])
    publish_segments(root, "p", [(b"a", b"2")])  # segments reach seqno 2
    data = journal.encode_batch([("p", b"z", b"stale", 0)], 1)  # fjall's counter never does
    fd = os.open(root / "journals" / "0", os.O_WRONLY)
    os.pwrite(fd, data, 0)
    os.close(fd)
    before = sorted(os.listdir(root / "journals")), _digest(root)
    with pytest.raises(FjallRefused, match="not above its segments"):
        flush_keyspace(root)
    assert (sorted(os.listdir(root / "journals")), _digest(root)) == before


def test_a_flush_gives_a_keyspace_without_journals_an_active_one(tmp_path: Path) -> None:
    root = tmp_path / "ks"
    build_keyspace(root, {"p": [(b"a", b"0")]})
    publish_segments(root, "p", [(b"a", b"1")])
    (root / "journals" / "0").unlink()
    report = flush_keyspace(root)
    assert report["created_journal"] == "1" and os.listdir(root / "journals") == ["1"]
    with open_writer(root) as session:
        assert session.next_seqno == 2


def test_a_flush_handles_many_journals_and_partitions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal, "PRE_ALLOCATED", 2048)
    root = tmp_path / "ks"
    build_keyspace(root, {"p": [(b"k%03d" % i, b"0") for i in range(100)], "q": [], "r": []})
    with open_writer(root) as session:
        for i in range(40):
            session.append([("p", b"k%03d" % (i * 7 % 100), os.urandom(300)),
                            ("q" if i % 3 else "r", b"x%d" % (i % 5), None if i % 4 else b"v")])
        with open_keyspace(root) as ks:
            names = [j.name for j in ks.journals]
        assert len(names) > 5
        before = _digest(root)
        report = session.flush()
        assert _digest(root) == before
        assert report["deleted_journals"] == names and len(report["journals"]) == 1
        assert sum(len(p["segments"]) for p in report["partitions"].values()) > 10
        session.publish("p", [(b"k000", b"published")])
        with session.reader() as ks:
            assert ks.get("p", b"k000") == b"published" and fjreport.check(ks)["ok"]


def test_both_twins_flush_to_the_same_bytes(copy_case: Any) -> None:
    from migrate.store.fjall import backend

    outputs = []
    for twin in backend.available():
        src = copy_case("tombstones")
        root = src.rename(src.with_name(f"tombstones-{twin}"))
        previous = backend.set_default(twin)
        try:
            flush_keyspace(root, created_at=3)
        finally:
            backend.set_default(previous)
        outputs.append({p.relative_to(root): p.read_bytes()
                        for p in (root / "partitions").rglob("*") if p.is_file()})  # fmt: skip
    assert all(out == outputs[0] for out in outputs[1:])
