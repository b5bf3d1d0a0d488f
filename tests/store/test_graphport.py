"""The GraphPort contract, as a table of cases.

Each case applies some prior writes, then one attempt, and states the outcome: the head the
attempt returns, or the error it raises.  On an error the whole store must be unchanged
(archive digest and transaction counter equal before and after).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from bbg_core.errors import Conflict, HeadMismatch, MigrateError, ValidationFailed
from migrate.store import Head, Store, archive_digest
from tests.store.helpers import Write, birth, follow, h
from tests.support.stores import tx_put_raw

A = birth("a")
A1 = follow(A, A.namespace, 1)
A2 = follow(A1, A.namespace, 2)
OTHER = birth("other")
CLAIM_KEY, CLAIM_VAL = h("claim"), h("value")


def _with(w: Write, **changes: object) -> Write:
    return replace(w, **changes)  # type: ignore[arg-type]


Case = tuple[str, list[Write], Write, "Head | type[MigrateError]", str | None]

CASES: list[Case] = [
    ("birth", [], A, A.new_head, None),
    ("replay of birth returns original head", [A], A, A.new_head, None),
    ("replay after later commits returns original head", [A, A1, A2], A1, A1.new_head, None),
    (
        "same request, other fingerprint",
        [A, A1],
        _with(A1, contents={**A1.contents, h("x"): b"\x00x"}),
        Conflict,
        None,
    ),
    ("second commit", [A], A1, A1.new_head, None),
    ("stale expected head", [A, A1], follow(A, A.namespace, "fork"), HeadMismatch, None),
    ("expected head but namespace absent", [], A1, HeadMismatch, None),
    (
        "no expected head but namespace exists",
        [A],
        _with(A, request=h("again")),
        HeadMismatch,
        None,
    ),
    (
        "birth commit is not the namespace",
        [],
        _with(A, new_head=Head(0, h("not-ns")), contents={h("not-ns"): b"\x01x"}),
        ValidationFailed,
        "birth-mismatch",
    ),
    (
        "birth at index 1",
        [],
        _with(A, new_head=Head(1, A.namespace)),
        ValidationFailed,
        "birth-mismatch",
    ),
    (
        "index does not follow expected",
        [A],
        _with(A1, new_head=Head(2, A1.new_head.commit)),
        ValidationFailed,
        "history-gap",
    ),
    (
        "commit content missing",
        [A],
        _with(A1, contents={}),
        ValidationFailed,
        "missing-content",
    ),
    (
        "commit content stored earlier is enough",
        [A],
        _with(A1, new_head=Head(1, A.namespace), contents={}),
        Head(1, A.namespace),
        None,
    ),
    (
        "content put of identical bytes is a no-op",
        [A],
        _with(A1, contents={**A1.contents, A.namespace: A.contents[A.namespace]}),
        A1.new_head,
        None,
    ),
    (
        "content put of other bytes conflicts",
        [A],
        _with(A1, contents={**A1.contents, A.namespace: b"\x01changed"}),
        Conflict,
        None,
    ),
    (
        "claim put",
        [A],
        _with(A1, claims={CLAIM_KEY: CLAIM_VAL}),
        A1.new_head,
        None,
    ),
    (
        "claim put of identical bytes is a no-op",
        [_with(OTHER, claims={CLAIM_KEY: CLAIM_VAL}), A],
        _with(A1, claims={CLAIM_KEY: CLAIM_VAL}),
        A1.new_head,
        None,
    ),
    (
        "claim put of other bytes conflicts",
        [_with(OTHER, claims={CLAIM_KEY: CLAIM_VAL}), A],
        _with(A1, claims={CLAIM_KEY: h("other value")}),
        Conflict,
        None,
    ),
    (
        "unknown codec byte",
        [A],
        _with(A1, contents={**A1.contents, h("c7"): b"\x07payload"}),
        ValidationFailed,
        "unknown-codec",
    ),
    (
        "short namespace",
        [],
        _with(A, namespace=A.namespace[:31]),
        ValidationFailed,
        "bad-key-length",
    ),
    ("short request", [A], _with(A1, request=b"r"), ValidationFailed, "bad-key-length"),
    (
        "short claim value",
        [A],
        _with(A1, claims={CLAIM_KEY: b"v"}),
        ValidationFailed,
        "bad-key-length",
    ),
    (
        "empty content value",
        [A],
        _with(A1, contents={**A1.contents, h("e"): b""}),
        ValidationFailed,
        "bad-value-length",
    ),
]


def _state(store: Store) -> tuple[bytes, int]:
    with store.snapshot() as tables:
        digest = archive_digest(tables)
    return digest, int(store.info()["last_transaction"])


@pytest.mark.parametrize(
    ("prior", "attempt", "outcome", "code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_commit_contract(
    store: Store,
    prior: list[Write],
    attempt: Write,
    outcome: Head | type[MigrateError],
    code: str | None,
) -> None:
    for w in prior:
        w.apply(store)
    before = _state(store)
    if isinstance(outcome, Head):
        assert attempt.apply(store) == outcome
        assert store.resolve(attempt.namespace, attempt.request) == outcome
        if attempt in prior:  # a replay writes nothing at all
            assert _state(store) == before
        else:
            assert store.head(attempt.namespace) == outcome
            assert (
                store.history(
                    attempt.namespace, after=outcome.index - 1 if outcome.index else None
                )[0]
                == outcome
            )
    else:
        with pytest.raises(outcome) as info:
            attempt.apply(store)
        if code is not None:
            assert info.value.context["errors"][0]["code"] == code
        assert _state(store) == before
        original = [w.new_head for w in prior if w.request == attempt.request]
        # A rejected attempt never changes what its request resolves to.
        assert store.resolve(attempt.namespace, attempt.request) == (
            original[0] if original else None
        )


def test_one_commit_writes_all_rows_in_one_transaction(store: Store) -> None:
    A.apply(store)
    before = store.info()["last_transaction"]
    w = _with(A1, claims={CLAIM_KEY: CLAIM_VAL})
    w.apply(store)
    assert store.info()["last_transaction"] == before + 1
    with store.snapshot() as t:
        assert t.get("application_heads", A.namespace) == A1.new_head.encode()
        assert (
            t.get("application_history", A.namespace + (1).to_bytes(8, "big")) == A1.new_head.commit
        )
        assert (
            t.get("application_requests", A.namespace + w.request)
            == w.fingerprint + A1.new_head.encode()
        )
        assert t.get("application_unique_claims", CLAIM_KEY) == CLAIM_VAL
        for cid, value in w.contents.items():
            assert t.get("application_content", cid) == value


def test_history_pages(store: Store) -> None:
    writes = [A]
    for i in range(1, 10):
        writes.append(follow(writes[-1], A.namespace, i))
    for w in writes:
        w.apply(store)
    heads = [w.new_head for w in writes]
    assert store.history(A.namespace) == heads
    assert store.history(A.namespace, limit=4) == heads[:4]
    assert store.history(A.namespace, after=3, limit=4) == heads[4:8]
    assert store.history(A.namespace, after=9) == []
    assert store.history(OTHER.namespace) == []
    for bad in (0, 4097):
        with pytest.raises(ValueError):
            store.history(A.namespace, limit=bad)


def test_history_gap_is_an_error_not_a_short_page(store: Store) -> None:
    from bbg_core.errors import StoreError

    w = A
    for i in range(1, 4):
        w.apply(store)
        w = follow(w, A.namespace, i)
    with store.transaction() as tx:  # corrupt on purpose: drop index 1
        tx_put_raw(tx, "application_history", A.namespace + (1).to_bytes(8, "big"), None)
    with pytest.raises(StoreError, match="history index 1 is missing"):
        store.history(A.namespace)


def test_head_resolve_absent(store: Store) -> None:
    assert store.head(A.namespace) is None
    assert store.resolve(A.namespace, A.request) is None


def test_history_pages_are_capped_at_4096(store: Store) -> None:
    ns = A.namespace
    commits = [h("c", i) for i in range(5000)]
    with store.transaction() as tx:  # a long history, loaded directly
        tx.put_many(
            "application_history", [(ns + i.to_bytes(8, "big"), c) for i, c in enumerate(commits)]
        )
    first = store.history(ns)
    assert len(first) == 4096
    rest = store.history(ns, after=first[-1].index)
    assert [x.commit for x in first + rest] == commits
    assert [x.index for x in first + rest] == list(range(5000))


# -- commit_once: fresh publication only ---------------------------------------------------
# The rule is bbg's ``ApplicationStore::apply_once`` (cyberia-to/bbg
# rs/src/storage/application.rs, commit 1467b68cd1eed880ad3d0c16f8b41758d0f62a27:
# ``apply_checked(write, allow_retry = false)`` returns Conflict as soon as a receipt for the
# request exists, before comparing fingerprints); bbg has no test of its own for it, so the
# rows below state that rule, plus the seed's "resolving an old receipt cannot become a new
# effect permit; resolve returns an existing request's original head".

ONCE_CASES: list[Case] = [
    ("fresh birth", [], A, A.new_head, None),
    ("fresh second commit", [A], A1, A1.new_head, None),
    ("retried after success", [A, A1], A1, Conflict, None),
    (
        "retried after success, other fingerprint",
        [A, A1],
        _with(A1, contents={**A1.contents, h("x"): b"\x00x"}),
        Conflict,
        None,
    ),
    ("old request after later commits", [A, A1, A2], A1, Conflict, None),
    ("stale expected head", [A, A1], follow(A, A.namespace, "fork"), HeadMismatch, None),
    (
        "shape rules as for commit",
        [],
        _with(A, new_head=Head(1, A.namespace)),
        ValidationFailed,
        "birth-mismatch",
    ),
]


@pytest.mark.parametrize(
    ("prior", "attempt", "outcome", "code"),
    [c[1:] for c in ONCE_CASES],
    ids=[c[0] for c in ONCE_CASES],
)
def test_commit_once_contract(
    store: Store,
    prior: list[Write],
    attempt: Write,
    outcome: Head | type[MigrateError],
    code: str | None,
) -> None:
    for w in prior:
        w.apply(store)  # priors through commit: commit_once must also see their receipts
    before = _state(store)
    if isinstance(outcome, Head):
        assert attempt.apply_once(store) == outcome
        assert store.resolve(attempt.namespace, attempt.request) == outcome
        assert store.head(attempt.namespace) == outcome
        # Now that it exists, the same commit_once again is a Conflict ...
        with pytest.raises(Conflict):
            attempt.apply_once(store)
        # ... while commit (a retry) still resolves it.
        assert attempt.apply(store) == outcome
        return
    with pytest.raises(outcome) as info:
        attempt.apply_once(store)
    if code is not None:
        assert info.value.context["errors"][0]["code"] == code
    assert _state(store) == before  # nothing written
    original = [w.new_head for w in prior if w.request == attempt.request]
    assert store.resolve(attempt.namespace, attempt.request) == (
        original[0] if original else None
    )
    if original:
        assert info.value.context["head"] == original[0].encode().hex()
