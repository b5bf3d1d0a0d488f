"""The per-line transaction budget, exactly as cybergraph counts it.

cyberia-to/cybergraph ``src/text_archive.rs`` at 78d2343eaca5b8b9ce4437d115c338ac69cf1498
(``prepare``): one imported line commits three Blobs -- the text, the raw line and the
observation record, serde_json of ``Observation {schema, previous, request, text, created,
provenance: Provenance {source, line, raw}}`` with every ``Particle`` ([u8; 32]) written as a
JSON array -- and ``sum(len + 1) > MAX_CONTENT_BYTES`` is "text observation transaction byte
limit".  The request id is hemera(``cybergraph/text-import-request/1\\0`` ‖ source ‖ line LE)
(``prepare_import_line``; ``src/text_archive/legacy.rs`` at 546853d9 ``has_import``), the
source id hemera(whole file) and ``previous`` the prior commit (null for the first line of a
fresh namespace).  cybergraph's tests only exercise a budget exceeded by far
(test_cybergraph_text_archive.py); the expected lengths below are built here, independently
of the reader's code, from those definitions (a change detector for the exact path, which
runs only when the record's length decides).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from bbg_core.errors import TextArchiveError
from importers.text_archive import (
    Limits,
    TextRecord,
    decode_records,
    inspect_text_archive,
    read_records,
)
from importers.text_archive.budget import observation_record, request_id
from tests.legacy._texts import line


def sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def arr(pid: bytes) -> str:
    return json.dumps(list(pid), separators=(",", ":"))


def test_observation_record_layout() -> None:
    record = observation_record(
        None, bytes(range(32)), b"\xff" * 32, None, bytes(32), 1, bytes([7]) * 32
    )
    ones = arr(b"\xff" * 32)
    want = (
        '{"schema":"cybergraph/text-observation/1","previous":null,'
        f'"request":{arr(bytes(range(32)))},"text":{ones},"created":null,'
        f'"provenance":{{"source":{arr(bytes(32))},"line":1,"raw":{arr(bytes([7]) * 32)}}}}}'
    )
    assert record == want.encode()
    zero = bytes(32)
    later = observation_record(b"\x01" * 32, zero, zero, 2**64 - 1, zero, 9, zero)
    assert b'"previous":[1,1,' in later and b'"created":18446744073709551615' in later
    source = b"s" * 32
    domain = b"cybergraph/text-import-request/1\x00"
    assert request_id(sha, source, 3) == sha(domain + source + (3).to_bytes(8, "little"))


def exact_needs(data: bytes) -> list[int]:
    """Each line's transaction bytes, chained by hand (SHA-256 stands in for hemera)."""
    source = sha(data)
    previous = None
    needs = []
    domain = b"cybergraph/text-import-request/1\x00"
    for number, raw in enumerate(data.splitlines(keepends=True), start=1):
        text = json.loads(raw)["text"]
        request = sha(domain + source + number.to_bytes(8, "little"))
        before = "null" if previous is None else arr(previous)
        doc = (
            '{"schema":"cybergraph/text-observation/1",'
            f'"previous":{before},"request":{arr(request)},'
            f'"text":{arr(sha(text.encode()))},"created":null,'
            f'"provenance":{{"source":{arr(source)},"line":{number},"raw":{arr(sha(raw))}}}}}'
        ).encode()
        needs.append(len(text.encode()) + 1 + len(raw) + 1 + len(doc) + 1)
        previous = sha(doc)
    return needs


DATA = line("first") + line("y" * 300) + line("z" * 300) + line("first")


def test_a_budget_between_the_bounds_is_decided_by_the_exact_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from importers.text_archive import budget

    exact_calls: list[int] = []
    original = budget._Chain.record

    def counting(self: budget._Chain, rec: TextRecord) -> bytes:
        exact_calls.append(rec.line)
        return original(self, rec)

    monkeypatch.setattr(budget._Chain, "record", counting)
    needs = exact_needs(DATA)
    cap = max(needs)
    limits = Limits(max_transaction_bytes=cap)
    assert len(list(decode_records(DATA, limits=limits, hash_fn=sha))) == 4
    worst = needs.index(cap) + 1
    with pytest.raises(TextArchiveError) as info:
        list(decode_records(DATA, limits=Limits(max_transaction_bytes=cap - 1), hash_fn=sha))
    assert (info.value.context["code"], info.value.context["line"]) == ("limit-exceeded", worst)
    assert worst in exact_calls  # decided by the exact record, not by a bound


def test_the_exact_path_rereads_a_file_and_the_reader_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(DATA)
    needs = exact_needs(DATA)
    cap = max(needs[1:3])  # lines 2 and 3 both fall between the bounds
    got = list(read_records(path, limits=Limits(max_transaction_bytes=cap), hash_fn=sha))
    assert [r.raw for r in got] == DATA.splitlines(keepends=True)
    report = inspect_text_archive(
        path, limits=Limits(max_transaction_bytes=cap - 1), hash_fn=sha, hasher=hashlib.sha256
    )
    worst = needs.index(cap) + 1
    assert [(e["line"], e["code"]) for e in report["errors"]] == [(worst, "limit-exceeded")]
