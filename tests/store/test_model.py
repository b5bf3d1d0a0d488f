"""Stateful property test: the store against a plain-dict model of the GraphPort contract."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from bbg_core.errors import Conflict, Fenced, HeadMismatch, MigrateError, ValidationFailed
from fences import namespaces as fence_ns
from migrate.rules.links import validate_links
from migrate.store import Head, Store, open_store
from tests.store.helpers import FENCED, Write, birth, h

NAMESPACES = [birth(i) for i in range(3)]
COMMITS = [h("commit", i) for i in range(5)]
REQUESTS = [h("request", i) for i in range(6)]
CLAIMS = [h("claim", i) for i in range(3)]


class Model:
    """What the store must contain, as plain dicts."""

    def __init__(self) -> None:
        self.history: dict[bytes, list[bytes]] = {}
        self.requests: dict[tuple[bytes, bytes], tuple[bytes, Head]] = {}
        self.content: dict[bytes, bytes] = {}
        self.claims: dict[bytes, bytes] = {}
        self.fenced: set[bytes] = set()

    def head(self, ns: bytes) -> Head | None:
        hist = self.history.get(ns)
        return Head(len(hist) - 1, hist[-1]) if hist else None

    def commit(self, w: Write) -> Head | type[MigrateError]:
        prior = self.requests.get((w.namespace, w.request))
        if prior is not None:
            return prior[1] if prior[0] == w.fingerprint else Conflict
        if w.namespace in self.fenced:
            return Fenced
        if self.head(w.namespace) != w.expected:
            return HeadMismatch
        for table, puts in ((self.content, w.contents), (self.claims, w.claims)):
            if any(k in table and table[k] != v for k, v in puts.items()):
                return Conflict
        if w.new_head.commit not in w.contents and w.new_head.commit not in self.content:
            return ValidationFailed
        self.content.update(w.contents)
        self.claims.update(w.claims)
        self.history.setdefault(w.namespace, []).append(w.new_head.commit)
        self.requests[(w.namespace, w.request)] = (w.fingerprint, w.new_head)
        return w.new_head


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="bbg-model-"))
        self.store: Store = open_store(self.dir / "bbg", create=True)
        self.model = Model()
        self.done: list[Write] = []

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir)

    def _check(self, w: Write) -> None:
        expected = self.model.commit(w)
        if isinstance(expected, Head):
            assert w.apply(self.store) == expected
            self.done.append(w)
        else:
            try:
                w.apply(self.store)
            except MigrateError as exc:
                assert type(exc) is expected, (exc, expected)
            else:
                raise AssertionError(f"expected {expected.__name__}")

    @rule(i_ns=st.integers(0, len(NAMESPACES) - 1), req=st.sampled_from(REQUESTS + [None]))
    def birth(self, i_ns: int, req: bytes | None) -> None:
        ns = NAMESPACES[i_ns]
        self._check(ns if req is None else Write(ns.namespace, req, None, ns.new_head, ns.contents))

    @rule(
        i_ns=st.integers(0, len(NAMESPACES) - 1),
        req=st.sampled_from(REQUESTS),
        stale=st.integers(0, 3),
        commit=st.sampled_from(COMMITS),
        variant=st.integers(0, 1),
        with_content=st.booleans(),
        claim=st.sampled_from(CLAIMS + [None]),
        claim_variant=st.integers(0, 1),
    )
    def commit(
        self,
        i_ns: int,
        req: bytes,
        stale: int,
        commit: bytes,
        variant: int,
        with_content: bool,
        claim: bytes | None,
        claim_variant: int,
    ) -> None:
        n = NAMESPACES[i_ns].namespace
        hist = self.model.history.get(n, [])
        # stale == 0: the current head; otherwise an older entry (or a made-up head).
        if stale == 0 or len(hist) <= stale:
            expected = self.model.head(n) if stale == 0 else Head(stale, h("fake", stale))
        else:
            expected = Head(len(hist) - 1 - stale, hist[-1 - stale])
        if expected is None:
            return
        contents = {commit: bytes([1]) + commit + bytes([variant])} if with_content else {}
        claims = {claim: h("claim-value", claim_variant)} if claim is not None else {}
        self._check(Write(n, req, expected, Head(expected.index + 1, commit), contents, claims))

    @precondition(lambda self: bool(self.done))
    @rule(i=st.integers(0, 10_000))
    def replay(self, i: int) -> None:
        w = self.done[i % len(self.done)]
        assert w.apply(self.store) == self.model.requests[(w.namespace, w.request)][1]

    @rule(i_ns=st.integers(0, len(NAMESPACES) - 1))
    def fence(self, i_ns: int) -> None:
        ns = NAMESPACES[i_ns]
        with self.store.transaction() as tx:
            fence_ns.fence(tx, ns.namespace, import_id="model", reason="test", **FENCED)
        self.model.fenced.add(ns.namespace)

    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.store = open_store(self.dir / "bbg")

    @invariant()
    def heads_and_history_match(self) -> None:
        for ns in NAMESPACES:
            n = ns.namespace
            assert self.store.head(n) == self.model.head(n)
            hist = self.model.history.get(n, [])
            assert self.store.history(n) == [Head(i, c) for i, c in enumerate(hist)]
        for (n, req), (_, head) in self.model.requests.items():
            assert self.store.resolve(n, req) == head

    @invariant()
    def links_hold(self) -> None:
        with self.store.snapshot() as live:
            assert validate_links(live) == []
            for table, model in (
                ("application_content", self.model.content),
                ("application_unique_claims", self.model.claims),
            ):
                assert dict(live.rows(table)) == model


StoreMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=25, deadline=None)
TestStoreModel = pytest.mark.slow(StoreMachine.TestCase)  # 100 random histories: seconds
