"""``tail --verifiable`` / ``apply``: a verifiable event/1 stream (check line per transaction,
closing digest) is refused when a line is changed, dropped, added or reordered, naming the
line, with nothing applied; a plain stream stays byte-identical and applies as before
(issue 28 item 5)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

import schemas
from bbg_core.errors import MigrateError, ValidationFailed
from migrate import api
from migrate.share import apply_stream
from migrate.store import open_store
from tests.share.conftest import run_cli
from tests.share.helpers import digest, stream, tail_bytes


def verifiable(store: Path, since: int = 0) -> list[bytes]:
    return list(api.verifiable_lines(api.tail(store, since), since))


def _docs(lines: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines]


@pytest.fixture
def empty(tmp_path: Path) -> Path:
    open_store(tmp_path / "empty", create=True).close()
    return tmp_path / "empty"


def _refused(dest: Path, lines: list[bytes]) -> ValidationFailed:
    before = digest(dest)
    with open_store(dest) as st, pytest.raises(ValidationFailed) as info:
        apply_stream(st, stream(b"".join(lines)))
    assert digest(dest) == before  # nothing applied
    return info.value


def test_the_framing_is_the_plain_stream_plus_check_lines_as_documented(graph: Path) -> None:
    lines = verifiable(graph)
    plain = [x for x in lines if json.loads(x)["bbg"] == "event/1"]
    assert b"".join(plain) == tail_bytes(graph)  # the events are the plain stream's bytes
    docs = _docs(lines)
    previous, after, events, txs = b"", 0, [], 0
    for raw, doc in zip(lines, docs, strict=True):
        if doc["bbg"] == "event/1":
            events.append(raw)
            continue
        schemas.validate(doc, "event-check")
        if doc["kind"] == "tx":  # docs/event1.md: previous check line, then the tx's lines
            assert {json.loads(e)["tx"] for e in events} == {doc["tx"]}
            assert doc["after"] == after and doc["events"] == len(events)
            assert doc["sha256"] == hashlib.sha256(previous + b"".join(events)).hexdigest()
            previous, after, events, txs = raw, doc["tx"], [], txs + 1
        else:
            assert raw is lines[-1] and not events
            assert doc["sha256"] == hashlib.sha256(previous).hexdigest()
            assert (doc["transactions"], doc["events"]) == (txs, len(plain))
    assert txs >= 3


def test_a_verifiable_stream_applies_and_the_report_says_so(graph: Path, empty: Path) -> None:
    lines = verifiable(graph)
    with open_store(empty) as st:
        report = apply_stream(st, stream(b"".join(lines)))
    schemas.validate(report, "apply")
    assert report["verified"] == {"verifiable": True, "transactions": sum(
        1 for d in _docs(lines) if d.get("kind") == "tx"), "digest": json.loads(lines[-1])[
        "sha256"]}  # fmt: skip
    assert digest(empty) == digest(graph)
    with open_store(empty) as st:
        plain = apply_stream(st, stream(tail_bytes(graph)))
    assert plain["verified"] == {"verifiable": False, "transactions": 0, "digest": None}


def _first(lines: list[bytes], pred: object) -> int:
    return next(i for i, d in enumerate(_docs(lines)) if pred(d))  # type: ignore[operator]


def test_a_changed_fingerprint_is_refused(graph: Path, empty: Path) -> None:
    lines = verifiable(graph)
    i = _first(lines, lambda d: d.get("kind") == "commit")
    doc = json.loads(lines[i])
    doc["fingerprint"] = "00" * 32
    lines[i] = api.event_line(doc)
    exc = _refused(empty, lines)
    assert exc.context["errors"][0]["code"] == "verify-digest"
    check = next(j for j in range(i, len(lines)) if json.loads(lines[j])["bbg"] != "event/1")
    assert exc.context["line"] == check + 1  # the check line of its transaction is named
    first, last = map(int, re.search(r"lines (\d+)-(\d+)", exc.message).groups())  # type: ignore[union-attr]
    assert first <= i + 1 <= last  # and the lines it covers, the changed one among them


def test_a_dropped_rows_line_is_refused(cell_store: Path, empty: Path) -> None:
    lines = verifiable(cell_store)
    i = _first(lines, lambda d: d.get("kind") == "rows")
    del lines[i]
    exc = _refused(empty, lines)
    assert exc.context["errors"][0]["code"] in ("verify-count", "verify-digest")
    assert "line" in exc.context and exc.context["line"] > i


def test_swapped_lines_are_refused(cell_store: Path, empty: Path) -> None:
    lines = verifiable(cell_store)
    docs = _docs(lines)
    # Two rows events of one transaction: each applies on its own in either order.
    i = next(i for i in range(len(docs) - 1) if docs[i].get("kind") == docs[i + 1].get(
        "kind") == "rows" and docs[i]["tx"] == docs[i + 1]["tx"])  # fmt: skip
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    exc = _refused(empty, lines)
    assert exc.context["errors"][0]["code"] == "verify-digest"


def test_swapped_transactions_are_refused(graph: Path, empty: Path) -> None:
    lines = verifiable(graph)
    checks = [i for i, d in enumerate(_docs(lines)) if d.get("kind") == "tx"]
    first = lines[: checks[0] + 1]
    second = lines[checks[0] + 1 : checks[1] + 1]
    before = digest(empty)
    with open_store(empty) as st, pytest.raises(MigrateError) as info:
        apply_stream(st, stream(b"".join(second + first + lines[checks[1] + 1 :])))
    assert digest(empty) == before  # the first line that fails is named, nothing applied
    assert info.value.context["line"] >= 1


def test_a_dropped_transaction_or_cut_stream_is_refused(graph: Path, empty: Path) -> None:
    lines = verifiable(graph)
    with open_store(empty) as st:  # a replica: every event replays, only the check can fail
        apply_stream(st, stream(b"".join(lines)))
    checks = [i for i, d in enumerate(_docs(lines)) if d.get("kind") == "tx"]
    without_first = lines[checks[0] + 1 :]
    assert _refused(empty, without_first).context["errors"][0]["code"] == "verify-digest"
    cut_after_tx = lines[: checks[-2] + 1]  # no last transaction, no closing line
    assert _refused(empty, cut_after_tx).context["errors"][0]["code"] == "verify-unclosed"
    no_last = lines[: checks[-2] + 1] + [lines[-1]]  # the last transaction dropped
    assert _refused(empty, no_last).context["errors"][0]["code"] == "verify-digest"
    mid_tx = lines[: checks[-1]]  # the last check line and closing line cut off
    assert _refused(empty, mid_tx).context["errors"][0]["code"] == "verify-missing-check"
    extra = lines + [lines[0]]
    assert _refused(empty, extra).context["errors"][0]["code"] == "verify-after-end"


def test_since_and_an_empty_stream(graph: Path, empty: Path) -> None:
    lines = verifiable(graph, since=2)
    assert json.loads(next(x for x in lines if b'"kind":"tx"' in x))["after"] == 2
    last = max(json.loads(x)["tx"] for x in tail_bytes(graph).splitlines())
    nothing = verifiable(graph, since=last)
    assert _docs(nothing) == [{"bbg": "event/1-check", "kind": "end", "transactions": 0,
                               "events": 0, "sha256": hashlib.sha256(b"").hexdigest()}]
    with open_store(empty) as st:
        assert apply_stream(st, stream(b"".join(nothing)))["verified"]["verifiable"]


def test_cli_tail_verifiable_and_apply_require_verified(graph: Path, tmp_path: Path) -> None:
    plain = run_cli("--store", str(graph), "tail")
    assert plain.returncode == 0 and plain.stdout == tail_bytes(graph)  # unchanged bytes
    done = run_cli("--store", str(graph), "tail", "--verifiable")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"".join(verifiable(graph))
    refused = run_cli("--store", str(tmp_path / "a"), "apply", "--require-verified", "-",
                      stdin=plain.stdout)  # fmt: skip
    assert refused.returncode == 3, refused.stderr
    assert b"verify-plain" in refused.stderr or b"plain stream" in refused.stderr
    assert not (tmp_path / "a").exists()
    ok = run_cli("--store", str(tmp_path / "b"), "apply", "--require-verified", "-",
                 stdin=done.stdout)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert b"stream verified" in ok.stderr
    both = run_cli("--store", str(graph), "tail", "--verifiable", "--follow")
    assert both.returncode == 2 and b"--follow" in both.stderr
    # A follow file too: refused before anything is written, never silently plain.
    out = tmp_path / "audit.ndjson"
    both = run_cli("--store", str(graph), "tail", "--verifiable", "--follow", "--output",
                   str(out))  # fmt: skip
    assert both.returncode == 2 and b"--verifiable is not available with --follow" in both.stderr
    assert not out.exists() and not (tmp_path / "audit.ndjson.store.json").exists()


@pytest.mark.engine("fjall")
def test_a_fjall_stores_verifiable_tail(fjall_source: Path, tmp_path: Path) -> None:
    """tail --verifiable on the real BBG database (one transaction per batch) applies into a
    SQLite store, verified; a dropped rows line is refused there too."""
    done = run_cli("--store", str(fjall_source), "tail", "--verifiable")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines(keepends=True)
    assert [x for x in lines if json.loads(x)["bbg"] == "event/1"] == run_cli(
        "--store", str(fjall_source), "tail").stdout.splitlines(keepends=True)
    ok = run_cli("--engine", "sqlite", "--store", str(tmp_path / "a"), "apply", "--json",
                 "--require-verified", "-", stdin=done.stdout)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    report = json.loads(ok.stdout)
    assert report["verified"]["verifiable"] and report["verified"]["digest"] == json.loads(
        lines[-1])["sha256"]  # fmt: skip
    i = _first(lines, lambda d: d.get("kind") == "rows")
    bad = run_cli("--engine", "sqlite", "--store", str(tmp_path / "b"), "apply", "-",
                  stdin=b"".join(lines[:i] + lines[i + 1 :]))  # fmt: skip
    assert bad.returncode == 3 and b"check line" in bad.stderr, bad.stderr
    assert not (tmp_path / "b").exists()
