"""The writer: a new keyspace in bulk, segments published into an existing one, batches
appended to the journal -- what they write, what they refuse, and that the real crate's
own keyspaces take them."""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

import pytest

from bbg_core.errors import FjallRefused, Locked, UsageError
from migrate.store.fjall import journal, open_keyspace
from migrate.store.fjall import report as fjreport
from migrate.store.fjall.layout import DEFAULT_CONFIG
from migrate.store.fjall.session import append_batch, publish_segments
from migrate.store.fjall.writer import build_keyspace
from tests.fjall.conftest import extract


def _rows(n: int, tag: bytes = b"v") -> list[tuple[bytes, bytes]]:
    return [(b"k%06d" % i, tag + b"%d" % i) for i in range(n)]


def _all(path: Path) -> dict[str, list[tuple[bytes, bytes]]]:
    with open_keyspace(path) as ks:
        return {name: list(ks.scan(name)) for name in ks.partitions()}


def _modes(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix() + ("/" if p.is_dir() else "")
        out[rel] = oct(stat.S_IMODE(p.stat().st_mode))
    return out


def test_a_new_keyspace_has_fjalls_files_and_modes(tmp_path: Path) -> None:
    real = extract("one-segment", tmp_path / "real")
    os.umask(0o022)
    ours = tmp_path / "ours"
    report = build_keyspace(ours, {"data": _rows(3000)})
    assert report["partitions"]["data"]["segments"] == [0]
    for name in ("version", "partitions/data/config", "partitions/data/manifest"):
        assert (ours / name).read_bytes() == (real / name).read_bytes(), name
    assert (ours / "partitions/data/config").read_bytes() == DEFAULT_CONFIG.encode()
    jr = ours / "journals" / "0"
    assert jr.stat().st_size == journal.PRE_ALLOCATED and not jr.read_bytes().strip(b"\0")
    theirs = _modes(real)
    for rel, mode in _modes(ours).items():
        twin = rel.replace("journals/0", "journals/1").replace("segments/0", "segments/1")
        assert theirs.get(twin) == mode or rel == "", (rel, mode, theirs.get(twin))
    # ingestion's layout: seqno 0, all in the last level
    with open_keyspace(ours) as ks:
        view = ks.view("data")
        assert view.level_ids == [[], [], [], [], [], [], [0]]
        assert [e.seqno for e in ks.entries("data")][:3] == [0, 0, 0]
        assert fjreport.check(ks)["ok"]


def test_build_splits_at_the_ingestion_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from migrate.store.fjall import writer

    monkeypatch.setattr(writer, "INGEST_TARGET", 64 << 10)
    rows = [(b"%08d" % i, os.urandom(200)) for i in range(2000)]
    report = build_keyspace(tmp_path / "ks", {"p": rows})
    ids = report["partitions"]["p"]["segments"]
    assert len(ids) > 4
    with open_keyspace(tmp_path / "ks") as ks:
        segs = ks.view("p").levels[6]
        assert [s.id for s in segs] == ids
        assert all(s.meta.file_size >= 64 << 10 for s in segs[:-1])
        assert all(a.meta.key_max < b.meta.key_min for a, b in zip(segs, segs[1:], strict=False))
        assert list(ks.scan("p")) == rows
        assert fjreport.check(ks)["ok"]


def test_build_refuses_bad_rows_and_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "ks"
    with pytest.raises(FjallRefused, match="strictly ascending"):
        build_keyspace(target, {"p": [(b"b", b""), (b"a", b"")]})
    with pytest.raises(FjallRefused, match="a key of 0 bytes"):
        build_keyspace(target, {"p": [(b"", b"x")]})
    with pytest.raises(UsageError, match="not a Fjall partition name"):
        build_keyspace(target, {"no/slash": []})
    assert sorted(os.listdir(tmp_path)) == []
    build_keyspace(target, {"p": []})
    with pytest.raises(FjallRefused, match="already exists"):
        build_keyspace(target, {"p": []})


def test_publish_wins_over_older_versions_and_keeps_the_rest(tmp_path: Path) -> None:
    ks_path = tmp_path / "ks"
    build_keyspace(ks_path, {"p": _rows(5000), "q": _rows(3)})
    got = publish_segments(ks_path, "p", [(b"k000010", b"new"), (b"zz", b"tail")])
    assert got["seqno"] == 1 and got["segments"] == [1]
    got2 = publish_segments(ks_path, "p", [(b"k000011", b"newer")])
    assert got2["seqno"] == 2 and got2["segments"] == [2]
    rows = dict(_all(ks_path)["p"])
    assert rows[b"k000010"] == b"new" and rows[b"k000011"] == b"newer" and rows[b"zz"] == b"tail"
    assert len(rows) == 5001
    with open_keyspace(ks_path) as ks:
        assert ks.get("p", b"k000010") == b"new"
        assert ks.view("p").level_ids[0] == [2, 1]  # L0 overlaps: newest first
        assert fjreport.check(ks)["ok"]


def test_publish_creates_a_partition_manifest_last(tmp_path: Path) -> None:
    ks_path = tmp_path / "ks"
    build_keyspace(ks_path, {})
    publish_segments(ks_path, "fresh", _rows(10))
    assert _all(ks_path) == {"fresh": _rows(10)}


def test_publish_refuses_a_partition_with_journal_only_rows(tmp_path: Path) -> None:
    ks_path = extract("journal-only", tmp_path)
    before = _all(ks_path)
    with pytest.raises(FjallRefused, match="live only in its journals"):
        publish_segments(ks_path, "rows", [(b"a", b"b")])
    assert _all(ks_path) == before


def test_publish_into_a_real_keyspace(tmp_path: Path) -> None:
    ks_path = extract("one-segment", tmp_path)  # partition "data": L0 [1], seqno 0
    before = dict(_all(ks_path)["data"])
    first = min(before)
    got = publish_segments(ks_path, "data", [(first, b"replaced"), (b"\xff" * 8, b"end")])
    assert got["seqno"] == 1 and got["segments"] == [2]
    with open_keyspace(ks_path) as ks:
        assert ks.view("data").level_ids[0] == [2, 1]
        assert ks.get("data", first) == b"replaced"
        assert fjreport.check(ks)["ok"]
    after = dict(_all(ks_path)["data"])
    assert after == {**before, first: b"replaced", b"\xff" * 8: b"end"}


def test_append_batch_writes_fjalls_bytes_at_the_end_of_the_data(tmp_path: Path) -> None:
    ks_path = tmp_path / "ks"
    build_keyspace(ks_path, {"p": _rows(10), "q": []})
    seq = append_batch(ks_path, [("p", b"k000001", None), ("q", b"x", b"1"), ("q", b"x", b"2")])
    assert seq == 1
    data = (ks_path / "journals" / "0").read_bytes()
    batch = journal.encode_batch([("p", b"k000001", b"", 1), ("q", b"x", b"1", 0),
                                  ("q", b"x", b"2", 0)], 1)  # fmt: skip
    assert data.startswith(batch) and not data[len(batch) :].strip(b"\0")
    assert append_batch(ks_path, [("q", b"y", b"3")]) == 2
    got = _all(ks_path)
    assert got["q"] == [(b"x", b"2"), (b"y", b"3")]  # the later item of a batch wins
    assert b"k000001" not in dict(got["p"])


def test_append_batch_cuts_a_torn_tail_first(tmp_path: Path) -> None:
    ks_path = extract("torn-tail", tmp_path)
    size = (ks_path / "journals" / "0").stat().st_size
    seq = append_batch(ks_path, [("torn", b"new-key", b"v")])
    assert seq == 1
    with open_keyspace(ks_path) as ks:
        (j,) = ks.journals
        assert j.torn is None and j.batches == 2 and j.bytes < size
        assert ks.get("torn", b"new-key") == b"v"


def test_append_batch_refuses_what_fjall_would_drop(tmp_path: Path) -> None:
    ks_path = tmp_path / "ks"
    build_keyspace(ks_path, {"p": []})
    with pytest.raises(FjallRefused, match="no partition named 'nope'"):
        append_batch(ks_path, [("nope", b"k", b"v")])
    with pytest.raises(UsageError, match="empty batch"):
        append_batch(ks_path, [])
    with pytest.raises(FjallRefused, match="a key of 0 bytes"):
        append_batch(ks_path, [("p", b"", b"v")])


def test_append_batch_rotates_a_full_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal, "PRE_ALLOCATED", 4096)
    ks_path = tmp_path / "ks"
    build_keyspace(ks_path, {"p": []})
    for i in range(3):
        append_batch(ks_path, [("p", b"k%d" % i, os.urandom(3000))])
    assert sorted(os.listdir(ks_path / "journals")) == ["0", "1", "2"]
    with open_keyspace(ks_path) as ks:
        assert [j.role for j in ks.journals] == ["sealed", "sealed", "active"]
        assert len(list(ks.scan("p"))) == 3


def test_append_batch_without_a_journal_creates_journal_1(tmp_path: Path) -> None:
    ks_path = tmp_path / "ks"
    build_keyspace(ks_path, {"p": []})
    (ks_path / "journals" / "0").unlink()
    append_batch(ks_path, [("p", b"a", b"b")])
    assert os.listdir(ks_path / "journals") == ["1"]
    assert _all(ks_path) == {"p": [(b"a", b"b")]}


def test_seqnos_continue_above_a_real_keyspace(tmp_path: Path) -> None:
    ks_path = extract("many-partitions", tmp_path)  # journal seqnos 1..2
    assert append_batch(ks_path, [("a", b"k", b"v")]) == 3
    published = publish_segments(ks_path, "bbg_storage_v1", [(b"zzz", b"1")])
    assert published["seqno"] == 4


def test_writers_respect_bbg_lock(tmp_path: Path) -> None:
    ks_path = tmp_path / "ks"
    build_keyspace(ks_path, {"p": []})
    lock = ks_path / "bbg.lock"
    lock.touch(mode=0o600)
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(Locked, match="bbg holds bbg.lock"):
            append_batch(ks_path, [("p", b"a", b"b")])
        with pytest.raises(Locked):
            publish_segments(ks_path, "p", [(b"a", b"b")])
        with open_keyspace(ks_path) as ks:  # the reader never takes it
            assert ks.partitions() == ["p"]
    finally:
        os.close(fd)
    append_batch(ks_path, [("p", b"a", b"b")])


def test_the_bulk_path_writes_the_bytes_of_the_item_by_item_writer(tmp_path: Path) -> None:
    """build_keyspace's blocks (made in runs by the twin) equal lsm-tree's writer fed one
    item at a time (the path the real segments were re-encoded with)."""
    import io

    from migrate.store.fjall import backend
    from migrate.store.fjall.segment import SegmentWriter

    rows = [(b"%07d" % i, os.urandom(i % 900)) for i in range(6000)]
    build_keyspace(tmp_path / "ks", {"p": rows}, created_at=12345)
    ours = (tmp_path / "ks" / "partitions" / "p" / "segments" / "0").read_bytes()
    out = io.BytesIO()
    writer = SegmentWriter(out, 0, backend.resolve("python"), created_at=12345)
    for key, value in rows:
        writer.write(key, value, 0)
    writer.finish()
    assert ours == out.getvalue()


def test_spilled_key_hashes_give_the_same_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """build_keyspace with the bloom hashes of its open segment spilled every 500 keys
    (bloom.KeyHashes; the bulk path) writes the same files as with every hash held, and
    leaves no spill file behind; the real filter check passes."""
    from migrate.store.fjall import bloom, segment

    rows = {"p": [(b"%07d" % i, os.urandom(i % 90)) for i in range(20000)], "q": _rows(10)}
    build_keyspace(tmp_path / "held", rows, created_at=12345)
    monkeypatch.setattr(bloom, "SPILL_KEYS", 500)
    spilled: list[int] = []
    finish = segment.SegmentWriter.finish

    def watched(self: segment.SegmentWriter) -> object:
        assert len(self.hashes.h1) < 500 + 4096  # never more than a spill part and a batch
        got = finish(self)
        spilled.append(self.hashes.spilled)
        return got

    monkeypatch.setattr(segment.SegmentWriter, "finish", watched)
    build_keyspace(tmp_path / "spilled", rows, created_at=12345)
    assert max(spilled) > 10_000
    files = sorted(p.relative_to(tmp_path / "held") for p in (tmp_path / "held").rglob("*"))
    assert files == sorted(
        p.relative_to(tmp_path / "spilled") for p in (tmp_path / "spilled").rglob("*")
    )
    for rel in files:
        if (tmp_path / "held" / rel).is_file():
            assert (tmp_path / "held" / rel).read_bytes() == (
                tmp_path / "spilled" / rel
            ).read_bytes(), rel
    with open_keyspace(tmp_path / "spilled") as ks:
        assert fjreport.check(ks)["ok"]


def test_a_build_never_removes_a_directory_it_did_not_make(tmp_path: Path) -> None:
    """A user's folder named like a build's temporary sibling survives (no mark of ours in
    it); the published keyspace carries no mark either."""
    from bbg_core.files import OWNER_MARK

    mine = tmp_path / ".ks.fjall-build-mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    build_keyspace(tmp_path / "ks", {"p": [(b"k", b"v")]})
    assert (mine / "notes.txt").read_text() == "keep me"
    assert not (tmp_path / "ks" / OWNER_MARK).exists()
    with open_keyspace(tmp_path / "ks") as ks:
        assert list(ks.scan("p")) == [(b"k", b"v")]


def test_partitions_finished_in_the_background_give_the_same_files(tmp_path: Path) -> None:
    """finish_rows_in_background (the partitions finished while the caller checks) writes
    the bytes a plain commit writes; rows pushed after it are refused."""
    from migrate.store.fjall.writer import KeyspaceBuilder

    rows = {"a": _rows(3000), "b": _rows(10, b"w"), "c": []}
    build_keyspace(tmp_path / "plain", rows, created_at=7)
    with KeyspaceBuilder(tmp_path / "bg", rows, created_at=7) as builder:
        for name, part in rows.items():
            builder.push(name, part)
        builder.finish_rows_in_background()
        with pytest.raises(FjallRefused, match="after the build's partitions were finished"):
            builder.push("c", _rows(1))
        builder.commit()
    files = {p.relative_to(tmp_path / "plain").as_posix(): p.read_bytes()
             for p in sorted((tmp_path / "plain").rglob("*")) if p.is_file()}  # fmt: skip
    assert files == {p.relative_to(tmp_path / "bg").as_posix(): p.read_bytes()
                     for p in sorted((tmp_path / "bg").rglob("*")) if p.is_file()}  # fmt: skip
    assert _all(tmp_path / "bg") == {"a": rows["a"], "b": rows["b"], "c": []}


def test_a_partition_ended_early_closes_its_segment_and_gives_the_same_files(
    tmp_path: Path,
) -> None:
    """end_partition (a table's last rows are in) closes the partition's open segment at
    once -- its filter's key hashes freed before the next table is written -- and the build
    is the same bytes as one whose partitions are all ended at the commit; rows of an ended
    partition are refused."""
    from migrate.store.fjall.writer import KeyspaceBuilder

    rows = {"a": _rows(3000), "b": _rows(10, b"w"), "c": []}
    build_keyspace(tmp_path / "plain", rows, created_at=7)
    with KeyspaceBuilder(tmp_path / "early", rows, created_at=7) as builder:
        for name, part in rows.items():
            builder.push(name, part)
            builder.end_partition(name)
            writer = builder._writers[name]
            assert writer.ended and writer._writer is None  # no open segment is held
        with pytest.raises(FjallRefused, match="rows pushed after its last rows"):
            builder.push("a", [(b"\xff" * 8, b"x")])
        builder.commit()
    files = {p.relative_to(tmp_path / "plain").as_posix(): p.read_bytes()
             for p in sorted((tmp_path / "plain").rglob("*")) if p.is_file()}  # fmt: skip
    assert files == {p.relative_to(tmp_path / "early").as_posix(): p.read_bytes()
                     for p in sorted((tmp_path / "early").rglob("*")) if p.is_file()}  # fmt: skip


def test_a_failure_of_the_background_finish_is_raised_by_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What finishing the partitions met is raised when the build is committed (not while
    the caller still checks), and the build is removed: nothing appears at the target."""
    from migrate.store.fjall import writer as fjwriter

    def no_space(*_a: object, **_k: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fjwriter, "_new_partition", no_space)
    with fjwriter.KeyspaceBuilder(tmp_path / "ks", ["a"]) as builder:
        builder.push("a", _rows(5))
        builder.finish_rows_in_background()
        with pytest.raises(OSError, match="No space left"):
            builder.commit()
    assert not (tmp_path / "ks").exists()
    assert os.listdir(tmp_path) == []


def test_key_hashes_stay_in_memory_where_no_unnamed_file_can_be_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system without O_TMPFILE: the hashes are not spilled (no named file is ever
    made in a segment folder, which may be a live partition's); the filter is the same."""
    from migrate.store.fjall import backend, bloom

    monkeypatch.setattr(bloom, "SPILL_KEYS", 4)
    real_open = os.open

    def no_tmpfile(path: str, flags: int, *rest: int) -> int:
        if flags & os.O_TMPFILE == os.O_TMPFILE:
            raise OSError(95, "Operation not supported")
        return real_open(path, flags, *rest)

    keys = [b"%05d" % i for i in range(100)]
    filters = []
    for broken in (False, True):
        if broken:
            monkeypatch.setattr(os, "open", no_tmpfile)
        hashes = bloom.KeyHashes(str(tmp_path))
        for key in keys:
            h1, h2 = bloom.key_hash(key)
            hashes.h1.append(h1)
            hashes.h2.append(h2)
            hashes.spill()
        assert len(hashes) == 100
        assert (hashes.spilled, len(hashes.h1)) == ((0, 100) if broken else (100, 0))
        filters.append(hashes.filter(bloom.BitsPerKey(10), backend.resolve("python").bloom_bits))
        hashes.close()
        assert os.listdir(tmp_path) == []
    whole = bloom.build(bloom.BitsPerKey(10), map(bloom.key_hash, keys), 100)
    assert filters[0] == filters[1] == whole


def test_an_aborted_segment_closes_its_hash_spill_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build refused mid-segment (keys out of order after hashes were spilled) leaves no
    spill file open (its disk space is freed) and nothing in the folder."""
    from migrate.store.fjall import bloom

    monkeypatch.setattr(bloom, "SPILL_KEYS", 100)
    before = set(os.listdir("/proc/self/fd"))
    rows = [(b"%07d" % i, b"v") for i in range(5000)] + [(b"0000001", b"late")]
    with pytest.raises(FjallRefused, match="strictly ascending"):
        build_keyspace(tmp_path / "ks", {"p": rows})
    leaked = [os.readlink(f"/proc/self/fd/{fd}") for fd in set(os.listdir("/proc/self/fd")) - before
              if os.path.exists(f"/proc/self/fd/{fd}")]  # fmt: skip
    assert not [name for name in leaked if "(deleted)" in name or str(tmp_path) in name], leaked
    assert os.listdir(tmp_path) == []
