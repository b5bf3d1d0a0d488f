"""Import primitives: seals, cursors with pages, inert staging, activation, receipts, journal."""

from __future__ import annotations

import pytest

from bbg_core.errors import Conflict, Fenced, Locked, StoreError
from fences import generations, namespaces
from migrate.rules.links import validate_links
from migrate.store import ARCHIVE_ORDER, StagedTables, Store, archive_digest, imports
from tests.store.helpers import FENCED, birth, follow
from tests.store.test_digest_links import _chain
from tests.support.stores import prepare_activation

SEAL = {"path": "cell.redb", "size": 10, "sha256": "00" * 32, "txn": 7}


def test_begin_is_idempotent_and_states(store: Store) -> None:
    with store.transaction() as tx:
        assert imports.import_state(tx, "imp") is None
        assert imports.begin_import(tx, "imp") == "staging"
        assert imports.begin_import(tx, "imp") == "staging"


def test_seal_and_receipt_are_immutable(store: Store) -> None:
    with store.transaction() as tx:
        imports.begin_import(tx, "imp")
        imports.record_seal(tx, "imp", SEAL)
        imports.record_seal(tx, "imp", dict(reversed(list(SEAL.items()))))  # same document
    with pytest.raises(Conflict):
        with store.transaction() as tx:
            imports.record_seal(tx, "imp", {**SEAL, "size": 11})
    with store.transaction() as tx:
        assert imports.seal_of(tx, "imp") == SEAL
        imports.record_receipt(tx, "imp", {"head": None, "counts": {"rows": 1}})
    with pytest.raises(Conflict):
        with store.transaction() as tx:
            imports.record_receipt(tx, "imp", {"head": None, "counts": {"rows": 2}})
    assert imports.receipt_of(store, "imp") == {"head": None, "counts": {"rows": 1}}


def test_cursor_commits_with_its_page_and_rolls_back_with_it(store: Store) -> None:
    _, rows = _chain(5)
    content = rows["application_content"]
    with store.transaction() as tx:
        imports.begin_import(tx, "imp")
        imports.stage_rows(
            tx, "imp", "application_content", content[:4], stream="content", cursor=b"4"
        )
    with pytest.raises(RuntimeError):
        with store.transaction() as tx:
            imports.stage_rows(
                tx, "imp", "application_content", content[4:8], stream="content", cursor=b"8"
            )
            raise RuntimeError("crash between page and commit")
    with store.transaction() as tx:
        assert imports.cursor_of(tx, "imp", "content") == (b"4", 4)
        assert len(list(StagedTables(tx, "imp").rows("application_content"))) == 4
        # Re-staging an already staged page (a resumed run) is a no-op.
        assert (
            imports.stage_rows(
                tx, "imp", "application_content", content[:8], stream="content", cursor=b"8"
            )
            == 4
        )
        assert imports.cursor_of(tx, "imp", "content") == (b"8", 12)


def test_staged_rows_conflict_within_import(store: Store) -> None:
    with store.transaction() as tx:
        imports.begin_import(tx, "imp")
        imports.stage_rows(tx, "imp", "application_content", [(b"k" * 32, b"\x01a")])
    with pytest.raises(Conflict):
        with store.transaction() as tx:
            imports.stage_rows(tx, "imp", "application_content", [(b"k" * 32, b"\x01b")])


def test_staged_namespace_is_inert_until_activation(store: Store) -> None:
    ns, rows = _chain(3)
    with store.transaction() as tx:
        imports.begin_import(tx, "imp")
        imports.stage_namespace(tx, "imp", ns)
        for table in ARCHIVE_ORDER:
            imports.stage_rows(tx, "imp", table, rows[table])
    # Invisible to readers ...
    assert store.head(ns) is None
    assert store.history(ns) == []
    # ... and refuses GraphPort writes, even a birth.
    b = birth("x")
    assert b.namespace == ns
    with pytest.raises(Locked) as info:
        b.apply(store)
    assert info.value.context["import_id"] == "imp"
    with store.transaction() as tx:
        assert imports.staged_namespaces(tx, "imp") == [ns]
    prepare_activation(store, "imp")
    with store.transaction() as tx:
        counts = imports.activate(tx, "imp")
        assert imports.import_state(tx, "imp") == "active"
        assert imports.staged_namespaces(tx, "imp") == []
    assert counts["application_history"] == 3
    head = store.head(ns)
    assert head is not None and head.index == 2
    # After activation the namespace accepts writes and replays resolve.
    follow(head, ns, "next").apply(store)
    with store.snapshot() as live:
        assert validate_links(live) == []
    with store.snapshot("imp") as staged:
        assert list(staged.rows("application_content")) == []


def test_namespace_staged_by_two_imports_conflicts(store: Store) -> None:
    with store.transaction() as tx:
        imports.begin_import(tx, "a")
        imports.begin_import(tx, "b")
        imports.stage_namespace(tx, "a", b"n" * 32)
        imports.stage_namespace(tx, "a", b"n" * 32)
    with pytest.raises(Conflict):
        with store.transaction() as tx:
            imports.stage_namespace(tx, "b", b"n" * 32)


def test_activation_conflict_writes_nothing(store: Store) -> None:
    a = birth("a")
    a.apply(store)
    before = store.info()["last_transaction"]
    with store.transaction() as tx:
        imports.begin_import(tx, "imp")
        imports.stage_rows(tx, "imp", "application_content", [(a.namespace, b"\x01different")])
        imports.stage_rows(tx, "imp", "application_content", [(b"z" * 32, b"\x01new")])
    with store.snapshot() as live:
        digest = archive_digest(live)
    with pytest.raises(Conflict) as info:
        prepare_activation(store, "imp")  # Fjall: the plan finds the conflict first
        with store.transaction() as tx:
            imports.activate(tx, "imp")
    assert info.value.context["table"] == "application_content"
    with store.snapshot() as live:
        assert archive_digest(live) == digest
    assert store.info()["last_transaction"] == before + 1
    with store.transaction() as tx:
        assert imports.import_state(tx, "imp") == "staging"


def test_activation_with_fence_and_promotion_in_one_transaction(store: Store) -> None:
    origin, rows = _chain(2, "origin")
    with store.transaction() as tx:
        imports.begin_import(tx, "imp")
        imports.stage_namespace(tx, "imp", origin)
        for table in ARCHIVE_ORDER:
            imports.stage_rows(tx, "imp", table, rows[table])
    subject = birth("subject")
    prepare_activation(store, "imp")
    with store.transaction() as tx:
        imports.activate(tx, "imp")
        namespaces.fence(tx, origin, import_id="imp", reason="mapped into subject", **FENCED)
        generations.promote(tx, "neuron-v1")
        from migrate.store.graph import publish

        head = publish(
            tx,
            reader_generation=store.reader_generation,
            namespace=subject.namespace,
            request=subject.request,
            expected=None,
            new_head=subject.new_head,
            contents=subject.contents,
            claims={},
            fingerprint=subject.fingerprint,
        )
        imports.record_receipt(tx, "imp", {"head": head.encode().hex()})
        imports.journal(tx, "imp", "activate", {"ok": True})
    assert store.head(subject.namespace) == subject.new_head
    with pytest.raises(Fenced):
        follow(store.head(origin), origin, "late").apply(store)  # type: ignore[arg-type]
    with store.transaction() as tx:
        assert imports.journal_of(tx, "imp", "activate") == {"ok": True}
        assert imports.journal_of(tx, "imp", "validate") is None
    assert store.info()["status"] == "neuron-v1"


def test_discard_drops_staging(store: Store) -> None:
    ns, rows = _chain(2)
    with store.transaction() as tx:
        imports.begin_import(tx, "imp")
        imports.stage_namespace(tx, "imp", ns)
        imports.stage_rows(tx, "imp", "application_content", rows["application_content"])
        imports.discard(tx, "imp")
        assert imports.import_state(tx, "imp") == "discarded"
    birth("x").apply(store)  # namespace released
    with pytest.raises(StoreError, match="discarded"):
        with store.transaction() as tx:
            imports.stage_rows(tx, "imp", "application_content", rows["application_content"])
