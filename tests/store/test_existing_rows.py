"""How a run into a BBG database that holds history compares its rows with the store's
(``keyspace_aside._Existing``): merged with a scan, seeking past store rows below each batch,
or by point reads (asking the segments' bloom filters, or not) where the store is dense in a
batch's key range.  Every way counts the same new rows and finds the same first conflict as
a comparison with every store row, and a big store is not read whole."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from migrate.store.fjall import open_keyspace, reader
from migrate.store.fjall.writer import build_keyspace
from migrate.store.keyspace_aside import _Existing

Rows = list[tuple[bytes, bytes]]


def _namespaced(rng: random.Random) -> tuple[Rows, Rows]:
    """Store: 40 namespaces of 500 rows; import: 3 new namespaces far apart, and rows of 3 held ones
    (most the same bytes, two with other bytes, some indices the store lacks)."""
    def key(ns: int, i: int) -> bytes:
        return ns.to_bytes(4, "big") * 8 + i.to_bytes(8, "big")

    store = {key(ns * 10, i): rng.randbytes(40) for ns in range(40) for i in range(500)}
    new = {key(ns, i): rng.randbytes(40) for ns in (5, 155, 315) for i in range(300)}
    for ns in (30, 150, 390):
        for i in range(450, 560):
            k = key(ns, i)
            new[k] = store.get(k, rng.randbytes(40))
    for k in (key(150, 470), key(390, 451)):
        new[k] = b"other bytes"
    return sorted(store.items()), sorted(new.items())


def _spread(rng: random.Random) -> tuple[Rows, Rows]:
    """Store: 30,000 rows keyed by random ids; import: 3,000 ids, a third held (two with other
    bytes), the rest new -- keys spread over the store's whole range, as content ids are."""
    store = {rng.randbytes(32): rng.randbytes(30) for _ in range(30_000)}
    held = rng.sample(sorted(store), 1000)
    new = {k: store[k] for k in held}
    new.update({rng.randbytes(32): rng.randbytes(30) for _ in range(2000)})
    for k in rng.sample(held, 2):
        new[k] = b"other bytes"
    return sorted(store.items()), sorted(new.items())


def _sparse(rng: random.Random) -> tuple[Rows, Rows]:
    """Store: 30,000 rows keyed by random ids; import: 300 ids, a tenth held (one with other
    bytes): a few new keys spread over a big store."""
    store = {rng.randbytes(32): rng.randbytes(30) for _ in range(30_000)}
    held = rng.sample(sorted(store), 30)
    new = {k: store[k] for k in held}
    new.update({rng.randbytes(32): rng.randbytes(30) for _ in range(270)})
    new[held[7]] = b"other bytes"
    return sorted(store.items()), sorted(new.items())


def _reference(store: Rows, new: Rows) -> tuple[int, bytes | None]:
    held = dict(store)
    fresh = sum(k not in held for k, _ in new)
    conflicts = [k for k, v in new if k in held and held[k] != v]
    return fresh, (conflicts[0] if conflicts else None)


@pytest.mark.parametrize("shape", [_namespaced, _spread, _sparse])
@pytest.mark.parametrize("way", ["default", "seek", "look up", "look up, no bloom"])
def test_every_way_gives_a_full_comparisons_answer(
    tmp_path: Path, shape: object, way: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(f"{shape.__name__}{way}")  # type: ignore[attr-defined]
    store, new = shape(rng)  # type: ignore[operator]
    if way != "default":  # one block a run: each way's reading is bounded by what it needs
        monkeypatch.setattr("migrate.store.fjall.segment.FIRST_CHUNK", 4096)
        monkeypatch.setattr("migrate.store.fjall.segment.CHUNK", 4096)
    if way == "seek":  # a seek past every run that holds no new key, never a point read
        monkeypatch.setattr(_Existing, "SKIP_RUNS", 0)
        monkeypatch.setattr(_Existing, "DENSE", 10**9)
    elif way.startswith("look up"):  # point reads only
        monkeypatch.setattr(_Existing, "DENSE", -1)
        if way.endswith("no bloom"):
            monkeypatch.setattr(reader, "FILTER_BUDGET", 0)
    build_keyspace(tmp_path / "ks", {"t": store})
    with open_keyspace(tmp_path / "ks") as ks:
        existing = _Existing(ks, "t")
        at = 0
        while at < len(new):
            size = rng.randrange(1, 400)
            existing.merge(new[at : at + size])
            at += size
        filters = [f for f in ks._filters.values() if f is not None]
        blocks = sum(seg.blocks_decoded for _, seg in ks.view("t").segments())
    assert (existing.new, existing.conflict) == _reference(store, new)
    assert existing.seen == len(new)
    if way == "seek":
        assert existing.looked_up == 0
        if shape is _namespaced:
            # New namespaces far apart: the scan seeks instead of reading the store between.
            assert existing.scans > 3 and existing.read < len(store) // 4
    elif way.startswith("look up"):
        assert existing.looked_up == len(new) and existing.read == 0
        assert bool(filters) == (way == "look up")
        if shape is _sparse and filters:  # the filters answer for most absent keys
            assert blocks < existing.new // 4
    elif shape is _sparse:  # by default: point reads, not the store read whole
        assert existing.looked_up > len(new) // 2 and existing.read < len(store) // 4


def test_a_partition_the_store_lacks_holds_nothing() -> None:
    existing = _Existing(None, "t")
    existing.merge([(b"a", b"1"), (b"b", b"2")])
    assert (existing.new, existing.conflict, existing.read) == (2, None, 0)


def test_rows_dense_in_the_store_are_merged_and_sparse_ones_looked_up(tmp_path: Path) -> None:
    """The way is chosen per batch from the store rows in its key range: a batch of every
    other store key is merged with a scan; one key in 100 is looked up."""
    store = [(b"k%06d" % i, b"v%d" % i) for i in range(20_000)]
    build_keyspace(tmp_path / "ks", {"t": store})
    with open_keyspace(tmp_path / "ks") as ks:
        dense = _Existing(ks, "t")
        dense.merge(store[5000:7000:2])
        sparse = _Existing(ks, "t")
        sparse.merge([(k + b"\x00", v) for k, v in store[::100]])
    assert (dense.new, dense.looked_up, dense.scans) == (0, 0, 1)
    assert dense.read < len(store) // 2  # its range and some read-ahead, not the store
    assert (sparse.new, sparse.looked_up, sparse.read) == (200, 200, 0)
