"""snapshot/restore: exact retained state, byte-identical round trips, every damage refused."""

from __future__ import annotations

import hashlib
import io
import json
import random
from pathlib import Path

import pytest

import schemas
from bbg_core.errors import StoreRefused, UsageError, ValidationFailed
from migrate.probe.inspect import inspect_bbg
from migrate.share import doctor, restore, write_snapshot
from migrate.share.snapshot import line_hash
from migrate.store import imports, open_store
from tests.share.conftest import run_cli
from tests.share.helpers import stream, tail_bytes
from tests.support import stores


def snap(store: Path, created_at: int = 1_700_000_000_000_000) -> bytes:
    out = io.BytesIO()
    write_snapshot(store, out, created_at=created_at)
    return out.getvalue()


def test_every_line_matches_its_schema(any_store: Path) -> None:
    lines = snap(any_store).splitlines()
    docs = [json.loads(x) for x in lines]
    schemas.validate(docs[0], "snapshot-header")
    schemas.validate(docs[1], "snapshot-time")
    for doc in docs[2:-1]:
        schemas.validate(doc, "snapshot-record")
    schemas.validate(docs[-1], "snapshot-footer")
    assert all(d["h"] == line_hash(d) for d in docs)
    assert docs[-1]["records"] == len(docs) - 3
    assert docs[0]["basis_tx"] == json.loads(tail_bytes(any_store).splitlines()[-1])["tx"]
    assert docs[0]["store_id"] == doctor(any_store)["store"]["store_id"]
    assert docs[1] == {"created_at": 1_700_000_000_000_000, "h": line_hash(docs[1])}
    # the ledger travels: one record per ledger transaction
    ledger_rows = [d["row"] for d in docs if d.get("table") == "bbg_ledger_v1"]
    assert [r["tx"] for r in ledger_rows] == list(range(1, docs[0]["basis_tx"] + 1))


def test_round_trip_is_byte_identical_but_for_the_time(any_store: Path, tmp_path: Path) -> None:
    first = snap(any_store, created_at=1)
    summary = restore(stream(first), tmp_path / "r")
    assert snap(tmp_path / "r", created_at=1) == first  # same time: every byte equal
    assert summary["records"] == len(first.splitlines()) - 3
    second = snap(tmp_path / "r", created_at=2)
    l1, l2 = first.splitlines(), second.splitlines()
    # every line but the creation time, byte for byte: the footer's sha256 leaves it out
    assert l1[:1] + l1[2:] == l2[:1] + l2[2:]
    assert (json.loads(l1[1])["created_at"], json.loads(l2[1])["created_at"]) == (1, 2)
    assert json.loads(l2[-1])["sha256"] == hashlib.sha256(
        b"".join(x + b"\n" for x in l2[:1] + l2[2:-1])
    ).hexdigest()
    a, b = inspect_bbg(any_store), inspect_bbg(tmp_path / "r")
    assert a["archive_digest_sha256"] == b["archive_digest_sha256"]
    assert a["archive_digest_hemera"] == b["archive_digest_hemera"]
    report = doctor(tmp_path / "r")
    assert report["healthy"]
    assert report["store"]["last_transaction"] == doctor(any_store)["store"]["last_transaction"]
    # the same store, ledger included: same id, same events with the same tx and at
    assert report["store"]["store_id"] == doctor(any_store)["store"]["store_id"]
    assert tail_bytes(tmp_path / "r") == tail_bytes(any_store)


def test_cli_snapshot_restore(graph: Path, tmp_path: Path) -> None:
    done = run_cli("--store", str(graph), "snapshot")
    assert done.returncode == 0, done.stderr
    (tmp_path / "s.ndjson").write_bytes(done.stdout)
    (tmp_path / "empty").mkdir()  # an empty directory is pristine too
    done = run_cli("--store", str(tmp_path / "empty"), "restore", str(tmp_path / "s.ndjson"))
    assert done.returncode == 0, done.stderr
    assert doctor(tmp_path / "empty")["fences"] == doctor(graph)["fences"]
    assert doctor(tmp_path / "empty")["generation"]["generation"] == "neuron-v1"


def _refused(data: bytes, dest: Path) -> ValidationFailed:
    with pytest.raises(ValidationFailed) as info:
        restore(stream(data), dest)
    assert not dest.exists()
    assert [p for p in dest.parent.iterdir() if p.name.startswith(".")] == []
    return info.value


def _flip_each(data: bytes, positions: set[int], dest: Path) -> None:
    """Flip one bit at each position in turn: each damaged copy is refused, naming its line."""
    starts = [0] + [i + 1 for i, c in enumerate(data) if c == 0x0A][:-1]
    for pos in sorted(positions):
        bad = bytearray(data)
        bad[pos] ^= 0x20 if pos % 2 else 0x01  # case/space flips and low-bit flips
        exc = _refused(bytes(bad), dest)
        line = sum(1 for s in starts if s <= pos)  # 1-based line holding the byte
        # A damaged LF joins two lines: the error names the first of them or the next one.
        assert exc.context["line"] in (line, line + 1), (pos, exc.message)


@pytest.mark.slow
def test_one_flipped_byte_is_refused_with_its_line(graph: Path, tmp_path: Path) -> None:
    data = snap(graph)
    rng = random.Random(8)
    positions = {i for i, c in enumerate(data) if c == 0x0A}  # every line end
    positions |= {rng.randrange(len(data)) for _ in range(40)}
    _flip_each(data, positions, tmp_path / "r")


@pytest.mark.slow
def test_one_flipped_byte_anywhere_exhaustive(graph: Path, tmp_path: Path) -> None:
    data = snap(graph)
    starts = [0] + [i + 1 for i, c in enumerate(data) if c == 0x0A][:-1]
    # the first and last two bytes of every line, and 400 random positions
    positions = set(starts) | {s - 2 for s in starts[1:]} | {s - 1 for s in starts[1:]}
    rng = random.Random(9)
    positions |= {rng.randrange(len(data)) for _ in range(400)}
    _flip_each(data, positions, tmp_path / "r")


def test_truncated_and_trailing_streams(graph: Path, tmp_path: Path) -> None:
    lines = snap(graph).splitlines(keepends=True)
    exc = _refused(b"".join(lines[:-1]), tmp_path / "r")  # no footer
    assert exc.context["line"] == len(lines) and "footer" in exc.message
    exc = _refused(b"".join(lines[:-3] + lines[-2:]), tmp_path / "r")  # a record dropped
    assert exc.context["line"] == len(lines) - 1
    exc = _refused(b"".join(lines) + lines[1], tmp_path / "r")
    assert exc.context["line"] == len(lines) + 1 and "after the footer" in exc.message
    exc = _refused(b"", tmp_path / "r")
    assert exc.context["line"] == 1


def test_destination_must_be_pristine(graph: Path, cell_store: Path, tmp_path: Path) -> None:
    data = snap(graph)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(UsageError, match="pristine"):
        restore(stream(data), tmp_path / "full")
    with pytest.raises(UsageError, match="pristine"):
        restore(stream(data), cell_store)  # an existing store, another one
    done = run_cli("--store", str(cell_store), "restore", "-", stdin=data)
    assert done.returncode == 2 and b"pristine" in done.stderr
    # A store that is exactly what the snapshot restores (a rerun after a kill that came
    # after the publication): nothing to do, nothing written.
    before = stores.dump(graph)
    assert restore(stream(data), graph)["already_restored"] is True
    done = run_cli("--store", str(graph), "restore", "-", stdin=data)
    assert done.returncode == 0 and b"already restored, nothing written" in done.stderr
    assert stores.dump(graph) == before


def test_store_with_an_import_in_progress_is_refused(graph: Path) -> None:
    with open_store(graph, maintenance=True) as st, st.transaction() as tx:
        imports.begin_import(tx, "busy")
    with pytest.raises(StoreRefused, match="still staging"):
        snap(graph)


def test_fast_row_check_never_accepts_what_the_schema_refuses(graph: Path) -> None:
    from migrate.share.common import schema_problem
    from migrate.share.restore import _plain_row_ok

    good = [json.loads(x) for x in snap(graph).splitlines()[2:-1]]
    variants = []
    for doc in good[:40]:
        variants.append(doc)
        variants += [
            {**doc, "key": doc.get("key", "") + "0"},
            {**doc, "key": "AB" * 4},
            {**doc, "value": 7},
            {**doc, "table": "application_other"},
            {**doc, "h": "0" * 15},
            {**doc, "extra": 1},
            {k: v for k, v in doc.items() if k != "value"},
            {**doc, "key": "ab" * 65},
        ]
    accepted = 0
    for doc in variants:
        if _plain_row_ok(doc):
            accepted += 1
            assert schema_problem(doc, "snapshot-record") is None, doc
    assert accepted >= 20  # the fast path is really taken for plain rows


def test_fast_named_row_check_never_accepts_what_the_schema_refuses(graph: Path) -> None:
    """The same for records of the other retained tables (the ledger's rows, by column)."""
    from migrate.share.common import schema_problem
    from migrate.share.restore import _named_row_ok

    good = [d for d in (json.loads(x) for x in snap(graph).splitlines()[2:-1]) if "row" in d]
    assert {d["table"] for d in good} >= {"bbg_ledger_v1", "bbg_ledger_v1_heads",
                                          "bbg_ledger_v1_rows", "bbg_storage_v1"}  # fmt: skip
    variants = []
    for doc in good[:60]:
        variants.append(doc)
        name = next(iter(doc["row"]))
        variants += [
            {**doc, "table": "application_content"},
            {**doc, "table": "bbg_Ledger"},
            {**doc, "table": 7},
            {**doc, "h": "0" * 15},
            {**doc, "h": "0" * 15 + "G"},
            {**doc, "extra": 1},
            {k: v for k, v in doc.items() if k != "h"},
            {**doc, "row": {}},
            {**doc, "row": []},
            {**doc, "row": {**doc["row"], "Bad": 1}},
            {**doc, "row": {**doc["row"], "9x": 1}},
            {**doc, "row": {**doc["row"], name: 1.5}},
            {**doc, "row": {**doc["row"], name: True}},
            {**doc, "row": {**doc["row"], name: [1]}},
            {**doc, "row": {**doc["row"], name: {"hex": "abc"}}},
            {**doc, "row": {**doc["row"], name: {"hex": "AB"}}},
            {**doc, "row": {**doc["row"], name: {"hex": "ab", "x": 1}}},
            {**doc, "row": {**doc["row"], name: {"hex": 12}}},
            {**doc, "row": {**doc["row"], name: {}}},
        ]
    accepted = refused = 0
    for doc in variants:
        verdict = schema_problem(doc, "snapshot-record")
        refused += verdict is not None
        if _named_row_ok(doc):
            accepted += 1
            assert verdict is None, doc
    assert accepted >= 40 and refused >= 40 * 10  # both paths are really exercised
