"""Conformance fixtures for other runtimes: fixtures/event1/.

The committed stores give exactly the committed tail and snapshot bytes; rebuilding them with
the injected clock and store id gives the same bytes again; and the id, line-hash and footer
rules of docs/event1.md and docs/snapshot1.md, re-implemented here from the documents alone
(hashlib and json, nothing from migrate/), reproduce every id and hash in the files.
"""

from __future__ import annotations

import hashlib
import io
import json
import uuid
from pathlib import Path

import pytest

from migrate.share import restore, write_snapshot
from tests.conftest import ROOT

FIXTURES = ROOT / "fixtures" / "event1"
import sys  # noqa: E402

sys.path.insert(0, str(FIXTURES))
import make_fixtures  # type: ignore[import-not-found]  # noqa: E402

CASES = make_fixtures.CASES


def _expected(case: str, what: str) -> bytes:
    return (FIXTURES / f"{case}.{what}.ndjson").read_bytes()


def _but_time(data: bytes) -> list[bytes]:
    lines = data.splitlines(keepends=True)
    return lines[:1] + lines[2:]


@pytest.mark.parametrize("case", CASES)
def test_committed_stores_give_the_committed_bytes(case: str, tmp_path: Path) -> None:
    store = make_fixtures.unpack(case, tmp_path)
    got = make_fixtures.outputs(store)
    assert got["tail.ndjson"] == _expected(case, "tail")
    assert got["snapshot.ndjson"] == _expected(case, "snapshot")
    out = io.BytesIO()
    write_snapshot(store, out)  # another creation time: only line 2 differs
    assert _but_time(out.getvalue()) == _but_time(_expected(case, "snapshot"))
    # snapshot -> restore -> snapshot: the same bytes
    restore(io.BytesIO(_expected(case, "snapshot")), tmp_path / "restored")
    assert make_fixtures.outputs(tmp_path / "restored") == got


@pytest.mark.parametrize("case", CASES)
def test_rebuilding_gives_the_same_bytes(case: str, tmp_path: Path) -> None:
    """If this fails after a deliberate format change: python fixtures/event1/make_fixtures.py
    rewrites the files (review the diff: every byte of it is the format)."""
    store = make_fixtures.build(case, tmp_path / case)
    got = make_fixtures.outputs(store)
    assert got["tail.ndjson"] == _expected(case, "tail")
    assert got["snapshot.ndjson"] == _expected(case, "snapshot")


# -- an independent reading of docs/event1.md and docs/snapshot1.md ----------------------------
def canonical(doc: object) -> bytes:
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode() + b"\n"


def uuid8(domain: str, *parts: bytes) -> str:
    h = hashlib.sha256(b"bbg-migrate/" + domain.encode() + b"\x00")
    for p in parts:
        h.update(len(p).to_bytes(8, "little") + p)
    raw = bytearray(h.digest()[:16])
    raw[6] = (raw[6] & 0x0F) | 0x80
    raw[8] = (raw[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(raw)))


def event_id(doc: dict) -> str:  # type: ignore[type-arg]
    kind, fact = doc["kind"], (doc["asserted"] or [{}])[0]
    x, u64 = bytes.fromhex, (lambda n: int(n).to_bytes(8, "big"))
    if kind == "commit":
        return uuid8("event/1/commit", x(doc["namespace"]), x(doc["request"]))
    if kind == "rows":
        ordinal = {"application_content": 0, "application_unique_claims": 1}
        table = doc["provenance"]["table"]
        return uuid8("event/1/rows", bytes([ordinal[table]]), *map(x, doc["created"]))
    if kind == "fence":
        return uuid8("event/1/fence", x(fact["namespace"]))
    if kind == "generation":
        return uuid8("event/1/generation", fact["status"].encode())
    if kind == "import":
        return uuid8("event/1/import", fact["import_id"].encode())
    if kind in ("boundary", "nohistory"):
        return uuid8(f"event/1/{kind}", x(fact["namespace"]), u64(fact["index"]))
    if kind == "excise":
        return uuid8("event/1/excise", *map(x, fact["contents"] + fact["namespaces"]))
    assert kind == "redacted"
    return uuid8("event/1/redacted", x(doc["namespace"]), u64(doc["first"]), u64(doc["last"]))


@pytest.mark.parametrize("case", CASES)
def test_the_documents_reproduce_every_id_and_hash(case: str) -> None:
    tail = _expected(case, "tail")
    txs = []
    for line in tail.splitlines(keepends=True):
        doc = json.loads(line)
        assert canonical(doc) == line
        assert doc["event"] == event_id(doc)
        txs.append(doc["tx"])
    assert txs == sorted(txs)
    lines = _expected(case, "snapshot").splitlines(keepends=True)
    docs = [json.loads(x) for x in lines]
    for line, doc in zip(lines, docs, strict=True):
        body = {k: v for k, v in doc.items() if k != "h"}
        assert canonical(doc) == line
        assert doc["h"] == hashlib.sha256(canonical(body)).hexdigest()[:16]
    footer = docs[-1]
    assert footer["sha256"] == hashlib.sha256(b"".join(lines[:1] + lines[2:-1])).hexdigest()
    assert footer["records"] == len(lines) - 3
    assert docs[0]["basis_tx"] == max(txs)
