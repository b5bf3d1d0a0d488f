"""Archive digest and link validation over stores, staging and plain row sets.

Row sets in ``data/`` come from real legacy cell stores (dumped by the real redb crate); their
expected digests and errors were computed by the fixture generator, not by this code.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from migrate.rules.links import validate_links
from migrate.store import ARCHIVE_ORDER, StagedTables, Store, archive_digest, imports, open_store
from tests.store.helpers import DictTables, birth, follow, h, load_rows
from tests.support.stores import live_digest, prepare_activation

FIXTURES = [
    "cell-small",
    "cell-empty",
    "cell-invalid-history-gap",
    "cell-invalid-missing-content",
    "cell-invalid-request-head",
]


def independent_digest(
    tables: dict[str, list[tuple[bytes, bytes]]], hasher=hashlib.sha256, prefix=b""
):  # type: ignore[no-untyped-def]
    """The archive digest written out again, as plainly as possible, to check the streaming one."""
    order = [
        "application_content",
        "application_unique_claims",
        "application_requests",
        "application_history",
        "application_heads",
    ]
    stream = bytearray(prefix)
    for i, name in enumerate(order):
        stream += bytes([i])
        for k, v in sorted(tables.get(name, [])):
            stream += len(k).to_bytes(8, "little") + k + len(v).to_bytes(8, "little") + v
    return hasher(bytes(stream)).digest()


def test_digest_of_known_small_row_set() -> None:
    tables = {
        "application_content": [(b"\x02" * 32, b"\x01two"), (b"\x01" * 32, b"\x00one")],
        "application_heads": [(b"n" * 32, (0).to_bytes(8, "little") + b"n" * 32)],
    }
    got = archive_digest(DictTables(tables))
    assert got == independent_digest(tables)
    # Empty tables still contribute their ordinal byte.
    assert archive_digest(DictTables({})) == hashlib.sha256(bytes([0, 1, 2, 3, 4])).digest()
    # Another hash and a domain prefix: the same stream.
    dom = b"bbg/application-archive-rows/1\0"
    assert archive_digest(DictTables(tables), hashlib.blake2b, dom) == independent_digest(
        tables, hashlib.blake2b, dom
    )


def test_digest_refuses_unsorted_rows() -> None:
    class Unsorted:
        def rows(self, table: str) -> list[tuple[bytes, bytes]]:
            return [(b"b", b""), (b"a", b"")] if table == "application_content" else []

    with pytest.raises(ValueError, match="key order"):
        archive_digest(Unsorted())


def _load(store: Store, rows: dict[str, list[tuple[bytes, bytes]]]) -> None:
    with store.transaction() as tx:
        for table in ARCHIVE_ORDER:
            tx.put_many(table, rows.get(table, []))


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_digest_and_links_through_store(store: Store, name: str) -> None:
    doc = load_rows(name)
    assert archive_digest(DictTables(doc["tables"])) == bytes.fromhex(doc["archive_digest_sha256"])
    _load(store, doc["tables"])
    with store.snapshot() as live:
        assert archive_digest(live).hex() == doc["archive_digest_sha256"]
        assert validate_links(live) == doc["expected_errors"]
    # Same checker over a source without point lookups (spill index path).
    assert validate_links(DictTables(doc["tables"])) == doc["expected_errors"]


@pytest.mark.parametrize("name", ["cell-small", "cell-invalid-history-gap"])
def test_staging_digest_equals_source_and_destination(tmp_path: Path, name: str) -> None:
    doc = load_rows(name)
    with open_store(tmp_path / "s", create=True) as st:
        with st.transaction() as tx:
            imports.begin_import(tx, "imp")
            for table in ARCHIVE_ORDER:
                imports.stage_rows(tx, "imp", table, doc["tables"].get(table, []))
        with st.snapshot() as live:
            assert archive_digest(live) == archive_digest(DictTables({}))  # staging is inert
        with st.transaction() as tx:
            staged = StagedTables(tx, "imp")
            assert archive_digest(staged).hex() == doc["archive_digest_sha256"]
            assert validate_links(staged) == doc["expected_errors"]
        prepare_activation(st, "imp")
        with st.transaction() as tx:
            imports.activate(tx, "imp")
        with st.snapshot() as live:
            assert archive_digest(live).hex() == doc["archive_digest_sha256"]
        assert live_digest(tmp_path / "s") == doc["archive_digest_sha256"]  # read from outside


def test_store_written_by_graphport_has_valid_links(store: Store) -> None:
    for seed in range(3):
        w = birth(seed)
        w.apply(store)
        for i in range(1, 5 + seed):
            w = follow(w, w.namespace, i)
            w.apply(store)
    with store.snapshot() as live:
        assert validate_links(live) == []


def _chain(n: int, seed: str = "x") -> tuple[bytes, dict[str, list[tuple[bytes, bytes]]]]:
    """A valid namespace with n history entries, as raw rows."""
    b = birth(seed)
    ns = b.namespace
    rows: dict[str, list[tuple[bytes, bytes]]] = {t: [] for t in ARCHIVE_ORDER}
    w = b
    for i in range(n):
        if i:
            w = follow(w, ns, i)
        rows["application_content"] += list(w.contents.items())
        rows["application_history"].append((ns + i.to_bytes(8, "big"), w.new_head.commit))
        rows["application_requests"].append((ns + w.request, w.fingerprint + w.new_head.encode()))
    rows["application_heads"] = [(ns, w.new_head.encode())]
    return ns, rows


def _drop(rows: list[tuple[bytes, bytes]], key: bytes) -> list[tuple[bytes, bytes]]:
    out = [r for r in rows if r[0] != key]
    assert len(out) == len(rows) - 1
    return out


def _codes(rows: dict[str, list[tuple[bytes, bytes]]]) -> list[str]:
    return [e["code"] for e in validate_links(DictTables(rows))]


def hk(ns: bytes, i: int) -> bytes:
    return ns + i.to_bytes(8, "big")


def test_link_cases() -> None:
    ns, base = _chain(4)
    assert _codes(base) == []
    hist = dict(base["application_history"])

    # A consistent history whose index-0 commit is not the namespace id: bbg's conversion
    # accepts it (no birth rule); only neuron's semantic import of a mapped origin refuses it.
    r = dict(base)
    r["application_history"] = [(hk(ns, 0), h("other"))] + base["application_history"][1:]
    r["application_content"] = base["application_content"] + [(h("other"), b"\x01o")]
    key0, val0 = base["application_requests"][0]
    r["application_requests"] = [(key0, val0[:40] + h("other"))] + base["application_requests"][1:]
    semantic: list[dict[str, str]] = []
    assert validate_links(DictTables(r), semantic=semantic) == []
    assert [(e["code"], e["namespace"]) for e in semantic] == [("birth-mismatch", ns.hex())]

    r = dict(base)
    r["application_history"] = _drop(base["application_history"], hk(ns, 0))
    assert _codes(r)[0] == "history-gap"

    r = dict(base)
    r["application_heads"] = [(ns, (2).to_bytes(8, "little") + hist[hk(ns, 2)])]
    assert _codes(r) == ["head-mismatch", "request-head-mismatch"]  # receipt 3 is past head 2

    # bbg validation.rs (a0d38a0): every history and request row needs its namespace's head;
    # without one, each of the 4 receipts is refused too.
    r = dict(base)
    r["application_heads"] = []
    assert _codes(r) == ["head-mismatch"] + ["request-head-mismatch"] * 4

    r = dict(base)
    r["application_content"] = _drop(base["application_content"], hist[hk(ns, 1)])
    assert _codes(r) == ["missing-content"]

    r = dict(base)
    req_key, req_val = base["application_requests"][1]
    r["application_requests"] = _drop(base["application_requests"], req_key)
    assert _codes(r) == ["missing-receipt"]

    r = dict(base)
    r["application_requests"] = base["application_requests"] + [(ns + h("dup"), req_val)]
    assert _codes(r) == ["duplicate-receipt"]

    r = dict(base)
    bad = req_val[:32] + (9).to_bytes(8, "little") + req_val[40:]
    r["application_requests"] = _drop(base["application_requests"], req_key) + [(req_key, bad)]
    assert _codes(r) == ["request-head-mismatch", "missing-receipt"]

    r = dict(base)
    r["application_heads"] = [(ns, b"short")]
    assert _codes(r) == ["bad-value-length", "head-mismatch"] + ["request-head-mismatch"] * 4

    # A receipt for a namespace that has no history at all.
    r = dict(base)
    stray = h("stray-ns")
    r["application_requests"] = base["application_requests"] + [(stray + h("q"), req_val)]
    assert _codes(r) == ["request-head-mismatch"]


def test_links_stream_several_namespaces_in_order() -> None:
    ns_a, a = _chain(3, "a")
    ns_b, b = _chain(2, "b")
    rows = {t: a[t] + b[t] for t in ARCHIVE_ORDER}
    rows["application_heads"] = []  # both lose their head
    errors = [e for e in validate_links(DictTables(rows)) if e["code"] == "head-mismatch"]
    assert len(errors) == 2
    first, second = sorted([ns_a, ns_b])
    assert first.hex() in errors[0]["detail"] and second.hex() in errors[1]["detail"]


def test_malformed_rows_reported_or_left_to_the_shape_check() -> None:
    ns, rows = _chain(2)
    rows["application_history"] = rows["application_history"] + [(b"short", b"x" * 32)]
    assert _codes(rows) == ["bad-key-length"]
    assert validate_links(DictTables(rows), report_malformed=False) == []


def test_spill_index_is_removed_even_when_iteration_stops_early() -> None:
    from migrate.rules.links import iter_link_errors

    ns, rows = _chain(3)
    rows["application_heads"] = []
    it = iter_link_errors(DictTables(rows))
    assert next(it)["code"] == "head-mismatch"
    it.close()  # closes the scratch database (filterwarnings=error catches a leak)
    unused = iter_link_errors(DictTables(rows))  # never started: nothing was opened
    del unused


@pytest.mark.parametrize("kept", [None, 2, 0])
def test_request_head_compared_with_the_commit_at_its_index(
    kept: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A receipt whose head names an existing index but another commit is refused, with the
    commit history holds there; the same whether the namespace's commits are kept in memory
    (``kept`` None: all), only the first few, or none (each looked up)."""
    from migrate.rules import links

    if kept is not None:
        monkeypatch.setattr(links, "MAX_KEPT_COMMITS", kept)
    ns, rows = _chain(4)
    hist = dict(rows["application_history"])
    requests = rows["application_requests"]
    for index in (1, 3):
        req_key, req_val = requests[index]
        bad = req_val[:40] + h("elsewhere")  # fingerprint, index (unchanged), commit
        rows["application_requests"] = _drop(rows["application_requests"], req_key) + [
            (req_key, bad)
        ]
    errors = validate_links(DictTables(rows))
    assert [e["code"] for e in errors] == ["request-head-mismatch"] * 2
    shown = sorted(e["detail"].rsplit(" = ", 1)[1] for e in errors)
    assert shown == sorted(hist[hk(ns, i)].hex() for i in (1, 3))


def test_malformed_rows_between_and_inside_namespaces_are_said_in_stream_order() -> None:
    """A malformed row is said when the stream passes it: one inside a namespace's history
    and one between two namespaces come before the next namespace's findings."""
    ns_a, a = _chain(3, "a")
    ns_b, b = _chain(2, "b")
    first, second = sorted([ns_a, ns_b])
    rows = {t: a[t] + b[t] for t in ARCHIVE_ORDER}
    rows["application_history"] = (
        rows["application_history"]
        + [
            (first + (1).to_bytes(8, "big") + b"x", b"c" * 32),  # inside the first namespace
            (second[:31], b"c" * 32),  # a short key sorting just before the second
            (hk(second, 0), b"short"),  # replaces the second namespace's index 0
        ]
    )
    rows["application_history"] = [r for r in rows["application_history"]
                                   if r[0] != hk(second, 0) or r[1] == b"short"]  # fmt: skip
    rows["application_heads"] = [r for r in rows["application_heads"] if r[0] != first]
    got = [(e["code"], first.hex() in e["detail"], second.hex() in e["detail"])
           for e in validate_links(DictTables(rows))]  # fmt: skip
    assert got == EXPECTED_STREAM_ORDER


#: (code, names the first namespace, names the second), as the row-at-a-time stream of
#: b497b23 said them: findings are said when the check moves to the next namespace.
EXPECTED_STREAM_ORDER: list[tuple[str, bool, bool]] = [
    ("head-mismatch", True, False),
    ("request-head-mismatch", False, False),
    ("request-head-mismatch", False, False),
    ("request-head-mismatch", True, False),
    ("bad-key-length", False, False),
    ("bad-key-length", False, False),
    ("bad-value-length", False, True),
    ("history-gap", False, True),
    ("request-head-mismatch", False, True),
]
