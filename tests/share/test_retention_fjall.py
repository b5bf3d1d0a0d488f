"""``excise`` and ``nohistory`` on a Fjall store (the real BBG database): the removed bytes are
physically gone from every file of the store -- segments, journals -- and of its records
(the sharing issue, item 7), not merely hidden by a tombstone.

Each test reads every file under the store directory and its records directory as raw bytes
before (the bytes are there: the test can fail) and after the verb (they are not), checks the
rows are gone from the dump and nothing else changed, and that ``doctor`` finds the store
healthy.  The stores: one ``run`` made from cell-small (bulk segments), with a batch appended
to its journal afterwards (``api.fjall_append``) holding a distinctive payload.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import lz4.block
import pytest

from migrate import api
from migrate.store.codec import CONTENT, HEADS, HISTORY, REQUESTS, history_key
from migrate.store.engine import FJALL, records_dir
from tests.fjall.conftest import extract
from tests.share.conftest import run_cli
from tests.support import stores

pytestmark = pytest.mark.engine(FJALL)

# Incompressible and unlike anything in the store: 512 bytes of a SHA-256 chain.
PAYLOAD = b"".join(hashlib.sha256(b"excise-me %d" % i).digest() for i in range(16))
PAYLOAD_ID = hashlib.sha256(b"the payload's key").digest()


def raw_bytes(store: Path) -> bytes:
    """Every file of the store and of its records, concatenated (separated by a NUL run)."""
    out = []
    for base in (store, records_dir(store)):
        for path in sorted(base.rglob("*")):
            if path.is_file() and not path.is_symlink():
                out.append(path.read_bytes())
    return (b"\0" * 64).join(out)


def windows(value: bytes, width: int = 24) -> list[bytes]:
    """Slices of ``value`` a compressed block would still hold as literals."""
    return [value[i:i + width] for i in range(0, max(len(value) - width, 0) + 1, width)]


def present(value: bytes, raw: bytes) -> bool:
    return any(w in raw for w in windows(value))


def live_bytes(store: Path) -> bytes:
    """Every live row's key and value in every partition of the keyspace."""
    with api.fjall_open(store) as ks:
        return b"\0".join(k + b"\0" + v for name in ks.partitions() for k, v in ks.scan(name))


def own(value: bytes, live: bytes, ids: list[bytes]) -> list[bytes]:
    """The slices of a removed ``value`` that are its own: outside every id it names (the
    ledger keeps ids, never bytes) and held by no live row."""
    mask = bytearray(len(value))
    for ident in ids:
        at = value.find(ident)
        while at >= 0:
            mask[at:at + len(ident)] = b"\1" * len(ident)
            at = value.find(ident, at + 1)
    out, width = [], 16
    for i in range(0, len(value) - width + 1, width):
        if not any(mask[i:i + width]) and value[i:i + width] not in live:
            out.append(value[i:i + width])
    return out


def gone_from_disk(removed: list[bytes], raw_before: bytes, store: Path,
                   ids: list[bytes]) -> None:
    """Some of the removed values' own bytes were in the raw files before; none are after."""
    live, raw = live_bytes(store), raw_bytes(store)
    mine = [w for value in removed for w in own(value, live, ids)]
    assert [w for w in mine if w in raw_before]
    assert not [w for w in mine if w in raw]


@pytest.fixture
def fj(fjall_migrated: Path, tmp_path: Path) -> Path:
    """A copy of the migrated Fjall store, with PAYLOAD appended in a journal batch."""
    store = tmp_path / "bbg"
    shutil.copytree(fjall_migrated, store)
    shutil.copytree(records_dir(fjall_migrated), records_dir(store))
    api.fjall_append(store, [(CONTENT, PAYLOAD_ID, PAYLOAD)])
    return store


def _cli(store: Path, *args: str) -> dict[str, object]:
    done = run_cli("--store", str(store), *args, "--yes", "--json", stdin=b"")
    assert done.returncode == 0, done.stderr
    doc: dict[str, object] = json.loads(done.stdout)
    return doc


def _healthy(store: Path) -> None:
    done = run_cli("--store", str(store), "doctor", "--json")
    doc = json.loads(done.stdout)
    assert done.returncode == 0 and doc["healthy"], (doc["problems"], done.stderr)


def _no_leftovers(store: Path) -> None:
    assert [n for n in os.listdir(store.parent) if n.startswith(".")] == []


def _unique_tail(store: Path, raw: bytes) -> tuple[bytes, bytes]:
    """A content row (id, value) written by ``run`` whose bytes show in the raw files."""
    for key, value in stores.live_rows(store, CONTENT):
        if len(value) >= 64 and present(value, raw) and key != PAYLOAD_ID:
            return key, value
    raise AssertionError("no content row shows in the raw files")


def _without(dump: dict[str, list[tuple[object, ...]]], table: str, keys: set[bytes]
             ) -> list[tuple[object, ...]]:  # fmt: skip
    """The rows of partition ``table`` in a dump, less ``keys``."""
    return [r for r in dump[f"fjall:{table}"] if r[0] not in keys]


def test_excise_content_leaves_no_byte_on_disk(fj: Path) -> None:
    raw_before = raw_bytes(fj)
    key, value = _unique_tail(fj, raw_before)
    assert PAYLOAD in raw_before  # in the journal
    before = stores.dump(fj)
    doc = _cli(fj, "excise", "--content", PAYLOAD_ID.hex(), "--content", key.hex())
    assert sorted(doc["contents"]) == sorted([PAYLOAD_ID.hex(), key.hex()])  # type: ignore
    assert doc["tx"] is not None and doc["cannot_reach"]
    gone_from_disk([PAYLOAD], raw_before, fj, [])
    gone_from_disk([value], raw_before, fj, [key])
    raw = raw_bytes(fj)
    assert not present(PAYLOAD, raw)
    assert lz4.block.compress(PAYLOAD, store_size=False)[8:40] not in raw
    assert stores.live_get(fj, CONTENT, PAYLOAD_ID) is None
    assert stores.live_get(fj, CONTENT, key) is None
    after = stores.dump(fj)
    assert _without(after, CONTENT, set()) == _without(before, CONTENT, {PAYLOAD_ID, key})
    assert len(_without(after, CONTENT, set())) > 50
    for table in (HISTORY, HEADS, REQUESTS):
        assert after[f"fjall:{table}"] == before[f"fjall:{table}"]
    _healthy(fj)
    _no_leftovers(fj)
    # a rerun (as after a kill) finishes: the ids are excised already, nothing comes back
    again = _cli(fj, "excise", "--content", key.hex())
    assert again["contents"] == []
    gone_from_disk([PAYLOAD], raw_before, fj, [])
    gone_from_disk([value], raw_before, fj, [key])
    _healthy(fj)


def test_dry_runs_change_nothing(fj: Path) -> None:
    before = stores.dump(fj), stores.store_files(fj), raw_bytes(fj)
    doc = _cli(fj, "excise", "--content", PAYLOAD_ID.hex(), "--dry-run")
    assert doc["dry_run"] is True and doc["contents"] == [PAYLOAD_ID.hex()] and not doc["tx"]
    ns = max(_namespaces(fj).items(), key=lambda kv: kv[1])[0]
    doc = _cli(fj, "excise", "--namespace", ns.hex(), "--dry-run")
    assert doc["dry_run"] is True and doc["namespaces"] and not doc["tx"]
    doc = _cli(fj, "nohistory", ns.hex(), "--dry-run")
    assert doc["dry_run"] is True and doc["dropped"] and not doc["tx"]
    assert (stores.dump(fj), stores.store_files(fj), raw_bytes(fj)) == before
    _no_leftovers(fj)


def _namespaces(store: Path) -> dict[bytes, int]:
    return {k: len([1 for h, _ in stores.live_rows(store, HISTORY) if h[:32] == k])
            for k, _ in stores.live_rows(store, HEADS)}  # fmt: skip


@pytest.mark.slow  # 5-15 s: byte searches over every file; excise_content stays in the default run
def test_excise_namespace_leaves_no_byte_on_disk(fj: Path) -> None:
    counts = _namespaces(fj)
    ns = max(counts, key=lambda k: counts[k])
    history = [(k, v) for k, v in stores.live_rows(fj, HISTORY) if k[:32] == ns]
    raw = raw_bytes(fj)
    values = dict(stores.live_rows(fj, CONTENT))
    doc = _cli(fj, "excise", "--namespace", ns.hex(), "--content", PAYLOAD_ID.hex())
    gone = [bytes.fromhex(c) for c in doc["contents"]]  # type: ignore[union-attr]
    assert PAYLOAD_ID in gone
    assert {v for _, v in history} <= set(gone)  # every commit of the namespace
    for cid in gone:
        assert stores.live_get(fj, CONTENT, cid) is None
    ids = [*gone, ns, *values]
    gone_from_disk([values[c] for c in gone], raw, fj, ids)
    after = raw_bytes(fj)
    assert not [k for k, _ in history if k in after]  # the history keys themselves
    assert stores.live_get(fj, HEADS, ns) is None
    assert not [k for k, _ in stores.live_rows(fj, REQUESTS) if k[:32] == ns]
    _healthy(fj)
    _no_leftovers(fj)


@pytest.mark.slow  # 5-15 s: byte searches over every file; excise_content stays in the default run
def test_nohistory_leaves_no_byte_on_disk(fj: Path) -> None:
    counts = _namespaces(fj)
    ns = max(counts, key=lambda k: counts[k])
    head = stores.live_get(fj, HEADS, ns)
    assert head is not None
    history = [(k, v) for k, v in stores.live_rows(fj, HISTORY) if k[:32] == ns]
    top = max(int.from_bytes(k[32:], "big") for k, _ in history)
    dropped = [k for k, _ in history if k != history_key(ns, top)]
    # the same rows again in a journal batch (a put of the same bytes, as bbg may write)
    api.fjall_append(fj, [(HISTORY, k, v) for k, v in history if k in dropped])
    assert dropped and all(k in raw_bytes(fj) for k in dropped)
    _cli(fj, "excise", "--content", PAYLOAD_ID.hex())  # not valid content: doctor says so
    before = stores.dump(fj)
    doc = _cli(fj, "nohistory", ns.hex())
    assert doc["dropped"] == len(dropped)
    raw = raw_bytes(fj)
    assert not [k for k in dropped if k in raw]
    after = stores.dump(fj)
    assert _without(after, HISTORY, set()) == _without(before, HISTORY, set(dropped))
    for table in (CONTENT, HEADS, REQUESTS):
        assert after[f"fjall:{table}"] == before[f"fjall:{table}"]
    _healthy(fj)
    _no_leftovers(fj)


@pytest.mark.slow  # 5-15 s: byte searches over every file; excise_content stays in the default run
def test_nohistory_then_excise_on_the_real_crates_store(tmp_path: Path) -> None:
    """bbg-small, written by the real fjall 2.11.2 crate (no records of ours): the dropped
    history's and the excised namespace's bytes are gone from every file, the rest stays."""
    store = extract("bbg-small", tmp_path / "src")
    assert not records_dir(store).exists()
    counts = _namespaces(store)
    ns = max(counts, key=lambda k: counts[k])
    head = stores.live_get(store, HEADS, ns)
    dropped = [(k, v) for k, v in stores.live_rows(store, HISTORY) if k[:32] == ns][:-1]
    assert dropped and head is not None
    raw = raw_bytes(store)
    assert [k for k, _ in dropped if k in raw]  # the history keys show before
    doc = _cli(store, "nohistory", ns.hex())
    assert doc["dropped"] == len(dropped)
    after = raw_bytes(store)
    assert not [k for k, _ in dropped if k in after]
    assert stores.live_get(store, HEADS, ns) == head
    _healthy(store)
    others = sorted(k for k in counts if k != ns)
    values = dict(stores.live_rows(store, CONTENT))
    raw = raw_bytes(store)
    doc = _cli(store, "excise", "--namespace", others[0].hex())
    gone = [bytes.fromhex(c) for c in doc["contents"]]  # type: ignore[union-attr]
    assert gone and all(stores.live_get(store, CONTENT, c) is None for c in gone)
    gone_from_disk([values[c] for c in gone], raw, store, [*gone, others[0], *values])
    assert stores.live_get(store, HEADS, others[0]) is None
    assert stores.live_get(store, HEADS, ns) == head  # the other namespaces stay
    _healthy(store)
    _no_leftovers(store)
