"""The C path and the pure-Python path agree: the same file gives the same pairs, or the same
error (class, message, page and offset), on both; and the C XXH3-128 is bit-exact.

These tests compare the two backends directly, so they are generated once (under the "c"
session parameter) and skipped only when the extension is not built.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bbg_core.errors import MigrateError
from importers.redb import backend, open_redb
from importers.redb.dump import dump_lines
from importers.redb.tables import orders_bytewise
from tests.redb import synth
from tests.redb.cases import Case, all_cases, local_case
from tests.redb.test_mutation import _WORK, _base, mutations

Outcome = tuple[list[Any], tuple[Any, ...] | None]


COMPARES_BACKENDS = True  # generated once, under the "c" parameter (tests/redb/conftest.py)


def _capture(items: Iterator[Any]) -> Outcome:
    """Everything ``items`` yields, then the error that stopped it (None if none)."""
    got: list[Any] = []
    try:
        for item in items:
            got.append(item)
    except MigrateError as exc:
        return got, (type(exc).__name__, exc.message, sorted(exc.context.items()))
    return got, None


def _dump(path: Path, name: str) -> Iterator[Any]:
    with open_redb(path, backend=name) as db:
        yield ("txn", db.header.transaction_id, db.header.selected_slot)
        yield from dump_lines(db)


def _lookups(path: Path, name: str, probes: list[bytes]) -> Iterator[Any]:
    """absent() of all probe keys at once, then get() and iter_table(after=) on every
    bytewise table, for each probe key."""
    with open_redb(path, backend=name) as db:
        for info in db.tables():
            if info.kind != "table" or not orders_bytewise(info.key_type):
                continue
            yield ("absent", info.name, db.absent(info.name, probes))
            for probe in probes:
                yield ("get", info.name, probe, db.get(info.name, probe))
            yield ("after", info.name, list(db.iter_table(info.name, after=probes[0])))


def _agree(path: Path, probes: list[bytes] | None = None) -> Outcome:
    py = _capture(_dump(path, "python"))
    c = _capture(_dump(path, "c"))
    assert c == py
    if probes:
        assert _capture(_lookups(path, "c", probes)) == _capture(_lookups(path, "python", probes))
    return py


@pytest.fixture(params=[0, 1], ids=["scalar", "avx2"])
def xxh3_loop(request: pytest.FixtureRequest) -> Iterator[int]:
    """XXH3's long-input loop: the scalar one, then the AVX2 one (skipped without AVX2)."""
    from importers.redb import _c

    level: int = request.param
    if _c.xxh3_simd(level) != level:
        _c.xxh3_simd(1)
        pytest.skip("this CPU has no AVX2")
    try:
        yield level
    finally:
        _c.xxh3_simd(1)


def test_xxh3_128_is_bit_exact(xxh3_loop: int) -> None:
    from importers.redb import _c

    rng = random.Random(4)
    for n in range(2100):
        data = rng.randbytes(n)
        assert _c.xxh3_128(data) == xxhash.xxh3_128_intdigest(data), n
    for n in (4095, 4096, 4097, 65536, 1 << 20, (1 << 20) + 17):
        data = rng.randbytes(n)
        assert _c.xxh3_128(data) == xxhash.xxh3_128_intdigest(data), n
    assert _c.xxh3_128(bytes(5000)) == xxhash.xxh3_128_intdigest(bytes(5000))
    assert _c.xxh3_128(b"\xff" * 5000) == xxhash.xxh3_128_intdigest(b"\xff" * 5000)


@settings(max_examples=300, deadline=None, database=None)
@given(st.binary(max_size=3000))
def test_xxh3_128_matches_xxhash(data: bytes) -> None:
    from importers.redb import _c

    before = _c.xxh3_simd(1)
    try:
        for level in (0, 1):
            _c.xxh3_simd(level)
            assert _c.xxh3_128(data) == xxhash.xxh3_128_intdigest(data), level
    finally:
        _c.xxh3_simd(before)


def test_scalar_xxh3_reads_the_same(xxh3_loop: int, redb_file: Callable[[Case], Path]) -> None:
    """Page verification on each loop: the fixtures dump the same, corrupt ones still fail."""
    for case in all_cases()[:40]:
        _agree(redb_file(case))


def test_pairs_built_in_python_when_the_module_is_missing(
    redb_file: Callable[[Case], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``_redb_pairs`` the C path slices its batches in Python: same pairs."""
    from importers.redb import _c

    cases = all_cases()[:40]
    with_module = [_capture(_dump(redb_file(c), "c")) for c in cases]
    monkeypatch.setattr(_c, "_pairs", None)
    assert [_capture(_dump(redb_file(c), "c")) for c in cases] == with_module


def test_pairs_module_checks_its_offsets() -> None:
    from importers.redb import _c

    if _c._pairs is None:
        pytest.skip("importers.redb._redb_pairs is not built")
    data = b"keyvalue"
    quads = [0, 3, 3, 8, 8, 8, 8, 8]
    offsets = b"".join(v.to_bytes(8, "little") for v in quads)
    assert _c._pairs(data, offsets, 2) == [(b"key", b"value"), (b"", b"")]
    assert _c._pairs(data, offsets, 0) == []
    for bad in ([0, 3, 3, 9], [4, 3, 3, 8], [0, 3, 5, 4]):
        with pytest.raises(ValueError):
            _c._pairs(data, b"".join(v.to_bytes(8, "little") for v in bad), 1)
    with pytest.raises(ValueError):
        _c._pairs(data, offsets, 3)  # more entries than offsets
    with pytest.raises(ValueError):
        _c._pairs(data, offsets, -1)


@pytest.mark.parametrize("case", all_cases(), ids=lambda c: c.id)
def test_every_fixture_reads_the_same(case: Case, redb_file: Callable[[Case], Path]) -> None:
    lines, error = _agree(redb_file(case), [b"", b"\x00" * 8, b"k", b"\xff" * 40])
    assert (error is not None) == case.corrupt


def test_tiny_batches_and_oversized_entries(
    monkeypatch: pytest.MonkeyPatch, redb_file: Callable[[Case], Path]
) -> None:
    """A batch buffer smaller than every entry: each entry takes the "needs a larger buffer"
    path, and multimap keys repeat across batch boundaries."""
    from importers.redb import _c

    monkeypatch.setattr(_c, "BATCH_BYTES", 16)
    monkeypatch.setattr(_c, "BATCH", 3)
    for version, name in [("3.1.3", "large_values"), ("4.2.0", "multimap"), ("1.5.2", "types")]:
        _agree(redb_file(local_case(version, name)))


def test_get_equals_full_scan_on_both(redb_file: Callable[[Case], Path]) -> None:
    checked = absent_seen = 0
    for version, name in [("4.2.0", "btree_multilevel"), ("2.6.3", "cell"), ("1.5.2", "types")]:
        path = redb_file(local_case(version, name))
        for impl in backend.available():
            with open_redb(path, backend=impl) as db:
                for info in db.tables():
                    if info.kind != "table" or not orders_bytewise(info.key_type):
                        continue
                    pairs = dict(db.iter_table(info.name))
                    probes: list[bytes] = []
                    for key, value in pairs.items():
                        assert db.get(info.name, key) == value
                        checked += 1
                        for near in (key + b"\x00", key[:-1]):
                            assert db.get(info.name, near) == pairs.get(near)
                        flipped = key[:-1] + bytes([key[-1] ^ 1]) if key else b"\x00"
                        probes += [key[:-1], key, key + b"\x00", flipped]
                    assert db.get(info.name, b"\xff" * 70) == pairs.get(b"\xff" * 70)
                    # absent(): the positions get() answers None for, one list at a time.
                    probes.append(b"\xff" * 70)
                    expected = [i for i, key in enumerate(probes) if key not in pairs]
                    assert db.absent(info.name, probes) == expected
                    width = {len(key) for key in pairs}
                    if len(width) == 1:  # keys of one width: the C path's one call
                        same = [key for key in probes if len(key) in width]
                        assert db.absent(info.name, same) == [
                            i for i, key in enumerate(same) if key not in pairs
                        ]
                        absent_seen += bool(set(same) - set(pairs))
    assert checked > 1000 and absent_seen


def test_get_refuses_other_key_orders(redb_file: Callable[[Case], Path]) -> None:
    with open_redb(redb_file(local_case("2.6.3", "types")), backend="c") as db:
        with pytest.raises(ValueError, match="bytewise"):
            db.get("u64_u64", b"\x00" * 8)
        with pytest.raises(ValueError, match="multimap"):
            db.get("mm_str_u64", b"k")
        with pytest.raises(KeyError):
            db.get("no such table", b"")


def test_reading_after_close_is_refused(redb_file: Callable[[Case], Path]) -> None:
    for impl in backend.available():
        db = open_redb(redb_file(local_case("4.2.0", "btree_multilevel")), backend=impl)
        it = db.iter_table("long_str_keys")
        next(it)
        db.close()
        with pytest.raises(ValueError, match="closed"):
            list(it)


@pytest.mark.parametrize(
    "build",
    ["shared", "deep", "outside", "checksum", "unordered", "length", "empty", "type", "def"],
)
def test_crafted_files_fail_the_same(build: str, tmp_path: Path) -> None:
    f = synth.File()
    if build == "shared":
        node = f.add(synth.leaf([(synth.u64(1), synth.u64(1))], 8, 8))
        for _ in range(30):
            node = f.add(synth.branch([node, node], [synth.u64(1)], 8))
        data = synth.single_table(f, "t", (node[0], node[1], 1), 1)
    elif build == "deep":
        node = f.add(synth.leaf([(synth.u64(1), synth.u64(1))], 8, 8))
        for i in range(70):
            other = f.add(synth.leaf([(synth.u64(1000 + i), synth.u64(1))], 8, 8))
            node = f.add(synth.branch([node, other], [synth.u64(1)], 8))
        data = synth.single_table(f, "t", (node[0], node[1], 71), 71)
    elif build == "outside":
        a = f.add(synth.leaf([(synth.u64(1), synth.u64(1))], 8, 8))
        root = f.add(synth.branch([a, (1 << 40 | 5, a[1])], [synth.u64(1)], 8))
        data = synth.single_table(f, "t", (root[0], root[1], 2), 2)
    elif build == "checksum":
        a = f.add(synth.leaf([(synth.u64(1), synth.u64(1))], 8, 8))
        b = f.add(synth.leaf([(synth.u64(2), synth.u64(2))], 8, 8))
        root = f.add(synth.branch([a, (b[0], b[1] ^ (1 << 100))], [synth.u64(1)], 8))
        data = synth.single_table(f, "t", (root[0], root[1], 2), 2)
    elif build in ("unordered", "length"):
        body = bytearray(synth.leaf([(b"ab", b"x"), (b"c", b"y")], None, None))
        if build == "unordered":
            body[4] = 200
        page = f.add(bytes(body))
        length = 2 if build == "unordered" else 7
        definition = synth.definition(
            (page[0], page[1], length), length, None, None, "&[u8]", "&[u8]"
        )
        tt = f.add(synth.leaf([(b"t", definition)], None, None))
        data = f.build((tt[0], tt[1], 1))
    elif build == "empty":
        a = f.add(synth.leaf([], 8, 8))
        data = synth.single_table(f, "t", (a[0], a[1], 0), 0)
    elif build == "type":
        a = f.add(b"\x07" + bytes(15))
        data = synth.single_table(f, "t", (a[0], a[1], 0), 0)
    else:
        tt = f.add(synth.leaf([(b"t", b"\x03\x00")], None, None))
        data = f.build((tt[0], tt[1], 1))
    path = tmp_path / "x.redb"
    path.write_bytes(data)
    _, error = _agree(path, [b"", synth.u64(1), b"c"])
    assert error is not None


def _check_mutant(key: str, data: bytes) -> None:
    base = _base(*key.split("/"))
    path = _WORK / f"agree-{os.getpid()}.redb"
    path.write_bytes(data)
    try:
        keys = [
            bytes.fromhex(line.split('"key":"')[1].split('"')[0])
            for line in base.oracle[:400]
            if '"key":"' in line
        ]
        _agree(path, [b"", *keys[::37][:6]])
    finally:
        path.unlink()


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
@given(mutations())
def test_mutated_files_read_the_same(mutation: tuple[str, bytes, str]) -> None:
    key, data, _ = mutation
    _check_mutant(key, data)


@pytest.mark.slow
@settings(
    max_examples=5000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
@given(mutations())
def test_mutated_files_read_the_same_many(mutation: tuple[str, bytes, str]) -> None:
    key, data, _ = mutation
    _check_mutant(key, data)
