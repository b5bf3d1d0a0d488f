"""The C twin and the pure-Python twin give identical results and identical errors: on every
real keyspace (rows, newest versions, info, check) and, function by function, on real
blocks and journals with damage applied, and on arbitrary rows."""

from __future__ import annotations

import random
import struct
from array import array
from pathlib import Path
from typing import Any

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.store.fjall import backend, bloom, open_keyspace
from migrate.store.fjall import report as fjreport
from migrate.store.fjall.block import ItemError
from tests.fjall.conftest import CASES

if "c" not in backend.available():
    pytest.skip("the Fjall C extension is not built (pure-Python install)", allow_module_level=True)

PY, C = backend.resolve("python"), backend.resolve("c")


def _call(fn: Any, *args: Any) -> Any:
    try:
        return ("ok", fn(*args))
    except ItemError as exc:
        return ("item-error", exc.code, exc.pos)


@pytest.mark.parametrize("case", CASES)
def test_every_keyspace_reads_the_same(case: str, cases_dir: Path) -> None:
    docs = []
    for twin in ("python", "c"):
        with open_keyspace(cases_dir / case, backend_name=twin) as ks:
            entries = {name: list(ks.entries(name)) for name in ks.partitions()}
            info, check = fjreport.info(ks), fjreport.check(ks)
            info["reader"] = check["reader"] = None
            docs.append((entries, info, check))
    assert docs[0] == docs[1]


def _payloads(root: Path, limit: int = 40) -> list[bytes]:
    out = []
    for seg_path in sorted(root.glob("*/partitions/*/segments/*"))[:12]:
        data = seg_path.read_bytes()
        pos = 0
        idx = struct.unpack_from(">Q", data, len(data) - 248)[0]
        while pos < idx and len(out) < limit:
            comp, stored = data[pos + 4], struct.unpack_from(">I", data, pos + 22)[0]
            raw = data[pos + 30 : pos + 30 + stored]
            import lz4.block

            out.append(lz4.block.decompress(raw) if comp == 1 else raw)
            pos += 30 + stored
    return out


def _mutate(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return bytes([rng.randrange(256)])
    kind = rng.randrange(4)
    pos = rng.randrange(len(data))
    if kind == 0:
        return data[:pos]
    if kind == 1:
        out = bytearray(data)
        out[pos] ^= 1 << rng.randrange(8)
        return bytes(out)
    if kind == 2:
        return data[:pos] + bytes([rng.randrange(256)]) * rng.randrange(1, 6) + data[pos:]
    return data[:pos] + data[pos + rng.randrange(1, 8) :]


def test_item_decoding_agrees_on_real_and_damaged_payloads(cases_dir: Path) -> None:
    rng = random.Random(7)
    payloads = _payloads(cases_dir)
    assert payloads
    for payload in payloads:
        assert _call(C.decode_items, payload) == _call(PY.decode_items, payload)
        for _ in range(25):
            bad = _mutate(rng, payload)
            assert _call(C.decode_items, bad) == _call(PY.decode_items, bad), bad.hex()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_item_decoding_agrees_on_arbitrary_bytes(data: bytes) -> None:
    assert _call(C.decode_items, data) == _call(PY.decode_items, data)


def test_block_runs_agree_on_real_and_damaged_segments(cases_dir: Path) -> None:
    rng = random.Random(11)
    for seg_path in sorted(cases_dir.glob("*/partitions/*/segments/*"))[:20]:
        data = seg_path.read_bytes()
        idx = struct.unpack_from(">Q", data, len(data) - 248)[0]
        region = data[:idx]
        for mode in (0, 1):
            assert C.blocks_decode(region, 0, mode, None) == PY.blocks_decode(region, 0, mode, None)
        for _ in range(15):
            bad = _mutate(rng, region[: 40000])
            for mode, last in ((0, None), (1, None), (1, b"k")):
                assert C.blocks_decode(bad, 0, mode, last) == PY.blocks_decode(bad, 0, mode, last)


def test_journal_markers_agree_on_real_and_damaged_journals(cases_dir: Path) -> None:
    rng = random.Random(13)
    for jpath in sorted(cases_dir.glob("*/journals/*")):
        data = jpath.read_bytes()
        data = data[: len(data.rstrip(b"\0")) + 64][:300000]
        assert C.journal_markers(data, 0) == PY.journal_markers(data, 0)
        for _ in range(30):
            bad = _mutate(rng, data[:5000])
            pos = rng.randrange(len(bad) + 1)
            assert C.journal_markers(bad, pos) == PY.journal_markers(bad, pos), jpath


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.binary(min_size=1, max_size=20), st.binary(max_size=900)),
                max_size=60), st.integers(0, 2**64 - 1), st.booleans(), st.booleans())  # fmt: skip
def test_bulk_encoding_agrees(
    rows: list[tuple[bytes, bytes]], seqno: int, final: bool, in_order: bool
) -> None:
    if in_order:  # mostly valid input; otherwise whatever order hypothesis made
        rows = sorted(dict(rows).items())
    for hash_fn in (None, xxhash.xxh3_128_digest):
        a = C.encode_rows(rows, 0, seqno, 4096, None, final, hash_fn)
        b = PY.encode_rows(rows, 0, seqno, 4096, None, final, hash_fn)
        assert a == b


def test_bulk_encoding_refuses_the_same_rows() -> None:
    good = [(b"a", b"1"), (b"b", b"2")]
    for bad, code in (([*good, (b"b", b"x")], 4), ([*good, (b"", b"x")], 2),
                      ([*good, [b"c", b"x"]], 1), ([*good, (b"c", "x")], 1)):  # fmt: skip
        got = [t.encode_rows(bad, 0, 0, 4096, None, True, None) for t in (C, PY)]
        assert got[0] == got[1]
        assert got[0][3] == (code, 2)


def test_live_filter_and_item_encoding_agree() -> None:
    rng = random.Random(3)
    for _ in range(200):
        keys = sorted(rng.choice([b"a", b"b", b"bb", b"c"]) for _ in range(rng.randrange(12)))
        items = [(k, bytes([rng.randrange(256)]) * rng.randrange(3), rng.randrange(5),
                  rng.randrange(3)) for k in keys]  # fmt: skip
        items = [(k, v if t == 0 else b"", s, t) for k, v, s, t in items]
        last = rng.choice([None, b"a", b"b"])
        assert C.live(items, last) == PY.live(items, last)
        assert C.encode_items(items) == PY.encode_items(items)
        handles = [(k, rng.getrandbits(rng.choice([7, 14, 40, 64]))) for k in keys]
        assert C.encode_handles(handles) == PY.encode_handles(handles)


def test_bloom_filters_agree() -> None:
    rng = random.Random(5)
    h1 = array("Q", (rng.getrandbits(64) for _ in range(500)))
    h2 = array("Q", (rng.getrandbits(64) for _ in range(500)))
    for policy in (bloom.BitsPerKey(10), bloom.FpRate(1e-5), bloom.FpRate(5e-4)):
        assert C.build_bloom(policy, h1, h2) == PY.build_bloom(policy, h1, h2)


def test_the_interface_version_is_one_number() -> None:
    from migrate.probe import versions as backends
    from migrate.store.fjall import _c

    source = (Path(_c.__file__).parent / "_fjall.c").read_text()
    assert f"#define FJ_ABI {_c.ABI}\n" in source
    assert backends.FJALL_ABI == _c.ABI == _c._ext.abi()


def test_take_agrees() -> None:
    rows = [(b"k%d" % i, b"v" * i) for i in range(100)] + [("bad",)]  # type: ignore[list-item]
    for cap in ((10, 1 << 30), (1000, 200), (1, 1)):
        assert C.take(iter(rows), *cap) == PY.take(iter(rows), *cap)
