"""The stores of bbg's own migration tests, through our conversion.

Transcribed from cyberia-to/bbg at a0d38a0827b19a79cc40171e9ad2ded4d6502ad7:
``rs/tests/application_migration.rs`` and ``rs/tests/application_migration/integrity.rs``.
``fixtures/bbg-migration/make.py`` rebuilds each test's legacy store (``create_legacy`` and the
test's edits) as a real redb 2.6.3 file; ``cases.json`` records which test it comes from and
bbg's verdict (``migrates``: ``migrate_redb`` returns Ok; ``corrupt``: ``Err(Error::Corrupt)``;
``refused``: ``is_err()`` before the destination is created).

bbg's converter (``migrate_redb``) never decodes content, so its verdicts are those of our
``--content-check none``.  Its test content values (``[0, 0xff, ns] ‖ index LE``: codec 0, a
10-byte payload) are no nox encoding, so the codec-checked mode refuses every store that has
content.  Its commit ids are not the namespace ids, so every namespace fails neuron's birth
rule: a plain conversion migrates them, a mapped one refuses them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import schemas
from migrate.store import Head, open_store
from tests.conftest import FIXTURES, gunzip_to
from tests.pipeline.helpers import cli

DIR = FIXTURES / "bbg-migration"
CASES: list[dict[str, Any]] = json.loads((DIR / "cases.json").read_text("utf-8"))["cases"]

# Our named code for the first violation in each failing case (bbg says only Corrupt / Err).
FIRST_CODE = {
    "malformed-0": "bad-key-length",
    "malformed-1": "bad-value-length",
    "malformed-2": "bad-key-length",
    "malformed-3": "bad-value-length",
    "malformed-4": "bad-key-length",
    "malformed-5": "bad-value-length",
    "malformed-6": "bad-key-length",
    "malformed-7": "bad-value-length",
    "dangling-0": "missing-content",
    "dangling-1": "request-head-mismatch",
    "tables-missing": "missing-table",
    "tables-unknown": "unexpected-table",
    "tables-multimap": "multimap-table",
    "receipts-none": "missing-receipt",
    "receipts-one-missing": "missing-receipt",
    "receipts-duplicate-replacing": "duplicate-receipt",
    "receipts-duplicate-extra": "duplicate-receipt",
}


# application_migration.rs helpers, as the test defines them.
def ident(kind: int, namespace: int, index: int) -> bytes:
    return bytes([kind, namespace]) + bytes([kind]) * 22 + index.to_bytes(8, "big")


def head(namespace: int, index: int) -> Head:
    return Head(index, ident(0x40, namespace, index))


def content(namespace: int, index: int) -> bytes:
    return bytes([0, 0xFF, namespace]) + index.to_bytes(8, "little")


def _inspect(path: Path, mode: str) -> tuple[int, dict[str, Any]]:
    res = cli("inspect", str(path), "--json", "--content-check", mode)
    doc: dict[str, Any] = json.loads(res.stdout)
    schemas.validate(doc, "redb-inspect")
    return res.returncode, doc


def test_every_transcribed_test_has_its_store() -> None:
    assert {c["name"] for c in CASES} == {p.name.removesuffix(".redb.gz")
                                          for p in DIR.glob("*.redb.gz")}  # fmt: skip
    assert {c["name"] for c in CASES if c["bbg"] != "migrates"} == set(FIRST_CODE)


# One store of each kind of verdict runs in the default suite; every store runs in the slow
# suite (each is an inspect and a migration in a child process: seconds apiece).
DEFAULT_CASES = {"one-namespace", "malformed-0", "dangling-0", "tables-multimap", "receipts-none"}


def _cases(cases: list[dict[str, Any]]) -> list[Any]:
    return [pytest.param(c, id=c["name"],
                         marks=() if c["name"] in DEFAULT_CASES else pytest.mark.slow)
            for c in cases]  # fmt: skip


@pytest.mark.parametrize("case", _cases(CASES))
def test_bbg_verdict_is_ours_in_raw_mode(tmp_path: Path, case: dict[str, Any]) -> None:
    src = gunzip_to(DIR / f"{case['name']}.redb.gz", tmp_path)
    code, doc = _inspect(src, "none")
    store = tmp_path / "bbg"
    res = cli("run", str(src), "--store", str(store), "--content-check", "none", "--json")
    if case["bbg"] == "migrates":
        assert code == 0 and doc["valid"], doc["errors"]
        assert res.returncode == 0, res.stderr
        receipt = json.loads(res.stdout)
        assert receipt["content_check"] == "none"
        assert receipt["counts"]["rows"] == {n: t["rows"] for n, t in doc["tables"].items()}
    else:
        assert code == 3 and not doc["valid"]
        assert doc["errors"][0]["code"] == FIRST_CODE[case["name"]]
        assert res.returncode == 3, res.stderr
        assert not store.exists()  # refused before anything was written


@pytest.mark.parametrize("case", _cases([c for c in CASES if c["bbg"] == "migrates"]))
def test_codec_mode_refuses_content_that_is_no_nox_encoding(
    tmp_path: Path, case: dict[str, Any]
) -> None:
    src = gunzip_to(DIR / f"{case['name']}.redb.gz", tmp_path)
    code, doc = _inspect(src, "codec")
    if doc["content_codecs"]["data"] == 0:  # the empty store
        assert code == 0 and doc["valid"] and doc["data_id_scheme"] == "none"
        return
    assert code == 3
    assert {e["code"] for e in doc["errors"]} == {"content-id-mismatch"}
    assert doc["data_rows_with_id_mismatch"] == doc["content_codecs"]["data"]
    assert "neither a nox Model B node" in doc["errors"][0]["detail"]


def test_paged_history_migrates_exactly(tmp_path: Path) -> None:
    """application_migration.rs migration_preserves_paged_history_retries_claims_and_the_
    usable_source: heads, paged history, content and request resolution after migrating."""
    src = gunzip_to(DIR / "paged-history.redb.gz", tmp_path)
    before = src.read_bytes()
    store = tmp_path / "bbg"
    res = cli("run", str(src), "--store", str(store), "--content-check", "none", "--json")
    assert res.returncode == 0, res.stderr
    assert src.read_bytes() == before  # the source stays usable, untouched
    ns1, ns2 = b"\x01" * 32, b"\x02" * 32
    with open_store(store) as st:
        assert st.head(ns1) == head(1, 4100)
        assert st.head(ns2) == head(2, 1)
        assert st.history(ns1, None, 4096) == [head(1, i) for i in range(4096)]
        assert st.history(ns1, 4095, 4096) == [head(1, i) for i in range(4096, 4101)]
        assert st.history(ns2, None, 4096) == [head(2, 0), head(2, 1)]
        with st.snapshot() as tables:
            for namespace, index in [(1, 0), (1, 4095), (1, 4096), (1, 4100), (2, 0), (2, 1)]:
                assert tables.get("application_content", head(namespace, index).commit) == (
                    content(namespace, index)
                )
                key = bytes([namespace]) * 32 + ident(0x70, namespace, index)
                receipt = tables.get("application_requests", key)
                assert receipt == ident(0x80, namespace, index) + head(namespace, index).encode()
            assert tables.get("application_unique_claims", b"\x51" * 32) == b"\x61" * 32
        for namespace, index in [(1, 0), (1, 4100), (2, 1)]:
            request = ident(0x70, namespace, index)
            assert st.resolve(bytes([namespace]) * 32, request) == head(namespace, index)


def test_births_are_semantic_only(tmp_path: Path) -> None:
    """A former bug: these stores were refused with birth-mismatch.  Their
    namespaces ([n;32]) are not their index-0 commits: a plain conversion migrates them,
    neuron's semantic import refuses them as mapped origins."""
    src = gunzip_to(DIR / "two-namespaces.redb.gz", tmp_path)
    code, doc = _inspect(src, "none")
    assert code == 0 and doc["valid"]
    assert [e["namespace"] for e in doc["semantic_errors"]] == ["01" * 32, "02" * 32]
    assert {o["mappable"] for o in doc["origins"].values()} == {False}
    store = tmp_path / "mapped"
    res = cli("run", str(src), "--store", str(store), "--content-check", "none",
              "--subject", "ab" * 32, f"--map={'01' * 32}={'01' * 32}",
              f"--map={'02' * 32}={'02' * 32}")  # fmt: skip
    assert res.returncode == 3 and "birth-mismatch" in res.stderr
    assert not store.exists()
