"""Stores our writer made, read by the real crate: when ``BBG_FJALL_ORACLE`` names a program
built from the real crates (``$BBG_FJALL_ORACLE dump DIR`` prints the dump format on stdout;
``load DIR`` writes JSON-line puts and deletes from stdin in batches; ``flush DIR`` and
``compact DIR`` flush every memtable and major-compact every partition; each opens DIR in
place), its dump of each store must equal ours byte for byte, it must keep writing,
flushing and compacting over what we wrote, and its own flush of a journal must write the
segments our flush writes.  Without it these tests say so and skip: the evidence that
does not need the oracle is in test_writer_evidence.py and test_flush.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from migrate.store.fjall import levels, open_keyspace
from migrate.store.fjall import report as fjreport
from migrate.store.fjall.report import dump_lines
from migrate.store.fjall.session import append_batch, flush_keyspace, open_writer, publish_segments
from migrate.store.fjall.writer import build_keyspace
from tests.fjall.conftest import CASES, expected, extract
from tests.fjall.test_writer_evidence import _structure


def oracle_or_skip() -> str:
    """The real-crate program ``BBG_FJALL_ORACLE`` names, or a skip that says so."""
    name = os.environ.get("BBG_FJALL_ORACLE")
    found = shutil.which(name) if name else None
    if not found:
        pytest.skip("BBG_FJALL_ORACLE not set: real-crate reader not available")
    return found


_oracle = oracle_or_skip


def oracle_dump(oracle: str, store: Path, scratch: Path) -> str:
    """The real crate's dump of ``store``, read from a copy (fjall changes what it opens)."""
    copy = scratch / f"copy-{len(list(scratch.glob('copy-*'))) if scratch.exists() else 0}"
    shutil.copytree(store, copy)
    try:
        res = subprocess.run([oracle, "dump", str(copy)], capture_output=True, text=True,
                             timeout=600, check=False)  # fmt: skip
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    assert res.returncode == 0, res.stderr
    return res.stdout


def _stores(tmp_path: Path) -> list[Path]:
    built = tmp_path / "built"
    rows = [(b"%06d" % i, bytes([i % 251]) * (i % 700)) for i in range(20000)]
    build_keyspace(built, {"data": rows, "empty": [], "one": [(b"k", b"v")]})
    published = tmp_path / "published"
    shutil.copytree(built, published)
    publish_segments(published, "data", [(b"%06d" % i, b"new") for i in range(0, 20000, 7)])
    publish_segments(published, "fresh", [(b"a", b"1"), (b"b", b"")])
    appended = tmp_path / "appended"
    shutil.copytree(published, appended)
    append_batch(appended, [("data", b"000000", None), ("one", b"k", b"v2"),
                            ("fresh", b"c", b"3")])  # fmt: skip
    real = extract("l0-overlap", tmp_path / "real")
    append_batch(real, [("overlap", b"\x00new", b"x")])
    return [built, published, appended, real]


def test_the_real_crate_reads_what_we_wrote(tmp_path: Path) -> None:
    oracle = _oracle()
    for store in _stores(tmp_path):
        with open_keyspace(store) as ks:
            ours = "".join(line + "\n" for line in dump_lines(ks))
        scratch = tmp_path / "oracle" / store.name
        shutil.copytree(store, scratch)  # opening with fjall changes the directory
        res = subprocess.run([oracle, "dump", str(scratch)], capture_output=True, text=True,
                             timeout=600, check=False)  # fmt: skip
        assert res.returncode == 0, res.stderr
        assert res.stdout == ours, store.name


# -- our flush, read and continued by the real crate -----------------------------------------

JOURNAL_CASES = [c for c in CASES if any(j["items"] for j in expected(c)["journals"])]


def _ours(store: Path) -> str:
    with open_keyspace(store) as ks:
        return "".join(line + "\n" for line in dump_lines(ks))


def _run(oracle: str, *args: str, stdin: str | None = None) -> str:
    res = subprocess.run([oracle, *args], input=stdin, capture_output=True, text=True,
                         timeout=600, check=False)  # fmt: skip
    assert res.returncode == 0, (args, res.stderr)
    return res.stdout


def _load_lines(ops: list[tuple[str, str, bytes, bytes | None]]) -> str:
    out = []
    for op, part, key, value in ops:
        doc = {"op": op, "partition": part, "key": key.hex()}
        if value is not None:
            doc["value"] = value.hex()
        out.append(json.dumps(doc))
    return "\n".join(out) + "\n"


def _multiversion(tmp_path: Path) -> Path:
    """A store of our own whose journal holds several versions of keys, tombstones over
    values and values over tombstones, in two partitions (our session writes it)."""
    root = tmp_path / "multiversion"
    tmp_path.mkdir(parents=True, exist_ok=True)
    build_keyspace(root, {"p": [(b"%05d" % i, b"seg") for i in range(0, 900, 2)], "q": []})
    with open_writer(root) as session:
        session.append([("p", b"%05d" % i, b"a" * (i % 40)) for i in range(900)])
        session.append([("p", b"%05d" % i, None) for i in range(0, 900, 3)]
                       + [("q", b"q%d" % i, b"1") for i in range(30)])  # fmt: skip
        session.append([("p", b"%05d" % i, b"b") for i in range(0, 900, 6)]
                       + [("q", b"q%d" % i, None) for i in range(0, 30, 2)])  # fmt: skip
        session.append([("p", b"00001", b"x"), ("p", b"00001", None), ("p", b"00001", b"y")])
    return root


def _store(case: str, tmp_path: Path) -> Path:
    return _multiversion(tmp_path) if case == "multiversion" else extract(case, tmp_path)


@pytest.mark.parametrize("case", [*JOURNAL_CASES, "multiversion"])
def test_the_real_crate_reads_and_continues_our_flush(case: str, tmp_path: Path) -> None:
    """After our flush: (a) our dump is unchanged, (b) the real crate's equals it, (c) the
    real crate loads more rows, flushes and compacts over our segments and we read what it
    reads, (d) segments published afterwards are read by the real crate."""
    oracle = oracle_or_skip()
    scratch = tmp_path / "scratch"
    store = _store(case, tmp_path / "src")
    before = _ours(store)
    flush_keyspace(store)
    after = _ours(store)
    assert after == before  # (a)
    assert oracle_dump(oracle, store, scratch) == after  # (b)
    with open_keyspace(store) as ks:
        names = ks.partitions()
        part = "application_content" if "application_content" in names else names[0]
        keys = [k for k, _ in ks.scan(part)]
    # (d) a publication into the flushed store
    published = shutil.copytree(store, tmp_path / "published")
    rows = sorted({*keys[:5], b"\xfe\xfe-published-1", b"\xfe\xfe-published-2"})
    publish_segments(published, part, [(k, b"published " + k) for k in rows])
    mine = _ours(published)
    assert oracle_dump(oracle, published, scratch) == mine
    for key in rows:
        assert json.dumps({"partition": part, "key": key.hex(),
                           "value": (b"published " + key).hex()},
                          separators=(",", ":")) in mine  # fmt: skip
    # (c) the real crate writes on: more rows and deletes, its flush, its compaction
    ops: list[tuple[str, str, bytes, bytes | None]] = [
        ("put", part, b"\xfe\xfd-oracle-%d" % i, b"o%d" % i) for i in range(50)]
    ops += [("del", part, k, None) for k in keys[1:40:3]]
    ops += [("put", part, k, b"over " + k) for k in keys[2:40:3]]
    _run(oracle, "load", str(store), stdin=_load_lines(ops))
    assert _ours(store) == oracle_dump(oracle, store, scratch)
    _run(oracle, "flush", str(store))
    assert _ours(store) == oracle_dump(oracle, store, scratch)
    _run(oracle, "compact", str(store))  # may bring deleted rows back: both read its files
    assert _ours(store) == oracle_dump(oracle, store, scratch)
    with open_keyspace(store) as ks:
        assert fjreport.check(ks)["ok"]


def _strip_segments(store: Path) -> Path:
    """The same journals with no segments at all (every journal item is replayed)."""
    for part in (store / "partitions").iterdir():
        if (part / "manifest").exists():
            count = len(levels.decode((part / "levels").read_bytes(), str(part)))
            (part / "levels").write_bytes(levels.encode([[] for _ in range(count)]))
            for seg in (part / "segments").iterdir():
                seg.unlink()
    return store


def _segments(store: Path) -> dict[str, dict[int, tuple[int, int, bytes, bytes]]]:
    with open_keyspace(store) as ks:
        return {name: {s.id: (s.meta.seqno_min, s.meta.seqno_max, s.meta.key_min,
                              s.meta.key_max) for _, s in ks.view(name).segments()}
                for name in ks.partitions()}  # fmt: skip


def _compare_flushes(oracle: str, store: Path, tmp_path: Path) -> tuple[int, int]:
    """Our flush and the real crate's of the same directory, segment by segment: the new
    segments' structure (block payloads after decompression, index, top-level index,
    bloom filter, metadata but its creation time; ids included).  Returns (compared, left
    out because the real crate compacted that partition's L0 right after its flush)."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(store, ours)
    shutil.copytree(store, theirs)
    old = _segments(store)
    flush_keyspace(ours)
    _run(oracle, "flush", str(theirs))
    a, b = _segments(ours), _segments(theirs)
    compared = skipped = 0
    for name, segs in a.items():
        new = {sid: m for sid, m in segs.items() if sid not in old[name]}
        twins = {sid: m for sid, m in b[name].items() if sid not in old[name]}
        if len(levels_of(theirs, name)[0]) != len(levels_of(ours, name)[0]):
            skipped += len(new)  # fjall's leveled compaction merged its L0 meanwhile
            continue
        assert twins == new, name
        for sid in new:
            mine = _structure((ours / "partitions" / name / "segments" / str(sid)).read_bytes())
            real = _structure((theirs / "partitions" / name / "segments" /
                               str(sid)).read_bytes())  # fmt: skip
            mine["metadata"][2] = real["metadata"][2] = None  # creation time
            assert mine == real, (name, sid)
            compared += 1
        assert levels_of(theirs, name) == levels_of(ours, name)
    return compared, skipped


def levels_of(store: Path, name: str) -> list[list[int]]:
    raw = (store / "partitions" / name / "levels").read_bytes()
    return levels.decode(raw, name)


def _oracle_loaded(oracle: str, root: Path) -> Path:
    """A store the real crate wrote: several loads (batches) with many versions per key,
    deletes over puts and puts over deletes, and one key written three times in a batch."""
    ops: list[tuple[str, str, bytes, bytes | None]] = []
    for i in range(400):
        key = b"%04x" % i
        ops.append(("put", "d", key, b"\x01" * (i % 30)))
        if i % 2:
            ops.append(("del", "d", key, None))
        if i % 3 == 0:
            ops.append(("put", "d", key, b"\x03\x03"))
    _run(oracle, "load", str(root), stdin=_load_lines(ops))
    for n in range(3):
        ops = [("put", "d", b"%04x" % i, b"%d" % n) for i in range(n, 400, 5 + n)]
        ops += [("del", "d", b"%04x" % i, None) for i in range(n, 400, 7 + n)]
        ops += [("put", "e", b"e%d" % i, b"") for i in range(n * 10, n * 10 + 20)]
        _run(oracle, "load", str(root), stdin=_load_lines(ops))
    return root


@pytest.mark.parametrize("case", [*JOURNAL_CASES, "oracle-loaded"])
def test_our_flush_writes_the_segments_fjalls_flush_writes(case: str, tmp_path: Path) -> None:
    oracle = oracle_or_skip()
    if case == "oracle-loaded":
        store = _oracle_loaded(oracle, tmp_path / "src" / "loaded")
    else:
        store = extract(case, tmp_path / "src")
    compared, skipped = _compare_flushes(oracle, store, tmp_path / "as-is")
    # the same journals without segments: nothing is skipped for reaching them, and no L0
    # is full enough for fjall to compact it
    stripped = _strip_segments(shutil.copytree(store, tmp_path / "stripped-src"))
    compared2, skipped2 = _compare_flushes(oracle, stripped, tmp_path / "stripped")
    assert compared + skipped >= 1 and compared2 >= 1 and skipped2 == 0, (compared, compared2)
    assert skipped == 0 or case == "l0-overlap"  # its L0 of three fills up with the fourth
