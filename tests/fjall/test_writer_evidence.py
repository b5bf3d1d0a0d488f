"""Writer evidence that does not rest on our reader: the real crate's own segments and
journal batches, re-encoded by our writer from their own entries, compared structure by
structure with what the real crate wrote.

The files are parsed here by a small independent parser (``struct`` and ``lz4`` only).
What is compared, and what cannot match:

* data blocks: the same number, each with the identical *decompressed* payload (same block
  boundaries, same item encoding), compression tag and item-size field.  The compressed
  bytes differ: lz4_flex and the LZ4 library choose different matches (both decompress
  each other's blocks), so checksums, stored lengths and every file offset differ; offsets
  are compared as "which block", previous-block links likewise;
* index blocks and the top-level index: the same boundaries and end keys, each handle
  naming the same block;
* the bloom filter: byte for byte (the policy the real writer used: a flush or a compaction
  into L0 uses a false-positive rate of 1e-5, into L1 5e-4);
* metadata: every field except ``file_size`` (= where the index starts, an offset);
  ``created_at`` is the original's, passed in;
* journals: every batch re-encoded from its items and seqno equals the real bytes exactly.
"""

from __future__ import annotations

import io
import os
import struct
from pathlib import Path
from typing import Any

import lz4.block
import pytest
import xxhash

from migrate.store.fjall import backend, bloom, journal
from migrate.store.fjall.segment import SegmentWriter
from tests.fjall.conftest import CASES, expected


def _varint(b: bytes, p: int) -> tuple[int, int]:
    r = s = 0
    while True:
        c = b[p]
        p += 1
        r |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return r, p


def _block(data: bytes, off: int) -> dict[str, Any]:
    magic, comp, lvl, cs, prev, stored, size = struct.unpack_from(">4sBBQQII", data, off)
    assert magic == b"LSM\x02"
    raw = data[off + 30 : off + 30 + stored]
    assert xxhash.xxh3_64_intdigest(raw) == cs
    payload = lz4.block.decompress(raw) if comp == 1 else raw
    return {"comp": (comp, lvl), "prev": prev, "size": size, "payload": payload,
            "end": off + 30 + stored}  # fmt: skip


def _handles(payload: bytes) -> list[tuple[bytes, int]]:
    (n,) = struct.unpack_from(">I", payload)
    p, out = 4, []
    for _ in range(n):
        o, p = _varint(payload, p)
        k, p = _varint(payload, p)
        out.append((payload[p : p + k], o))
        p += k
    return out


def _items(payload: bytes) -> list[tuple[bytes, bytes, int, int]]:
    (n,) = struct.unpack_from(">I", payload)
    p, out = 4, []
    for _ in range(n):
        seq, p = _varint(payload, p)
        t = payload[p]
        kl, p = _varint(payload, p + 1)
        key = payload[p : p + kl]
        p += kl
        val = b""
        if t == 0:
            vl, p = _varint(payload, p)
            val = payload[p : p + vl]
            p += vl
        out.append((key, val, seq, t))
    return out


def _structure(data: bytes) -> dict[str, Any]:
    """A segment file as structure, with offsets replaced by block ordinals."""
    meta_at, idx_at, tli_at, bloom_at, *rest = struct.unpack_from(">7Q", data, len(data) - 256)
    assert rest == [0, 0, 0] and data[-4:] == b"LSM\x02"
    data_blocks, pos = [], 0
    while pos < idx_at:
        b = _block(data, pos)
        data_blocks.append((pos, b))
        pos = b["end"]
    data_ord = {off: i for i, (off, _) in enumerate(data_blocks)}
    index_blocks, pos = [], idx_at
    while pos < tli_at:
        b = _block(data, pos)
        index_blocks.append((pos, b))
        pos = b["end"]
    index_ord = {off: i for i, (off, _) in enumerate(index_blocks)}
    rel_ord = {off - idx_at: i for i, (off, _) in enumerate(index_blocks)}
    tli = _block(data, tli_at)
    meta = data[meta_at : len(data) - 256]
    fields = list(struct.unpack_from(">4sQ16s6Q4I2sBQQ", meta))
    fields[7] = None  # file_size: where the index starts (an offset)
    return {
        "data": [(b["comp"], b["size"], data_ord.get(b["prev"], b["prev"]), b["payload"])
                 for _, b in data_blocks],
        "index": [(b["comp"], b["size"], rel_ord.get(b["prev"], b["prev"]),
                   [(k, data_ord[o]) for k, o in _handles(b["payload"])])
                  for _, b in index_blocks],
        "tli": (tli["comp"], tli["prev"], [(k, index_ord[o]) for k, o in
                                           _handles(tli["payload"])]),
        "bloom": data[bloom_at:meta_at] if bloom_at else None,
        "metadata": fields, "key_range": meta[111:],
    }  # fmt: skip


def _segments() -> list[tuple[str, str, int, str]]:
    """(case, partition, level, segment id) of every segment of every fixture."""
    out = []
    for case in CASES:
        for pname, part in expected(case)["partitions"].items():
            for level, ids in part["levels"].items():
                out += [(case, pname, int(level[1:]), str(sid)) for sid in ids]
    return out


SEGMENTS = _segments()


def test_every_fixture_segment_is_covered() -> None:
    assert len(SEGMENTS) == 52
    assert {level for *_, level, _ in SEGMENTS} == {0, 1}


@pytest.mark.parametrize("spill", [False, True], ids=["hashes-held", "hashes-spilled"])
@pytest.mark.parametrize("twin", backend.available())
@pytest.mark.parametrize(("case", "partition", "level", "sid"), SEGMENTS,
                         ids=[f"{c}-{p[:12]}-{s}" for c, p, _, s in SEGMENTS])  # fmt: skip
def test_a_real_segment_reencodes_identically(
    case: str, partition: str, level: int, sid: str, twin: str, spill: bool, cases_dir: Path,
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Also with the keys' bloom hashes spilled to a file every 3 keys (bloom.KeyHashes):
    the filter read back part by part is the real crate's filter."""
    real = (cases_dir / case / "partitions" / partition / "segments" / sid).read_bytes()
    theirs = _structure(real)
    created_at = int.from_bytes(theirs["metadata"][2], "big")
    policy = bloom.FpRate(1e-5) if level == 0 else bloom.FpRate(5e-4)
    out = io.BytesIO()
    if spill:
        monkeypatch.setattr(bloom, "SPILL_KEYS", 3)
    writer = SegmentWriter(
        out, int(sid), backend.resolve(twin), bloom_policy=policy, created_at=created_at,
        spill_dir=str(tmp_path) if spill else None,
    )  # fmt: skip
    for _c, _s, _p, payload in theirs["data"]:
        for key, value, seqno, vtype in _items(payload):
            writer.write(key, value, seqno, vtype)
    writer.finish()
    if spill and writer.keys >= 3:
        assert writer.hashes.spilled > 0
    assert os.listdir(tmp_path) == []  # the spill file never had a name
    ours = _structure(out.getvalue())
    assert len(ours["data"]) == len(theirs["data"])
    for n, (a, b) in enumerate(zip(ours["data"], theirs["data"], strict=True)):
        assert a == b, f"data block {n} differs"
    assert ours["index"] == theirs["index"]
    assert ours["tli"] == theirs["tli"]
    assert ours["bloom"] == theirs["bloom"]
    assert ours["metadata"] == theirs["metadata"]
    assert ours["key_range"] == theirs["key_range"]


Batch = tuple[int, int, int, list[tuple[str, bytes, bytes, int]]]


def _journal_batches(data: bytes) -> list[Batch]:
    """(start, end, seqno, items) of every complete batch (independent parser)."""
    out, p = [], 0
    while p + 15 <= len(data) and data[p] == 1:
        start = p
        count, seqno = struct.unpack_from(">IQ", data, p + 1)
        p += 15
        items = []
        for _ in range(count):
            if p + 3 > len(data) or data[p] != 2:
                return out
            t, plen = data[p + 1], data[p + 2]
            name = data[p + 3 : p + 3 + plen].decode()
            q = p + 3 + plen
            (kl,) = struct.unpack_from(">H", data, q)
            key = data[q + 2 : q + 2 + kl]
            (vl,) = struct.unpack_from(">I", data, q + 2 + kl)
            val = data[q + 6 + kl : q + 6 + kl + vl]
            p = q + 6 + kl + vl
            items.append((name, key, val, t))
        if p + 13 > len(data) or data[p] != 3:
            return out
        p += 13
        out.append((start, p, seqno, items))
    return out


JOURNALS = [(case, j["name"]) for case in CASES for j in expected(case)["journals"]]


@pytest.mark.parametrize(("case", "name"), JOURNALS)
def test_real_journal_batches_reencode_byte_for_byte(case: str, name: str, cases_dir: Path) -> None:
    data = (cases_dir / case / "journals" / name).read_bytes()
    batches = _journal_batches(data)
    info = next(j for j in expected(case)["journals"] if j["name"] == name)
    assert len(batches) == info["batches"]
    assert sum(len(b[3]) for b in batches) == info["items"]
    for start, end, seqno, items in batches:
        assert journal.encode_batch(items, seqno) == data[start:end]
