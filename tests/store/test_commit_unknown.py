"""An error at COMMIT poisons the handle (CommitUnknown) until reopen + resolve.

The fault is injected at SQLite's COMMIT (``commit_hook``).  On the Fjall engine a write
transaction is a batch appended to the keyspace *before* the records' COMMIT, so a fault
there lands after bbg's rows are durable; the ``fjall`` tests below inject faults around the
batch append as well (the handle's writer session) and check the same rule: the handle
refuses everything until reopened, and the reopened store resolves the request to what is on
disk.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bbg_core.errors import CommitUnknown
from migrate.store import open_store
from migrate.store.connection import CommitPhase
from migrate.store.keyspace_store import FjallStore
from tests.store.helpers import birth, follow
from tests.support.stores import live_get

A = birth("a")
A1 = follow(A, A.namespace, 1)
A2 = follow(A1, A.namespace, 2)


def fail_at(phase: CommitPhase):  # type: ignore[no-untyped-def]
    def hook(now: CommitPhase) -> None:
        if now == phase:
            raise OSError(5, os.strerror(5), "injected")

    return hook


@pytest.mark.engine("sqlite")  # the hook is SQLite's COMMIT, the whole transaction's outcome
@pytest.mark.parametrize(("phase", "durable"), [("before", False), ("after", True)])
def test_commit_unknown_then_resolve_after_reopen(
    store_dir: Path, phase: CommitPhase, durable: bool
) -> None:
    with open_store(store_dir, create=True) as st:
        A.apply(st)
        st.commit_hook = fail_at(phase)
        with pytest.raises(CommitUnknown) as info:
            A1.apply(st)
        assert info.value.context["request"] == A1.request
        assert st.poisoned
        # Every later call refuses, reads included, and with the hook removed too.
        st.commit_hook = None
        for call in (
            lambda: st.head(A.namespace),
            lambda: st.resolve(A.namespace, A1.request),
            lambda: st.history(A.namespace),
            lambda: A2.apply(st),
            lambda: st.info(),
        ):
            with pytest.raises(CommitUnknown):
                call()
        with pytest.raises(CommitUnknown):
            with st.transaction():
                pass
    with open_store(store_dir) as st:
        assert not st.poisoned
        resolved = st.resolve(A.namespace, A1.request)
        if durable:
            assert resolved == A1.new_head
            assert st.head(A.namespace) == A1.new_head
            assert A1.apply(st) == A1.new_head  # the retry resolves
        else:
            assert resolved is None
            assert st.head(A.namespace) == A.new_head
            assert A1.apply(st) == A1.new_head  # the retry now commits for real
        assert st.head(A.namespace) == A1.new_head


def test_replay_needs_no_commit_so_cannot_be_unknown(store_dir: Path) -> None:
    with open_store(store_dir, create=True) as st:
        A.apply(st)
        st.commit_hook = fail_at("before")
        assert A.apply(st) == A.new_head  # nothing written: ends in ROLLBACK, hook not called
        assert not st.poisoned


@pytest.mark.engine("sqlite")  # the hook is SQLite's COMMIT, the whole transaction's outcome
def test_bulk_transaction_commit_failure_poisons(store_dir: Path) -> None:
    with open_store(store_dir, create=True) as st:
        st.commit_hook = fail_at("before")
        with pytest.raises(CommitUnknown):
            with st.transaction() as tx:
                tx.put("application_content", b"k" * 32, b"\x01v")
        assert st.poisoned
    with open_store(store_dir) as st:
        with st.snapshot() as t:
            assert t.get("application_content", b"k" * 32) is None


def test_interrupt_at_commit_poisons_and_keeps_its_meaning(store_dir: Path) -> None:
    def interrupt(now: CommitPhase) -> None:
        if now == "after":
            raise KeyboardInterrupt

    with open_store(store_dir, create=True) as st:
        st.commit_hook = interrupt
        with pytest.raises(KeyboardInterrupt):
            A.apply(st)
        assert st.poisoned
        with pytest.raises(CommitUnknown):
            st.head(A.namespace)
    with open_store(store_dir) as st:
        assert st.resolve(A.namespace, A.request) == A.new_head


@pytest.mark.engine("sqlite")  # the hook is SQLite's COMMIT, the whole transaction's outcome
@pytest.mark.parametrize(("phase", "durable"), [("before", False), ("after", True)])
def test_commit_once_retried_after_commit_unknown(
    store_dir: Path, phase: CommitPhase, durable: bool
) -> None:
    """commit_once after an unknown outcome: resolve tells what happened; a retry is a
    Conflict if the first attempt landed (never a second effect), a fresh commit if not."""
    from bbg_core.errors import Conflict

    with open_store(store_dir, create=True) as st:
        A.apply(st)
        st.commit_hook = fail_at(phase)
        with pytest.raises(CommitUnknown):
            A1.apply_once(st)
    with open_store(store_dir) as st:
        if durable:
            assert st.resolve(A.namespace, A1.request) == A1.new_head
            before = st.info()["last_transaction"]
            with pytest.raises(Conflict) as info:
                A1.apply_once(st)
            assert info.value.context["head"] == A1.new_head.encode().hex()
            assert st.info()["last_transaction"] == before
        else:
            assert st.resolve(A.namespace, A1.request) is None
            assert A1.apply_once(st) == A1.new_head
        assert st.resolve(A.namespace, A1.request) == A1.new_head
        assert st.head(A.namespace) == A1.new_head
        assert st.history(A.namespace) == [A.new_head, A1.new_head]


# -- the Fjall engine: faults around the batch append and at the records' COMMIT ------------

#: (fault, durable): where the write fails and whether bbg's rows are on disk afterwards.
#: ``batch-before``: the append fails before writing; ``batch-after``: it wrote (fsynced)
#: and then failed; ``records-*``: the batch is written, the records' COMMIT fails.
FJALL_FAULTS = [
    ("batch-before", False), ("batch-after", True), ("records-before", True),
    ("records-after", True),
]  # fmt: skip


def _inject(st: FjallStore, monkeypatch: pytest.MonkeyPatch, fault: str,
            exc: BaseException | None = None) -> None:  # fmt: skip
    """Make the next write of ``st`` fail at ``fault`` (see FJALL_FAULTS)."""
    where, phase = fault.split("-")
    error = exc if exc is not None else OSError(5, os.strerror(5), "injected")
    if where == "records":
        seen: list[CommitPhase] = []

        def hook(now: CommitPhase) -> None:  # its first call of a phase is the batch's
            seen.append(now)
            if now == phase and seen.count(now) == 2:
                raise error

        st.commit_hook = hook
        return
    real = st.writer.append

    def append(items: list[tuple[str, bytes, bytes | None]]) -> int:
        if phase == "after":
            real(items)
        raise error

    monkeypatch.setattr(st.writer, "append", append)


def _heal(st: FjallStore, monkeypatch: pytest.MonkeyPatch) -> None:
    st.commit_hook = None
    monkeypatch.undo()


@pytest.mark.engine("fjall")
@pytest.mark.parametrize(("fault", "durable"), FJALL_FAULTS)
def test_fjall_commit_unknown_then_resolve_after_reopen(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch, fault: str, durable: bool
) -> None:
    with open_store(store_dir, create=True) as st:
        assert isinstance(st, FjallStore)
        A.apply(st)
        _inject(st, monkeypatch, fault)
        with pytest.raises(CommitUnknown) as info:
            A1.apply(st)
        assert info.value.context["request"] == A1.request
        assert st.poisoned
        _heal(st, monkeypatch)  # every later call refuses, reads included, without the fault
        for call in (
            lambda: st.head(A.namespace),
            lambda: st.resolve(A.namespace, A1.request),
            lambda: st.history(A.namespace),
            lambda: A2.apply(st),
            lambda: st.info(),
            lambda: st.read_status(),
        ):
            with pytest.raises(CommitUnknown):
                call()
        with pytest.raises(CommitUnknown):
            with st.transaction():
                pass
    # What the real database holds, read without the tool's store code:
    on_disk = live_get(store_dir, "application_heads", A.namespace)
    assert on_disk == (A1.new_head if durable else A.new_head).encode()
    with open_store(store_dir) as st:
        assert not st.poisoned
        resolved = st.resolve(A.namespace, A1.request)
        if durable:
            assert resolved == A1.new_head
            assert st.head(A.namespace) == A1.new_head
        else:
            assert resolved is None
            assert st.head(A.namespace) == A.new_head
        assert A1.apply(st) == A1.new_head  # the retry resolves, or commits for real
        assert st.head(A.namespace) == A1.new_head
        assert st.history(A.namespace) == [A.new_head, A1.new_head]


@pytest.mark.engine("fjall")
def test_fjall_failed_batch_poisons_and_writes_nothing(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(store_dir, create=True) as st:
        assert isinstance(st, FjallStore)
        _inject(st, monkeypatch, "batch-before")
        with pytest.raises(CommitUnknown):
            with st.transaction() as tx:
                tx.put("application_content", b"k" * 32, b"\x01v")
        assert st.poisoned
        _heal(st, monkeypatch)
    assert live_get(store_dir, "application_content", b"k" * 32) is None
    with open_store(store_dir) as st:
        with st.snapshot() as t:
            assert t.get("application_content", b"k" * 32) is None


@pytest.mark.engine("fjall")
@pytest.mark.parametrize("fault", ["batch-after", "records-after"])
def test_fjall_interrupt_at_commit_poisons_and_keeps_its_meaning(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    """A signal while the batch is written (or the records commit) keeps its meaning, and the
    handle, which cannot know what landed, refuses all further work."""
    with open_store(store_dir, create=True) as st:
        assert isinstance(st, FjallStore)
        _inject(st, monkeypatch, fault, KeyboardInterrupt())
        with pytest.raises(KeyboardInterrupt):
            A.apply(st)
        _heal(st, monkeypatch)
        assert st.poisoned
        with pytest.raises(CommitUnknown):
            st.head(A.namespace)
    with open_store(store_dir) as st:
        assert st.resolve(A.namespace, A.request) == A.new_head


@pytest.mark.engine("fjall")
@pytest.mark.parametrize(("fault", "durable"), FJALL_FAULTS)
def test_fjall_commit_once_retried_after_commit_unknown(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch, fault: str, durable: bool
) -> None:
    """commit_once after an unknown outcome on the real database: a retry is a Conflict if
    the batch landed (never a second effect), a fresh commit if not."""
    from bbg_core.errors import Conflict

    with open_store(store_dir, create=True) as st:
        assert isinstance(st, FjallStore)
        A.apply(st)
        _inject(st, monkeypatch, fault)
        with pytest.raises(CommitUnknown):
            A1.apply_once(st)
        _heal(st, monkeypatch)
    with open_store(store_dir) as st:
        if durable:
            assert st.resolve(A.namespace, A1.request) == A1.new_head
            before = live_get(store_dir, "bbg_storage_v1", b"last_transaction")
            with pytest.raises(Conflict) as info:
                A1.apply_once(st)
            assert info.value.context["head"] == A1.new_head.encode().hex()
            assert live_get(store_dir, "bbg_storage_v1", b"last_transaction") == before
        else:
            assert st.resolve(A.namespace, A1.request) is None
            assert A1.apply_once(st) == A1.new_head
        assert st.resolve(A.namespace, A1.request) == A1.new_head
        assert st.head(A.namespace) == A1.new_head
        assert st.history(A.namespace) == [A.new_head, A1.new_head]
