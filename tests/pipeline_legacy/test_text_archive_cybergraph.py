"""A TextArchive import lands where cybergraph puts it (issue 27 item 5).

Expected values are transcribed from cyberia-to/cybergraph ``tests/text_archive.rs`` at
commit 78d2343eaca5b8b9ce4437d115c338ac69cf1498:

* L31-45 ``line(text, created)``: ``serde_json::to_vec(json!({"particle": hex(hemera(text)),
  "text": text[, "created": c]}))`` ‖ LF -- ``json!`` builds a BTreeMap, so the keys are
  written sorted;
* L67-97 ``legacy_lines_keep_duplicates_raw_bytes_and_unknown_dates_across_retry``: three
  lines, importing twice gives equal reports, 3 observations, head index 2, two texts, the
  last "one" has no date, its provenance names the source, line 3 and hemera of its raw line;
* L99-118 ``a_bad_late_line_or_truncated_tail_imports_no_prefix``: a changed text under a
  kept particle fails naming "line 2" and writes nothing; a missing final LF fails and
  writes nothing; an empty source gives no head.

The record layout (line i at history index i-1, no import record) is cybergraph@78d2343e
``src/text_archive.rs`` L143-147 (``index = expected.map_or(0, h + 1)``) and
cybergraph@546853d9 ``src/text_archive/legacy.rs`` ``import_jsonl``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bbg_core.errors import ValidationFailed
from fences.seal import fingerprint
from hashing import hemera
from migrate import pipeline
from migrate.pipeline.legacy_text import TextImport
from migrate.probe.inspect import inspect_bbg
from tests.pipeline.helpers import cli
from tests.pipeline_legacy.support import LOCAL, records

ONES = bytes([1] * 32)  # the test's namespace, ``[1; 32]`` (tests/text_archive.rs L19-24)


def line(text: str, created: int | None = None) -> bytes:
    """tests/text_archive.rs L31-45 (serde_json: compact, keys sorted, UTF-8 kept)."""
    doc: dict[str, Any] = {"particle": hemera.hash(text.encode()).hex(), "text": text}
    if created is not None:
        doc["created"] = created
    return json.dumps(doc, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode() + (
        b"\n"
    )


def three_lines() -> bytes:
    """L67-76: the old writer's literal TAB/CR inside strings."""
    raw = line("one", 3) + line("two\twith\rcontrols") + line("one")
    return raw.decode().replace("\\t", "\t").replace("\\r", "\r").encode()


def load(store: Path, namespace: str) -> dict[bytes, dict[str, Any]]:
    """cybergraph's ``TextArchive::load``: text id -> the latest observation of it."""
    out: dict[bytes, dict[str, Any]] = {}
    previous = None
    for index, (commit, doc, _) in enumerate(records(store, namespace)):
        assert doc["previous"] == previous and doc["provenance"]["line"] == index + 1
        out[bytes(doc["text"])] = doc
        previous = list(commit)
    return out


def run(src: Path, store: Path, **job: Any) -> dict[str, Any]:
    receipt = pipeline.run(pipeline.Job(src, store, **job)).receipt
    assert receipt is not None
    return receipt


def test_three_lines_land_at_indices_0_to_2_and_keep_their_provenance(tmp_path: Path) -> None:
    raw = three_lines()
    src = tmp_path / "texts.jsonl"
    src.write_bytes(raw)
    store = tmp_path / "bbg"
    receipt = run(src, store)
    assert run(src, store) == receipt  # importing twice: equal results
    legacy = receipt["legacy"]
    assert legacy["items"] == 3  # report.observations == 3
    ns = legacy["namespace"]
    report = inspect_bbg(store)
    assert report["valid"], report["errors"]
    assert report["namespaces"][ns]["head_index"] == 2  # report.head.index == 2
    assert report["tables"]["application_unique_claims"]["rows"] == 0
    texts = load(store, ns)
    assert len(texts) == 2
    last = texts[hemera.hash(b"one")]
    assert last["created"] is None
    provenance = last["provenance"]
    assert bytes(provenance["source"]) == hemera.hash(raw)  # == report.source
    assert provenance["line"] == 3
    assert bytes(provenance["raw"]) == hemera.hash(line("one", None))


def test_a_bad_late_line_or_a_missing_lf_writes_nothing(tmp_path: Path) -> None:
    good = line("good")
    bad = (good + line("wrong")).decode().replace("wrong", "fraud").encode()
    src = tmp_path / "bad.jsonl"
    src.write_bytes(bad)
    with pytest.raises(ValidationFailed) as err:
        run(src, tmp_path / "a")
    assert "line 2" in str(err.value)
    assert not (tmp_path / "a").exists()
    src.write_bytes(good[:-1])
    with pytest.raises(ValidationFailed):
        run(src, tmp_path / "b")
    assert not (tmp_path / "b").exists()
    src.write_bytes(b"")
    receipt = run(src, tmp_path / "c", kind="text-archive")
    assert receipt["legacy"]["items"] == 0
    assert inspect_bbg(tmp_path / "c")["namespaces"] == {}  # head None: no namespace at all


# Change detectors, NOT evidence: ids of the L67-97 archive in namespace [1; 32], from a
# scratch model of cybergraph's text_archive.rs using this toolkit's own hemera
# (/work/notes/issue27-findings.md B.2 "Derived").  They pin the exact bytes we write.
DERIVED_SOURCE = "66ae4e0f85b0623996a3722eb789bde907f62c9a0464ae24445b4599d56bbc52"
DERIVED = [  # (commit, request fingerprint) of history index 0, 1, 2
    ("5b541cf690a59a998169761f03b01455b2706bdf17da2b3704a1b9d8fe31a61a",
     "a105f1104fec45a79cba5ca73524d58aad507fe8a7a87a70e6ea55f84e9afc53"),
    ("27cfa9299085e9c4b6c42aa98e8690793231469b257ecd5e2d03f25e22f46801",
     "10efb06fdfabeda9e18116ac658d40f2cd2c0fc6a087bdb060884cb63981f920"),
    ("cbc3a94a9603bac1f142ad8856adedfbd06250eb53e38279b4f1fdd64d26b2a3",
     "a5655b2c19ba307280b513c6e02a4870596fd943a773259e33a91c15ab3ab9ef"),
]  # fmt: skip


def test_derived_ids_in_namespace_ones_are_unchanged(tmp_path: Path) -> None:
    src = tmp_path / "texts.jsonl"
    src.write_bytes(three_lines())
    imp = TextImport.read(src, "text-archive", fingerprint(src, "text-archive"), namespace=ONES)
    assert imp.hemera_digest == DERIVED_SOURCE and imp.head.index == 2
    for index, (commit, fp) in enumerate(DERIVED):
        assert imp.commit(index).hex() == commit
        key, value = imp.request_row(index + 1)
        assert key[:32] == ONES and value[:32].hex() == fp


def test_the_callers_namespace_from_the_command_line(tmp_path: Path) -> None:
    """``--namespace`` is cybergraph's ``TextArchive::from_database(db, namespace)``: the
    test's ``[1; 32]`` gets the three lines at 0..2 (head commit: the derived detector)."""
    src = tmp_path / "texts.jsonl"
    src.write_bytes(three_lines())
    store = tmp_path / "bbg"
    args = ("run", str(src), "--store", str(store), "--namespace", ONES.hex(), "--json")
    first = cli(*args)
    assert first.returncode == 0, first.stderr
    assert cli(*args).stdout == first.stdout  # importing twice: equal results
    receipt = json.loads(first.stdout)
    assert receipt["legacy"]["namespace"] == ONES.hex()
    default = run(src, tmp_path / "other")
    assert default["import_id"] != receipt["import_id"]  # the namespace is part of the import
    facts = inspect_bbg(store)["namespaces"]
    assert list(facts) == [ONES.hex()]
    assert (facts[ONES.hex()]["head_index"], facts[ONES.hex()]["head_commit"]) == (2, DERIVED[2][0])
    log = tmp_path / "signals.log"
    log.write_bytes((LOCAL / "signals-small.log").read_bytes())
    res = cli("plan", str(log), "--store", str(tmp_path / "x"), "--namespace", ONES.hex())
    assert res.returncode == 2 and "--namespace applies to TextArchives only" in res.stderr
    res = cli("plan", str(src), "--store", str(tmp_path / "x"), "--namespace", "01" * 31)
    assert res.returncode == 2 and "--namespace" in res.stderr
    assert not (tmp_path / "x").exists()
