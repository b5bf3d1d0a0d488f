"""apply: all or nothing, named lines, replays with their original receipts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bbg_core.errors import Conflict, HeadMismatch, MigrateError, ValidationFailed
from migrate.share import apply_stream
from migrate.share.apply import DELTA_KEYS
from migrate.share.common import canonical
from migrate.store import open_store
from tests.share.conftest import run_cli
from tests.share.helpers import digest, stream, tail_bytes
from tests.share.stores import follow, graph_writes


def _lines(store: Path) -> list[bytes]:
    return tail_bytes(store).splitlines(keepends=True)


def _apply_fails(dest: Path, data: bytes, **kw: int) -> MigrateError:
    """Apply ``data`` into ``dest``, expect an error, and check nothing changed."""
    before = digest(dest)
    with open_store(dest) as st, pytest.raises(MigrateError) as info:
        apply_stream(st, stream(data), **kw)
    assert digest(dest) == before
    return info.value


@pytest.fixture
def empty(tmp_path: Path) -> Path:
    open_store(tmp_path / "empty", create=True).close()
    return tmp_path / "empty"


def test_replay_returns_original_receipts_even_after_the_store_moved_on(
    graph: Path, empty: Path
) -> None:
    data = tail_bytes(graph)
    first: list[dict[str, object]] = []
    with open_store(empty) as st:
        apply_stream(st, stream(data), on_receipt=first.append)
        # The receiver advances one namespace past what the stream knows.
        w = graph_writes()[4]
        follow(w, w.namespace, "later").apply(st)
        again: list[dict[str, object]] = []
        summary = apply_stream(st, stream(data), on_receipt=again.append)
    assert summary["replayed"] == summary["events"] == len(first)
    assert summary["deltas"] == dict.fromkeys(DELTA_KEYS, 0)
    for a, b in zip(first, again, strict=True):
        assert b["event"] == a["event"] and b["head"] == a["head"]  # the original head
        assert b["deltas"] == dict.fromkeys(DELTA_KEYS, 0)


@pytest.mark.parametrize(
    "damage, code",
    [
        (lambda line: b"{not json\n", "invalid-json"),
        (lambda line: line.replace(b'","', b'", "', 1), "not-canonical"),
        (lambda line: line.replace(b'"bbg":"event/1"', b'"bbg":"event/2"'), "schema"),
        (lambda line: line.replace(b'"index":', b'"index":1', 1), "inconsistent-event"),
        (lambda line: b"\n", "invalid-json"),
    ],
)
def test_a_bad_later_line_rolls_back_everything(
    graph: Path, empty: Path, damage: object, code: str
) -> None:
    lines = _lines(graph)
    # a commit event in the middle: nine or more good lines come before it
    n = next(i for i, x in enumerate(lines, 1) if i >= 10 and b'"kind":"commit"' in x)
    bad = lines[: n - 1] + [damage(lines[n - 1])] + lines[n:]  # type: ignore[operator]
    exc = _apply_fails(empty, b"".join(bad))
    assert isinstance(exc, ValidationFailed) and exc.exit_code == 3
    assert exc.context["line"] == n
    assert exc.context["errors"][0]["code"] == code
    assert f"line {n}" in exc.message


def test_truncated_and_oversized_lines(graph: Path, empty: Path) -> None:
    data = tail_bytes(graph)
    exc = _apply_fails(empty, data[:-1])  # the last LF is missing: a cut stream
    assert exc.context["line"] == len(data.splitlines())
    assert exc.context["errors"][0]["code"] == "truncated-line"
    longest = max(len(x) for x in data.splitlines(keepends=True))
    exc = _apply_fails(empty, data, max_line=longest - 1)
    assert exc.context["errors"][0]["code"] == "oversized-line"


def test_forged_event_id_is_refused(graph: Path, empty: Path) -> None:
    lines = _lines(graph)
    doc = json.loads(lines[3])
    doc["event"] = "00000000-0000-8000-8000-000000000000"
    exc = _apply_fails(empty, b"".join(lines[:3]) + canonical(doc) + b"".join(lines[4:]))
    assert exc.context["line"] == 4 and "event id" in exc.message


def test_head_mismatch_and_conflict_exit_4(graph: Path, empty: Path) -> None:
    lines = _lines(graph)
    # A receiver whose namespace already moved differently: the stream's commit 1 mismatches.
    w = graph_writes()[0]
    with open_store(empty) as st:
        w.apply(st)
        follow(w, w.namespace, "elsewhere").apply(st)
    exc = _apply_fails(empty, b"".join(lines))
    assert isinstance(exc, HeadMismatch) and exc.exit_code == 4
    n = next(
        i for i, x in enumerate(lines, 1)
        if json.loads(x).get("namespace") == w.namespace.hex() and json.loads(x)["index"] == 1
    )  # fmt: skip
    assert exc.context["line"] == n and exc.context["event"] in lines[n - 1].decode()
    # Same request, other fingerprint: a Conflict naming the line.
    doc = json.loads(lines[n - 2])  # w's birth, which the receiver holds
    assert doc["index"] == 0 and doc["namespace"] == w.namespace.hex()
    doc["fingerprint"] = "ab" * 32
    exc = _apply_fails(empty, canonical(doc))
    assert isinstance(exc, Conflict) and exc.context["line"] == 1


def test_rows_event_with_other_bytes_conflicts(cell_store: Path, empty: Path) -> None:
    lines = _lines(cell_store)
    rows = [x for x in lines if b'"kind":"rows"' in x and b"unique_claims" in x]
    with open_store(empty) as st:
        apply_stream(st, stream(rows[0]))
    doc = json.loads(rows[0])
    doc["asserted"][0]["value"] = "cd" * 32
    exc = _apply_fails(empty, canonical(doc))
    assert isinstance(exc, Conflict) and exc.context["line"] == 1


def test_cli_exit_codes_and_help(graph: Path, tmp_path: Path) -> None:
    data = tail_bytes(graph)
    dest = str(tmp_path / "r")
    done = run_cli("--store", dest, "apply", "-", stdin=data[:-1])
    assert done.returncode == 3 and b"no final LF" in done.stderr
    assert run_cli("--store", dest, "tail").stdout == b""  # created, but nothing applied
    f = tmp_path / "events.ndjson"
    f.write_bytes(data)
    done = run_cli("apply", str(f), "--store", dest, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["applied"] == len(data.splitlines())
    help_text = run_cli("apply", "--help").stdout
    assert b"not a CRDT" in help_text
    # An input that cannot be read is exit 1 naming the OS's reason (README, exit codes).
    assert run_cli("--store", dest, "apply", str(tmp_path / "missing")).returncode == 1


def test_new_commit_on_a_fenced_namespace_is_refused(graph: Path, tmp_path: Path) -> None:
    from migrate.share.events import commit_event
    from migrate.store import Head
    from tests.store.helpers import h

    fenced = graph_writes()[-1]  # the last write of namespace g-2, which graph_store fenced
    commit = h(b"\x00late")
    doc = commit_event(
        fenced.namespace, Head(fenced.new_head.index + 1, commit), fenced.new_head,
        h("late-request"), h("late-fp"), b"\x00late", tx=99, at=1,
    )  # fmt: skip
    data = tail_bytes(graph) + canonical(doc)
    exc = _apply_fails(graph, data)  # every earlier line is a replay; the last one is fenced
    assert exc.code == "fenced" and exc.exit_code == 4
    assert exc.context["line"] == len(data.splitlines())
