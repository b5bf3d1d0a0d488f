"""Signal logs, bbg CLI frame logs and TextArchives through the staged pipeline, with exact
provenance (issues 7 and 11)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

import schemas
from bbg_core.canonical import canonical_json
from hashing import hemera
from importers.signal_log import LEGACY_SOURCE_DOMAIN
from migrate import pipeline
from migrate.probe.inspect import inspect_bbg
from tests.pipeline.helpers import cli, tree_state
from tests.pipeline_legacy.support import content_of, copy_fixture, expected, records
from tests.support.subject import SUBJECT, activate_subject

VALID = ["signals-small.log", "texts-small.jsonl", "bbg-cli-small.log", "texts-cybergraph.jsonl"]
INVALID_LOGS = [
    "signals-overlong-leb.log",
    "signals-unknown-sigil.log",
    "signals-trailing-bytes.log",
    "signals-foculus-bad-flag.log",
]
INVALID_TEXTS = [
    "texts-invalid-blank-line.jsonl",
    "texts-invalid-particle.jsonl",
    "texts-invalid-unknown-field.jsonl",
    "texts-invalid-unterminated.jsonl",
    "texts-invalid-utf8.jsonl",
    "texts-cybergraph-fraud.jsonl",
]
LOG_KINDS = ("signal-log", "bbg-frame-log")


def run_json(*args: str) -> dict[str, Any]:
    res = cli(*args, "--json")
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


def item_count(want: dict[str, Any]) -> int:
    return int(want["event_count"] if "event_count" in want else want["line_count"])


def check_observations(src: Path, store: Path, receipt: dict[str, Any], count: int) -> None:
    """A TextArchive's namespace holds cybergraph's observations only (line i at index i-1,
    cybergraph@78d2343e src/text_archive.rs); our own provenance is in the receipt, and each
    line's span follows from the raw Blobs (contiguous from byte 0: together they are the
    file)."""
    data = src.read_bytes()
    legacy = receipt["legacy"]
    assert legacy["import_record"]["source"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert legacy["import_record"]["items"] == count
    record = canonical_json(legacy["import_record"]).encode()
    assert legacy["namespace"] == hemera.hash(record).hex()
    recs = records(store, legacy["namespace"])
    assert len(recs) == count
    previous, raws = None, []
    with content_of(store) as get:
        for index, (commit, doc, payload) in enumerate(recs):
            assert commit == hemera.hash(payload)
            assert list(doc) == ["schema", "previous", "request", "text", "created",
                                 "provenance"]  # fmt: skip
            assert doc["schema"] == "cybergraph/text-observation/1"
            assert doc["previous"] == (None if previous is None else list(previous))
            prov = doc["provenance"]
            assert prov["line"] == index + 1
            assert bytes(prov["source"]).hex() == legacy["hemera_file"]
            raw = get(bytes(prov["raw"]))
            assert raw is not None and raw[0] == 1 and bytes(prov["raw"]) == hemera.hash(raw[1:])
            text = get(bytes(doc["text"]))
            assert text is not None and bytes(doc["text"]) == hemera.hash(text[1:])
            raws.append(raw[1:])
            previous = commit
    assert b"".join(raws) == data


def check_provenance(src: Path, store: Path, receipt: dict[str, Any], count: int) -> None:
    """Every record of the source's namespace points at the exact raw bytes of its item."""
    if receipt["legacy"]["kind"] == "text-archive":
        return check_observations(src, store, receipt, count)
    data = src.read_bytes()
    legacy = receipt["legacy"]
    ns = legacy["namespace"]
    recs = records(store, ns)
    assert len(recs) == count + 1
    commit0, birth, payload0 = recs[0]
    schemas.validate(birth, "legacy-import-record")
    assert commit0.hex() == ns == hemera.hash(payload0).hex()  # the birth rule
    assert birth["items"] == count and birth["kind"] == legacy["kind"]
    assert birth["source"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert birth["torn_tail"] == legacy["torn_tail"]
    previous = commit0
    with content_of(store) as get:
        for index, (commit, doc, payload) in enumerate(recs[1:], start=1):
            schemas.validate(doc, "legacy-item-record")
            assert commit == hemera.hash(payload)
            assert doc["index"] == index and doc["namespace"] == ns
            assert doc["previous"] == previous.hex()
            prov = doc["provenance"]
            assert prov["source_sha256"] == birth["source"]["sha256"]
            assert prov["ordinal"] == (index - 1 if legacy["kind"] in LOG_KINDS else index)
            start, end = prov["span"]
            raw = data[start:end]
            assert doc["raw"] == {"id": hemera.hash(raw).hex(), "size": len(raw)}
            assert get(bytes.fromhex(doc["raw"]["id"])) == b"\x01" + raw
            previous = commit


def expected_spans(want: dict[str, Any], data: bytes) -> list[tuple[int, int]]:
    if "frames" in want:
        return [(row[0], row[1]) for row in want["frames"]]
    # Archives list each line's SHA-256; the spans are where those exact lines sit.
    spans, pos = [], 0
    for line in want["lines"]:
        end = data.index(b"\n", pos) + 1
        assert hashlib.sha256(data[pos:end]).hexdigest() == line["sha256"]
        spans.append((pos, end))
        pos = end
    return spans


@pytest.mark.parametrize("name", VALID)
def test_valid_source_migrates_with_exact_provenance(name: str, tmp_path: Path) -> None:
    src = copy_fixture(name, tmp_path / "src")
    store = tmp_path / "bbg"
    before = tree_state(src)
    receipt = run_json("run", str(src), "--store", str(store))
    schemas.validate(receipt, "receipt")
    want = expected(src)
    count = item_count(want)
    legacy = receipt["legacy"]
    assert legacy["items"] == count and legacy["torn_tail"] is None
    digest_name = "hemera_source_digest" if "event_count" in want else "hemera_file"
    assert legacy[digest_name] == want[digest_name]
    assert receipt["source"]["sha256"] == want["sha256"]
    assert (
        receipt["digests"]["staged_archive_sha256"] == receipt["digests"]["source_archive_sha256"]
    )
    report = inspect_bbg(store)
    assert report["valid"], report["errors"]
    assert report["archive_digest_sha256"] == receipt["digests"]["source_archive_sha256"]
    # A TextArchive lands as cybergraph puts it: no import record at index 0.
    rows = count if legacy["kind"] == "text-archive" else count + 1
    assert report["namespaces"] == {
        legacy["namespace"]: {
            "head_index": rows - 1,
            "head_commit": report["namespaces"][legacy["namespace"]]["head_commit"],
            "history_rows": rows,
        }
    }
    assert report["tables"]["application_requests"]["rows"] == rows
    assert report["tables"]["application_unique_claims"]["rows"] == 0
    check_provenance(src, store, receipt, count)
    if legacy["kind"] == "text-archive":
        docs = [d for _, d, _ in records(store, legacy["namespace"])]
        with content_of(store) as get:
            sizes = [len(get(bytes(d["provenance"]["raw"])) or b"") - 1 for d in docs]
        spans = [(sum(sizes[:i]), sum(sizes[: i + 1])) for i in range(len(sizes))]
    else:
        spans = [
            tuple(doc["provenance"]["span"])
            for _, doc, _ in records(store, legacy["namespace"])[1:]
        ]
    assert spans == expected_spans(want, src.read_bytes())
    assert tree_state(src) == before  # the source is never written


def test_hemera_source_digest_is_the_documented_one(tmp_path: Path) -> None:
    src = copy_fixture("signals-small.log", tmp_path)
    receipt = run_json("run", str(src), "--store", str(tmp_path / "bbg"))
    want = hemera.hash(LEGACY_SOURCE_DOMAIN + src.read_bytes()).hex()
    assert receipt["legacy"]["hemera_source_digest"] == want


def existing_store(tmp_path: Path) -> Path:
    """A destination that already holds another import (made in-process: faster)."""
    store = tmp_path / "bbg"
    other = copy_fixture("signals-small.log", tmp_path / "other")
    assert pipeline.run(pipeline.Job(other, store)).status == "complete"
    return store


@pytest.mark.parametrize("name", INVALID_LOGS + INVALID_TEXTS)
def test_invalid_source_exits_3_with_its_code_and_writes_nothing(name: str, tmp_path: Path) -> None:
    src = copy_fixture(name, tmp_path / "src")
    store = existing_store(tmp_path)  # must stay byte for byte as it was
    before = tree_state(src, store)
    want = expected(src)
    # Every step preflights the whole source; the first one and the dry run stand for all.
    verbs = ("plan", "run", "seal", "stage") if name == INVALID_LOGS[0] else ("plan", "run")
    for verb in verbs:
        res = cli(verb, str(src), "--store", str(store), "--json")
        assert res.returncode == 3, (verb, res.stderr)
        if "error" in want:
            err = want["error"]
            assert (
                f"{err['code']} at byte {err['offset']} (frame {err['frame_index']}" in res.stderr
            )
        else:
            err = want["first_error"]
            assert f":{err['line']}: {err['code']}:" in res.stderr
        assert "nothing was written" in res.stderr
    assert tree_state(src, store) == before


@pytest.mark.parametrize("name", ["signals-truncated-tail.log", "bbg-cli-torn-tail.log"])
def test_torn_tail_needs_the_flag_then_imports_the_valid_prefix(name: str, tmp_path: Path) -> None:
    """The old cyb Signal log needs --accept-torn-tail; bbg's CLI log is read as bbg's own
    reader reads it (tade Reader::next_chunk returns Pending on a cut frame, decode_events
    stops: bbg@742075ae cli/src/frame.rs), so its valid prefix imports without the flag."""
    src = copy_fixture(name, tmp_path / "src")
    store = tmp_path / "bbg"
    want = expected(src)
    flag = ["--accept-torn-tail"]
    if "error" in want:
        res = cli("run", str(src), "--store", str(store))
        assert res.returncode == 3
        assert f"truncated-frame at byte {want['error']['offset']}" in res.stderr
        assert "--accept-torn-tail" in res.stderr
        assert not store.exists()
    else:
        flag = []
        assert want["valid"] and want["strict"]["error"]["code"] == "truncated-frame"
    receipt = run_json("run", str(src), "--store", str(store), *flag)
    torn = receipt["legacy"]["torn_tail"]
    assert torn == {
        "code": "truncated-frame",
        "offset": want["size_bytes"],
        "valid_prefix_events": want["valid_prefix_events"],
        "valid_prefix_end": want["valid_prefix_end"],
        "discarded_bytes": want["size_bytes"] - want["valid_prefix_end"],
    }
    assert receipt["legacy"]["items"] == want["valid_prefix_events"]
    report = inspect_bbg(store)
    assert report["valid"], report["errors"]
    check_provenance(src, store, receipt, want["valid_prefix_events"])
    # The last imported frame ends exactly where the valid prefix ends.
    last = records(store, receipt["legacy"]["namespace"])[-1][1]
    assert last["provenance"]["span"][1] == want["valid_prefix_end"]


def test_exact_rerun_gives_byte_identical_receipt_and_changes_nothing(tmp_path: Path) -> None:
    src = copy_fixture("texts-small.jsonl", tmp_path)
    args = ("run", str(src), "--store", str(tmp_path / "bbg"), "--json")
    first = cli(*args)
    assert first.returncode == 0, first.stderr
    state = tree_state(tmp_path / "bbg" / "bbg.sqlite3")
    second = cli(*args)
    assert second.returncode == 0 and second.stdout == first.stdout
    assert tree_state(tmp_path / "bbg" / "bbg.sqlite3") == state


def test_same_nonce_with_other_inputs_is_a_conflict(tmp_path: Path) -> None:
    a = copy_fixture("signals-small.log", tmp_path)
    b = copy_fixture("texts-small.jsonl", tmp_path)
    store = str(tmp_path / "bbg")
    assert cli("run", str(a), "--store", store, "--nonce", "abcd").returncode == 0
    res = cli("run", str(b), "--store", store, "--nonce", "abcd")
    assert res.returncode == 4 and "nonce abcd was already used" in res.stderr


def test_plan_writes_nothing_and_names_the_namespace(tmp_path: Path) -> None:
    src = copy_fixture("signals-small.log", tmp_path / "src")
    store = tmp_path / "bbg"
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    for existing in (False, True):
        if existing:
            assert cli("run", str(src), "--store", str(store)).returncode == 0
        before = tree_state(src, store, tmp_path)
        res = cli("plan", str(src), "--store", str(store), "--json", cwd=tmp_path,
                  env={"TMPDIR": str(tmp)})  # fmt: skip
        assert res.returncode == 0, res.stderr
        doc = json.loads(res.stdout)
        schemas.validate(doc, "plan")
        assert list(doc["namespaces"]) == [doc["legacy"]["namespace"]]
        assert doc["rows"] == 21 + 11 + 11 + 1  # content, requests, history, heads
        assert doc["destination"]["exists"] is existing
        assert tree_state(src, store, tmp_path) == before
        assert os.listdir(tmp) == []


@pytest.mark.slow
def test_step_by_step_resumes_item_by_item_and_equals_run(tmp_path: Path) -> None:
    src = copy_fixture("texts-small.jsonl", tmp_path / "src")
    store = str(tmp_path / "steps")
    assert cli("seal", str(src), "--store", store, "--json").returncode == 0
    calls = 0
    staged = []
    while True:
        calls += 1
        res = cli("stage", str(src), "--store", store, "--pages", "1", "--page-rows", "13",
                  "--json")  # fmt: skip
        doc = json.loads(res.stdout)
        assert res.returncode == (0 if doc["status"] == "staged" else 5), res.stderr
        staged.append(doc["rows_staged"])
        if doc["status"] == "staged":
            break
    # cybergraph's rows: content 19 texts + 20 raw lines + 20 observations, requests 20,
    # history 20, heads 1 = 100 rows: 13 a page (lines are split across pages: 13 is no
    # multiple of a line's 5 or 6 rows), a page a call.
    total = doc["rows_total"]
    assert total == 59 + 20 + 20 + 1
    assert calls == -(-total // 13)
    assert staged == [min(13 * k, total) for k in range(1, calls + 1)]
    assert cli("validate", str(src), "--store", store, "--json").returncode == 0
    stepped = run_json("activate", str(src), "--store", store)
    direct = run_json("run", str(src), "--store", str(tmp_path / "direct"))
    assert stepped == direct


def test_a_converted_log_cannot_be_a_mapped_origin(tmp_path: Path) -> None:
    """A log's namespace starts with the toolkit's own import record, a Blob, which neuron's
    legacy reader refuses (neuron@fd24e768 engine/src/legacy.rs ``inspect``, neuron@dbebea3f
    model/src/data.rs ``Reader::pair``: a Blob is InvalidData); the subject is checked first
    (neuron.rs ``inspect``: Missing).  Nothing is written either way."""
    src = copy_fixture("signals-small.log", tmp_path)
    plan = run_json("plan", str(src), "--store", str(tmp_path / "bbg"))
    ns = plan["legacy"]["namespace"]
    mapped = ("--subject", SUBJECT, "--map", f"{ns}={'01' * 32}")
    res = cli("run", str(src), "--store", str(tmp_path / "bbg"), *mapped)
    assert res.returncode == 3 and "not activated" in res.stderr
    assert not (tmp_path / "bbg").exists()
    activate_subject(tmp_path / "bbg")
    res = cli("run", str(src), "--store", str(tmp_path / "bbg"), *mapped)
    assert res.returncode == 3 and "toolkit's import record" in res.stderr
    assert "Data(InvalidData)" in res.stderr
    res = cli("run", str(src), "--store", str(tmp_path / "b2"), "--subject", SUBJECT,
              "--map", f"{'cd' * 32}={'01' * 32}")  # fmt: skip
    assert res.returncode == 3 and "not a namespace of the source" in res.stderr
    assert not (tmp_path / "b2").exists()


@pytest.mark.slow
def test_flags_and_kinds_are_checked(tmp_path: Path) -> None:
    texts = copy_fixture("texts-small.jsonl", tmp_path)
    res = cli("run", str(texts), "--store", str(tmp_path / "a"), "--accept-torn-tail")
    assert res.returncode == 2 and "frame logs only" in res.stderr
    res = cli("run", str(texts), "--store", str(tmp_path / "a"), "--kind", "signal-log")
    assert res.returncode == 2 and "the content is a text-archive" in res.stderr
    empty = copy_fixture("signals-empty.log", tmp_path)
    res = cli("run", str(empty), "--store", str(tmp_path / "a"))
    assert res.returncode == 2 and "--kind" in res.stderr
    assert not (tmp_path / "a").exists()
    receipt = run_json("run", str(empty), "--store", str(tmp_path / "a"), "--kind", "signal-log")
    assert receipt["legacy"]["items"] == 0
    assert (
        inspect_bbg(tmp_path / "a")["namespaces"][receipt["legacy"]["namespace"]]["history_rows"]
        == 1
    )
    # A valid log is not torn: the flag changes nothing and the receipt says no cut.
    log = copy_fixture("signals-small.log", tmp_path)
    plain = run_json("plan", str(log), "--store", str(tmp_path / "b"))
    flagged = run_json("plan", str(log), "--store", str(tmp_path / "b"), "--accept-torn-tail")
    assert flagged == plain and flagged["legacy"]["torn_tail"] is None


def test_detect_names_every_kind(tmp_path: Path) -> None:
    for name, kind in (
        ("signals-small.log", "signal-log"),
        ("bbg-cli-small.log", "bbg-frame-log"),
        ("texts-small.jsonl", "text-archive"),
    ):
        src = copy_fixture(name, tmp_path)
        assert run_json("detect", str(src))["kind"] == kind


def test_a_bbg_cli_log_imports_one_commit_per_frame(tmp_path: Path) -> None:
    # Once this log was read as an old cyb Signal log and refused ("links limit").
    src = copy_fixture("bbg-cli-small.log", tmp_path / "src")
    receipt = run_json("run", str(src), "--store", str(tmp_path / "bbg"))
    assert receipt["source"]["kind"] == receipt["legacy"]["kind"] == "bbg-frame-log"
    docs = [doc for _, doc, _ in records(tmp_path / "bbg", receipt["legacy"]["namespace"])]
    assert docs[0]["kind"] == "bbg-frame-log" and docs[0]["items"] == 6
    summaries = [doc["summary"] for doc in docs[1:]]
    assert [s["sigil"] for s in summaries] == ["!", ".", "!", "^", "!", "."]
    assert summaries[1] == {"sigil": "."}
    assert summaries[4] == {
        "sigil": "!", "neuron": "01" * 32, "height": 7, "links": 1, "box_moves": 1,
    }  # fmt: skip
    assert summaries[3] == {"sigil": "^", "neuron": "09" * 32, "h0": 3}
    report = run_json("inspect", str(src))
    assert (report["kind"], report["blocks"], report["link_count"]) == ("bbg-frame-log", 2, 3)


LENIENT_LOGS = ["bbg-cli-bad-flag.log", "bbg-cli-bad-finalize.log", "bbg-cli-links-cut.log",
                "bbg-cli-links-overflow.log", "bbg-cli-moves-overflow.log"]  # fmt: skip


@pytest.mark.parametrize("name", LENIENT_LOGS)
def test_a_bbg_cli_log_imports_what_bbgs_reader_sees(name: str, tmp_path: Path) -> None:
    """bbg@742075ae cli/src/frame.rs decode_events / deserialize_signal: a box-move flag other
    than 1 is "no commitment", a finalize payload and bytes after a signal are ignored, a
    frame whose payload cannot be read is dropped and reading goes on.  The import takes the
    same events; the receipt and the import record list each frame skipped or read leniently
    (offset, reason, span and hemera of its bytes)."""
    src = copy_fixture(name, tmp_path / "src")
    want = expected(src)
    store = tmp_path / "bbg"
    receipt = run_json("run", str(src), "--store", str(store))
    assert receipt["legacy"]["items"] == want["event_count"]
    assert receipt["legacy"]["lenient_frames"] == want["lenient_frames"]
    assert receipt["legacy"]["torn_tail"] is None
    docs = records(store, receipt["legacy"]["namespace"])
    assert docs[0][1]["lenient_frames"] == want["lenient_frames"]
    sigils = [d["summary"]["sigil"] for _, d, _ in docs[1:]]
    assert {s: sigils.count(s) for s in want["per_sigil"]} == want["per_sigil"]
    assert inspect_bbg(store)["valid"]
    check_provenance(src, store, receipt, want["event_count"])


def test_an_empty_bbg_cli_log_needs_its_kind(tmp_path: Path) -> None:
    empty = copy_fixture("signals-empty.log", tmp_path)
    receipt = run_json("run", str(empty), "--store", str(tmp_path / "a"), "--kind", "bbg-frame-log")
    assert receipt["legacy"]["kind"] == "bbg-frame-log" and receipt["legacy"]["items"] == 0


def test_strict_keeps_the_refusals_and_is_part_of_the_import(tmp_path: Path) -> None:
    """--strict: every frame bbg's reader would read leniently is refused (exit 3, the strict
    decoder's code and offset); a strictly valid log imports the same rows either way, under
    another import id; --strict on another kind is a usage error."""
    src = copy_fixture("bbg-cli-bad-flag.log", tmp_path / "src")
    store = tmp_path / "bbg"
    err = expected(src)["strict"]["error"]
    res = cli("run", str(src), "--store", str(store), "--strict")
    assert res.returncode == 3, res.stderr
    assert f"bad-flag at byte {err['offset']} (frame {err['frame_index']}" in res.stderr
    assert not store.exists()
    small = copy_fixture("bbg-cli-small.log", tmp_path / "small")
    plain = run_json("run", str(small), "--store", str(tmp_path / "a"))
    strict = run_json("run", str(small), "--store", str(tmp_path / "b"), "--strict")
    assert plain["digests"] == strict["digests"] and plain["legacy"] == strict["legacy"]
    assert plain["import_id"] != strict["import_id"]
    text = copy_fixture("texts-small.jsonl", tmp_path / "t")
    assert cli("plan", str(text), "--store", str(tmp_path / "c"), "--strict").returncode == 2
