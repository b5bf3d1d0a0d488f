"""The TextArchive reader against cybergraph's own tests of its legacy import.

Transcribed from cyberia-to/cybergraph at commit 78d2343eaca5b8b9ce4437d115c338ac69cf1498:
``tests/text_archive.rs`` and ``tests/text_archive_boundaries.rs`` (the reader under test is
``src/text_archive/legacy.rs`` at 546853d9dcc0a0d4291a7adbf8266c17a46ed551 with the limits
of ``src/text_archive.rs`` at 78d2343e and ``src/content.rs`` at 546853d9).  Each test keeps
the Rust test's name, inputs and expected outcome; where cybergraph imports into a namespace
that already holds texts, the transcription puts those texts at the front of the same archive
(bbg-migrate gives every source a fresh namespace of its own).  The Rust tests hash particles
with hemera; the limit tests use SHA-256 as a stand-in (the limits do not depend on the hash)
to stay fast, the others use hemera itself.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import pytest

from bbg_core.errors import TextArchiveError
from importers.text_archive import DEFAULT_LIMITS, Limits, TextRecord, decode_records
from tests.legacy._support import hemera_module

MiB = 1 << 20
MAX_TEXT_BYTES = 8 * MiB  # cybergraph text_archive::MAX_TEXT_BYTES
MAX_PROJECTION_BYTES = 64 * MiB  # cybergraph text_archive::MAX_PROJECTION_BYTES
Hash = Callable[[bytes], bytes]


def sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def serde_line(text: str, created: int | None, hash_fn: Hash, *, null: bool = False) -> bytes:
    """The tests' ``line()``: ``serde_json::to_vec(json!({...}))`` plus LF.

    ``json!`` builds a map whose keys serde_json writes sorted; ``null=True`` is the
    boundaries file's helper, which always writes ``"created"`` (null when None), the other
    file's helper leaves it out.  serde_json escapes control characters (so TAB is ``\\t``)
    and writes other characters as raw UTF-8, as ``json.dumps(ensure_ascii=False)`` does.
    """
    doc: dict[str, object] = {"particle": hash_fn(text.encode()).hex(), "text": text}
    if created is not None or null:
        doc["created"] = created
    body = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return body.encode() + b"\n"


def import_jsonl(
    data: bytes, hash_fn: Hash, limits: Limits = DEFAULT_LIMITS
) -> list[TextRecord]:
    return list(decode_records(data, limits=limits, hash_fn=hash_fn, path="legacy.jsonl"))


def refused(data: bytes, hash_fn: Hash, limits: Limits = DEFAULT_LIMITS) -> tuple[str, int, str]:
    seen: list[TextRecord] = []
    with pytest.raises(TextArchiveError) as info:
        for record in decode_records(data, limits=limits, hash_fn=hash_fn, path="legacy.jsonl"):
            seen.append(record)
    ctx = info.value.context
    assert len(seen) == ctx["line"] - 1
    return str(ctx["code"]), int(ctx["line"]), info.value.message


# -- tests/text_archive.rs ---------------------------------------------------------------


def test_legacy_lines_keep_duplicates_raw_bytes_and_unknown_dates_across_retry() -> None:
    hemera = hemera_module().hash
    raw = b"".join(
        [
            serde_line("one", 3, hemera),
            serde_line("two\twith\rcontrols", None, hemera),
            serde_line("one", None, hemera),
        ]
    )
    # Reproduce the old hand-written writer's literal tab/CR string format.
    raw = raw.replace(b"\\t", b"\t").replace(b"\\r", b"\r")
    records = import_jsonl(raw, hemera)
    assert import_jsonl(raw, hemera) == records  # a retry reads the same
    assert len(records) == 3  # report.observations
    assert records[-1].line - 1 == 2  # head index
    assert len({r.particle for r in records}) == 2  # texts.len()
    last = records[-1]
    assert last.text == "one" and last.created is None
    assert last.line == 3  # provenance.line
    assert last.raw == serde_line("one", None, hemera)  # provenance.raw = hemera(raw line)
    assert records[1].text == "two\twith\rcontrols"


def test_a_bad_late_line_or_truncated_tail_imports_no_prefix() -> None:
    hemera = hemera_module().hash
    good = serde_line("good", None, hemera)
    # Change text without changing its named particle.
    bad = (good + serde_line("wrong", None, hemera)).replace(b"wrong", b"fraud")
    code, line, message = refused(bad, hemera)
    assert (code, line) == ("particle-mismatch", 2) and ":2:" in message  # "line 2"
    assert refused(good[:-1], hemera)[:2] == ("unterminated-line", 1)
    assert import_jsonl(b"", hemera) == []  # head is none


# -- tests/text_archive_boundaries.rs ------------------------------------------------------


def test_maximum_utf8_text_survives_reopen_and_oversize_changes_nothing() -> None:
    # The test remembers a text of exactly MAX_TEXT_BYTES (and refuses one byte more) through
    # TextArchive::remember.  Through an archive line such a text cannot arrive: decode
    # refuses a raw line longer than MAX_TEXT_BYTES, and the line is longer than its text.
    text = "🧠" * (MAX_TEXT_BYTES // 4)
    assert len(text.encode()) == MAX_TEXT_BYTES
    data = serde_line(text, 2**64 - 1, sha, null=True)
    assert refused(data, sha)[:2] == ("limit-exceeded", 1)
    small = serde_line("🧠", 2**64 - 1, sha, null=True)
    [record] = import_jsonl(small, sha)
    assert record.created == 2**64 - 1


def test_late_valid_json_that_exceeds_atomic_content_budget_imports_no_prefix() -> None:
    overhead = len(serde_line("", 2**64 - 1, sha, null=True))
    text = "a" * (MAX_TEXT_BYTES - overhead)
    large = serde_line(text, 2**64 - 1, sha, null=True)
    assert len(large) == MAX_TEXT_BYTES
    first = serde_line("first must remain unpublished", None, sha, null=True)
    code, line, message = refused(first + large, sha)
    assert (code, line) == ("limit-exceeded", 2) and "transaction limit" in message
    # The exact original first line is still an independently valid source.
    assert len(import_jsonl(first, sha)) == 1
    # A line of exactly MAX_TEXT_BYTES passes the line limit (the budget refuses it).
    assert len(large) == DEFAULT_LIMITS.max_line_bytes


@pytest.mark.slow
def test_multi_transaction_source_preflights_projection_and_fences_concurrent_capacity() -> None:
    # 63 MiB of distinct UTF-8, much larger than one 16 MiB content transaction.  Every
    # observation independently fits, and every raw line is retained.
    source = b"".join(
        serde_line(chr(ord("a") + n) * (7 * MiB), n, sha, null=True) for n in range(9)
    )
    records = import_jsonl(source, sha)
    assert len(records) == 9 and records[-1].end == len(source)
    # The rest of the test imports into the namespace that now holds 63 MiB: here those
    # lines follow the 63 MiB in the same archive.
    overflow = serde_line("would create a premature prefix", None, sha, null=True) + serde_line(
        "z" * (2 * MiB), None, sha, null=True
    )
    code, line, message = refused(source + overflow, sha)
    assert (code, line) == ("limit-exceeded", 11) and "projection limit" in message
    # One 1 MiB text fills the projection exactly; the same text again changes metadata, not
    # projection size; any new text is one byte past capacity.
    filled = source + serde_line("x" * MiB, None, sha, null=True)
    again = filled + serde_line("x" * MiB, 77, sha, null=True)
    assert len(import_jsonl(again, sha)) == 11
    past = again + serde_line("one byte past capacity", None, sha, null=True)
    assert refused(past, sha)[:2] == ("limit-exceeded", 12)
    total = sum(len(r.text.encode()) for r in import_jsonl(filled, sha))
    assert total == MAX_PROJECTION_BYTES


def test_shared_database_failure_never_reports_completed_import_and_reopen_can_retry() -> None:
    hemera = hemera_module().hash
    source = serde_line("one\twith\rcontrols", None, hemera, null=True) + serde_line(
        "two", 2, hemera, null=True
    )
    records = import_jsonl(source, hemera)
    assert len(records) == 2
    assert import_jsonl(source, hemera) == records
    assert records[0].text == "one\twith\rcontrols"
    assert records[1].created == 2
