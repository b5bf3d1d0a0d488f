"""The reader's semantics: scans with a prefix and a cursor, point reads and newest entries
agree with the real crate's rows; tombstones and weak tombstones hide older versions;
fjall's recovery rules for sealed journals and for what is not a partition; the package's
imports stay within the standard library, bbg_core, xxhash and lz4."""

from __future__ import annotations

import ast
import json
import os
import random
from pathlib import Path

import pytest

from migrate.store.fjall import backend, journal, open_keyspace
from migrate.store.fjall import report as fjreport
from migrate.store.fjall.writer import build_keyspace
from tests.conftest import ROOT
from tests.fjall.conftest import real_dump

TWINS = backend.available()


def _rows(case: str) -> dict[str, list[tuple[bytes, bytes]]]:
    dump = real_dump(case)
    assert dump is not None
    out: dict[str, list[tuple[bytes, bytes]]] = {}
    for line in dump.decode().splitlines():
        doc = json.loads(line)
        out.setdefault(doc["partition"], []).append(
            (bytes.fromhex(doc["key"]), bytes.fromhex(doc["value"])))
    return out


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("case", ["keys-edge", "l0-overlap", "tombstones"])
def test_scan_get_and_entries_agree_with_the_real_rows(case: str, twin: str,
                                                        cases_dir: Path) -> None:  # fmt: skip
    truth = _rows(case)
    rng = random.Random(case)
    with open_keyspace(cases_dir / case, backend_name=twin) as ks:
        for name, rows in truth.items():
            keys = [k for k, _ in rows]
            assert list(ks.scan(name)) == rows
            for key, value in rng.sample(rows, min(60, len(rows))):
                assert ks.get(name, key) == value
                assert ks.get(name, key + b"\x00") == dict(rows).get(key + b"\x00")
            for _ in range(40):
                base = rng.choice(keys)
                prefix = base[: rng.randrange(len(base) + 1)]
                after = rng.choice([None, rng.choice(keys), base[:2], b"\xff" * 3])
                want = [r for r in rows if r[0].startswith(prefix)
                        and (after is None or r[0] > after)]  # fmt: skip
                assert list(ks.scan(name, prefix=prefix, after=after)) == want, (prefix, after)
                start = rng.choice([b"", rng.choice(keys), base[:1], base + b"\x00"])
                want = [r for r in want if r[0] >= start]  # an inclusive lower bound
                got = list(ks.scan(name, prefix=prefix, after=after, start=start))
                assert got == want, (prefix, after, start)
            newest = list(ks.entries(name))
            assert [(e.key, e.value) for e in newest if not e.tombstone] == rows
            assert all(e.value == b"" for e in newest if e.tombstone)
            if case == "tombstones":
                dead = [e.key for e in newest if e.tombstone]
                assert dead and all(ks.get(name, k) is None for k in dead[:50])


def _journal(root: Path, name: str, batches: list[tuple[int, list[tuple[str, bytes, bytes, int]]]],
             ) -> None:  # fmt: skip
    data = b"".join(journal.encode_batch(items, seqno) for seqno, items in batches)
    (root / "journals" / name).write_bytes(data + bytes(4096))


def test_weak_tombstones_and_tombstones_hide_older_versions(tmp_path: Path) -> None:
    root = tmp_path / "ks"
    build_keyspace(root, {"p": [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]})
    _journal(root, "0", [(1, [("p", b"a", b"", 2), ("p", b"b", b"", 1)]),
                         (2, [("p", b"d", b"4", 0), ("p", b"d", b"", 2), ("p", b"d", b"5", 0)])])
    with open_keyspace(root) as ks:
        assert list(ks.scan("p")) == [(b"c", b"3"), (b"d", b"5")]
        assert ks.get("p", b"a") is None and ks.get("p", b"b") is None
        assert [(e.key, e.seqno, e.tombstone) for e in ks.entries("p")] == [
            (b"a", 1, True), (b"b", 1, True), (b"c", 0, False), (b"d", 2, False)]


@pytest.mark.parametrize(("journal_seqno", "visible"), [(0, False), (1, True)])
def test_a_sealed_journal_behind_the_segments_is_dropped_as_fjall_drops_it(
    tmp_path: Path, journal_seqno: int, visible: bool
) -> None:
    """fjall drops what a sealed journal holds for a partition whose segments already
    reach that journal's highest seqno for it (recover_sealed_memtables)."""
    root = tmp_path / "ks"
    build_keyspace(root, {"p": [(b"a", b"segment")], "q": []})  # segment seqno 0
    (root / "journals" / "0").unlink()
    _journal(root, "0", [(journal_seqno, [("p", b"b", b"journal", 0), ("q", b"x", b"y", 0)])])
    _journal(root, "1", [])
    with open_keyspace(root) as ks:
        assert [j.role for j in ks.journals] == ["sealed", "active"]
        assert (ks.get("p", b"b") == b"journal") is visible
        assert ks.get("q", b"x") == b"y"  # q has no segments: its rows stay


def test_what_is_not_a_partition(tmp_path: Path) -> None:
    root = tmp_path / "ks"
    build_keyspace(root, {"live": [(b"k", b"v")], "dropped": [(b"k", b"v")]})
    (root / "partitions" / "dropped" / ".deleted").touch()
    (root / "partitions" / "unfinished").mkdir()
    (root / "partitions" / "stray-file").write_bytes(b"")
    _journal(root, "0", [(1, [("dropped", b"j", b"1", 0), ("ghost", b"j", b"1", 0)])])
    with open_keyspace(root) as ks:
        assert ks.partitions() == ["live"]
        reasons = {i["name"]: i["reason"] for i in fjreport.info(ks)["ignored"]}
        assert set(reasons) == {"dropped", "unfinished", "stray-file"}
        with pytest.raises(Exception, match="no partition named 'dropped'"):
            ks.get("dropped", b"k")


def test_the_package_imports_only_what_it_may() -> None:
    allowed = {"bbg_core", "xxhash", "lz4"}
    import sys

    folder = ROOT / "migrate" / "store" / "fjall"
    offenders = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if name.startswith("migrate.store.fjall") or top in allowed:
                    continue
                if top in sys.stdlib_module_names or top == "__future__":
                    continue
                offenders.append(f"{path.name}: {name}")
    assert not offenders, offenders
    assert os.path.exists(folder / "_fjall.c")


@pytest.mark.parametrize("twin", TWINS)
def test_point_reads_find_the_one_segment_of_a_disjoint_level(
    tmp_path: Path, twin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A level of many disjoint segments: a point read asks only the one whose range holds
    # the key (PartitionView.holding), and finds every key and no other.
    rng = random.Random(7)
    rows = sorted({rng.randbytes(rng.randrange(1, 24)): rng.randbytes(rng.randrange(200))
                   for _ in range(6000)}.items())  # fmt: skip
    monkeypatch.setattr("migrate.store.fjall.writer.INGEST_TARGET", 64 << 10)
    build_keyspace(tmp_path / "ks", {"t": rows})
    with open_keyspace(tmp_path / "ks", backend_name=twin) as ks:
        view = ks.view("t")
        assert sum(len(level) for level in view.levels) > 4
        held = dict(rows)
        for key, value in rows[::7]:
            assert ks.get("t", key) == value
            assert len(list(view.holding(key))) == 1
        for _ in range(500):
            probe = rng.randbytes(rng.randrange(1, 25))
            assert ks.get("t", probe) == held.get(probe)
