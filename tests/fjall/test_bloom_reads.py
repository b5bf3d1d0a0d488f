"""Point reads ask each segment's bloom filter first (``Keyspace.get``): our reading of the
real crate's filters has no false negatives and rejects most absent keys, the answers are
those of reads without filters, and a key a filter lacks costs no block."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from migrate.store.fjall import open_keyspace, reader
from migrate.store.fjall.layout import DEFAULT_CONFIG
from migrate.store.fjall.writer import build_keyspace
from tests.fjall.conftest import CASES


def _absent(rng: random.Random, keys: set[bytes], count: int) -> list[bytes]:
    """Keys a segment lacks: its own keys changed a little, and random ones."""
    ordered = sorted(keys)
    out: list[bytes] = []
    while len(out) < count:
        base = rng.choice(ordered)
        key = rng.choice([base + b"\x00", base[:-1] + bytes([base[-1] ^ 1]) if base else b"x",
                          rng.randbytes(rng.randrange(1, 40))])  # fmt: skip
        if key and key not in keys:
            out.append(key)
    return out


def test_the_real_crates_filters_hold_every_key_and_reject_most_others(
    cases_dir: Path,
) -> None:
    checked = absent_total = passed = 0
    for case in CASES:
        rng = random.Random(case)
        with open_keyspace(cases_dir / case) as ks:
            for name in ks.partitions():
                for _, seg in ks.view(name).segments():
                    filt = seg.bloom_filter()
                    if filt is None:
                        continue
                    keys = {item[0] for run in seg.items() for item in run}
                    assert len(keys) == seg.meta.key_count
                    missed = [k for k in keys if not filt.contains(k)]
                    assert not missed, (case, name, seg.id, missed[:3])
                    absent = _absent(rng, keys, 400)
                    absent_total += len(absent)
                    passed += sum(filt.contains(k) for k in absent)
                    checked += 1
    assert checked >= 10  # the fixtures' segments carry filters
    # 10 bits a key gives about 1% false positives; 1e-5 and 5e-4 rates far fewer.
    assert passed <= 0.03 * absent_total, (passed, absent_total)


@pytest.mark.parametrize("case", CASES)
def test_point_reads_answer_the_same_with_and_without_filters(
    case: str, cases_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(case)
    with open_keyspace(cases_dir / case) as ks:
        asked = {}
        for name in ks.partitions():
            keys = {k for k, _ in ks.scan(name)} | {e.key for e in ks.entries(name)}
            if not keys:
                continue
            sample = rng.sample(sorted(keys), min(300, len(keys)))
            asked[name] = sorted(sample + _absent(rng, keys, 300))
        with_filters = {n: [ks.get(n, k) for k in keys] for n, keys in asked.items()}
        assert ks._filters or not any(seg.filter_size for n in asked
                                      for _, seg in ks.view(n).segments())  # fmt: skip
    monkeypatch.setattr(reader, "FILTER_BUDGET", 0)
    with open_keyspace(cases_dir / case) as ks:
        without = {n: [ks.get(n, k) for k in keys] for n, keys in asked.items()}
        assert not any(ks._filters.values())
    assert with_filters == without


def _blocks(ks: reader.Keyspace, name: str) -> int:
    return sum(seg.blocks_decoded for _, seg in ks.view(name).segments())


def test_a_key_the_filter_lacks_costs_no_block(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    rows = sorted({rng.randbytes(16): rng.randbytes(20) for _ in range(5000)}.items())
    held = {k for k, _ in rows}
    build_keyspace(tmp_path / "ks", {"t": rows})
    absent = _absent(rng, held, 2000)  # in no order: each read may need another block
    with open_keyspace(tmp_path / "ks") as ks:
        assert all(seg.filter_size for _, seg in ks.view("t").segments())
        hits = sum(ks.get("t", k) is not None for k in absent)
        # a false positive reads one block; the rest read none
        assert hits == 0 and _blocks(ks, "t") <= 0.03 * len(absent)
        for key, value in rows[::97]:
            assert ks.get("t", key) == value
        assert _blocks(ks, "t") > 0
    monkeypatch.setattr(reader, "FILTER_BUDGET", 0)  # no filter kept: every key costs a block
    with open_keyspace(tmp_path / "ks") as ks:
        assert all(ks.get("t", k) is None for k in absent)
        assert _blocks(ks, "t") > len(absent) // 2


def test_a_segment_without_a_filter_is_read(tmp_path: Path) -> None:
    rows = [(b"k%05d" % i, b"v%d" % i) for i in range(3000)]
    config = dataclasses.replace(DEFAULT_CONFIG, bloom_bits_per_key=-1)
    build_keyspace(tmp_path / "ks", {"t": rows}, config=config)
    with open_keyspace(tmp_path / "ks") as ks:
        assert not any(seg.filter_size for _, seg in ks.view("t").segments())
        assert ks.get("t", b"k01234") == b"v1234"
        assert ks.get("t", b"k01234\x00") is None
        assert ks._filters and not any(ks._filters.values())


def test_filters_past_the_budget_are_not_kept(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [(b"k%06d" % i, b"v") for i in range(20_000)]
    build_keyspace(tmp_path / "ks", {"a": rows[:10_000], "b": rows[10_000:]})
    with open_keyspace(tmp_path / "ks") as ks:
        size_a = sum(seg.filter_size for _, seg in ks.view("a").segments())
    monkeypatch.setattr(reader, "FILTER_BUDGET", size_a)
    with open_keyspace(tmp_path / "ks") as ks:
        assert ks.get("a", b"k000001") == b"v" and ks.get("b", b"k015000") == b"v"
        assert ks.get("b", b"k015000\x00") is None
        kept = [f for f in ks._filters.values() if f is not None]
        assert len(kept) == 1 and ks._filter_bytes == size_a
