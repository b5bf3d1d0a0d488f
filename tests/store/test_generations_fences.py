"""Reader generations (marker ↔ generation, monotonic promotion, refusal) and fences."""

from __future__ import annotations

from pathlib import Path

import pytest

from bbg_core.errors import Fenced, Locked, StoreRefused, StoreSealed
from fences import generations, namespaces
from migrate.store import open_store
from tests.store.helpers import FENCED, birth, follow
from tests.support.stores import set_status

A = birth("a")
A1 = follow(A, A.namespace, 1)
A2 = follow(A1, A.namespace, 2)


@pytest.mark.parametrize(
    ("marker", "generation"),
    [
        (None, "original"),
        ("complete", "original"),
        ("neuron-v1", "neuron-v1"),
        ("auth-v1", "auth-v1"),
        ("copying", None),
        ("export-v1", None),
        ("original", None),  # the generation's name is not its marker
        ("Complete", None),
        ("", None),
    ],
)
def test_marker_table(marker: str | None, generation: str | None) -> None:
    assert generations.generation_of(marker) == generation


@pytest.mark.parametrize(
    ("marker", "error"),
    [("copying", StoreRefused), ("export-v1", StoreSealed), ("neuron-v9", StoreRefused)],
)
def test_unknown_marker_refuses_normal_open(
    store_dir: Path, marker: str, error: type[StoreRefused | StoreSealed]
) -> None:
    open_store(store_dir, create=True).close()
    set_status(store_dir, marker)  # behind the tool's back
    with pytest.raises(error) as info:
        open_store(store_dir)
    assert type(info.value) is error
    assert repr(marker) in info.value.message
    if error is StoreRefused:
        assert generations.BUILD_GENERATION in info.value.message
    else:
        assert info.value.exit_code == 4
    assert info.value.context["marker"] == marker
    with open_store(store_dir, maintenance=True) as st:  # the pipeline can still get in
        assert st.info()["status"] == marker


@pytest.mark.parametrize(
    ("reader", "store_gen", "opens"),
    [
        ("original", "original", True),
        ("original", "neuron-v1", False),
        ("original", "auth-v1", False),
        ("neuron-v1", "neuron-v1", True),
        ("neuron-v1", "auth-v1", False),
        ("auth-v1", "auth-v1", True),
        ("auth-v1", "original", True),
    ],
)
def test_reader_generation_matrix(
    store_dir: Path, reader: str, store_gen: str, opens: bool
) -> None:
    with open_store(store_dir, create=True) as st, st.transaction() as tx:
        generations.promote(tx, store_gen)
    if opens:
        open_store(store_dir, reader_generation=reader).close()
    else:
        with pytest.raises(StoreRefused, match=f"supports up to {reader}"):
            open_store(store_dir, reader_generation=reader)


@pytest.mark.engine("sqlite")  # two write handles at once: SQLite's multi-handle concurrency
def test_original_reader_refuses_promoted_store(store_dir: Path) -> None:
    with open_store(store_dir, create=True, reader_generation="original") as old:
        A.apply(old)
        # Promotion by the new tool, in another handle.
        with open_store(store_dir) as new, new.transaction() as tx:
            assert generations.promote(tx, "neuron-v1") == "neuron-v1"
        # The old handle, opened before promotion, can no longer write ...
        with pytest.raises(StoreRefused, match="neuron-v1"):
            A1.apply(old)
    # ... and an old reader cannot open it at all.
    with pytest.raises(StoreRefused, match="'neuron-v1'"):
        open_store(store_dir, reader_generation="original")


@pytest.mark.engine("fjall")
def test_fjall_original_reader_refuses_promoted_store(store_dir: Path) -> None:
    """On the real database a write handle holds bbg.lock for its life: nobody promotes the
    store behind an open handle (a second writer is Locked).  A handle of an original reader
    still reads the marker at every write: once it promoted the store itself it can no
    longer write, and an old reader cannot open the store at all."""
    with open_store(store_dir, create=True, reader_generation="original") as old:
        A.apply(old)
        with pytest.raises(Locked):
            open_store(store_dir, busy_timeout=0.2)
        with old.transaction() as tx:
            assert generations.promote(tx, "neuron-v1") == "neuron-v1"
        with pytest.raises(StoreRefused, match="neuron-v1"):
            A1.apply(old)
    with pytest.raises(StoreRefused, match="'neuron-v1'"):
        open_store(store_dir, reader_generation="original")


def test_promotion_is_monotonic(store_dir: Path) -> None:
    with open_store(store_dir, create=True) as st:
        with st.transaction() as tx:
            assert generations.promote(tx, "neuron-v1") == "neuron-v1"
        before = st.info()
        for lower in ("original", "neuron-v1"):
            with st.transaction() as tx:
                assert generations.promote(tx, lower) == "neuron-v1"
        assert st.info() == before  # nothing written, not even the transaction counter
        with st.transaction() as tx:
            assert generations.promote(tx, "auth-v1") == "auth-v1"
        assert st.info()["status"] == "auth-v1"
        with pytest.raises(ValueError):
            with st.transaction() as tx:
                generations.promote(tx, "bogus")


def test_promotion_is_transactional(store_dir: Path) -> None:
    with open_store(store_dir, create=True) as st:
        with pytest.raises(RuntimeError):
            with st.transaction() as tx:
                generations.promote(tx, "neuron-v1")
                raise RuntimeError("abort")
        assert st.info()["status"] is None
    open_store(store_dir, reader_generation="original").close()


def test_transitional_marker_is_never_settled_or_written_over(store_dir: Path) -> None:
    with open_store(store_dir, create=True) as st:
        with st.transaction() as tx:
            generations.promote(tx, "neuron-v1")
            generations.set_transitional(tx, "copying")
    with pytest.raises(StoreRefused, match="copying"):
        open_store(store_dir)
    with open_store(store_dir, maintenance=True) as st:
        before = st.info()
        # Every write transaction re-reads the marker and refuses before the body runs.
        with pytest.raises(StoreRefused, match="copying"), st.transaction():
            raise AssertionError("the body of a refused transaction never runs")
        assert st.info() == before
    with pytest.raises(ValueError):
        with open_store(store_dir.parent / "other", create=True) as st, st.transaction() as tx:
            generations.set_transitional(tx, "complete")


def test_fenced_namespace_refuses_writes_but_retries_resolve(store_dir: Path) -> None:
    with open_store(store_dir, create=True) as st:
        A.apply(st)
        A1.apply(st)
        with st.transaction() as tx:
            reason = "moved to subject"
            assert namespaces.fence(tx, A.namespace, import_id="imp", reason=reason, **FENCED)
        with st.transaction() as tx:  # idempotent
            assert not namespaces.fence(tx, A.namespace, import_id="imp", reason="again", **FENCED)
        with pytest.raises(Fenced) as info:
            A2.apply(st)
        assert info.value.context["namespace"] == A.namespace
        assert info.value.exit_code == 4
        assert A1.apply(st) == A1.new_head  # exact retry still resolves
        assert A.apply(st) == A.new_head
        assert st.head(A.namespace) == A1.new_head
        other = birth("b")
        other.apply(st)  # other namespaces unaffected
    with open_store(store_dir) as st:  # forever: survives reopen
        with pytest.raises(Fenced):
            A2.apply(st)
        record = namespaces.fence_of(st, A.namespace)
        assert record is not None
        assert {k: record[k] for k in ("import_id", "reason", "transaction")} == {
            "import_id": "imp",
            "reason": "moved to subject",
            "transaction": 4,
        }


def test_fence_before_birth_blocks_birth(store_dir: Path) -> None:
    with open_store(store_dir, create=True) as st:
        with st.transaction() as tx:
            namespaces.fence(tx, A.namespace, import_id="imp", reason="r", **FENCED)
        with pytest.raises(Fenced):
            A.apply(st)


def test_settle_writes_complete_for_a_plain_conversion(store_dir: Path) -> None:
    with open_store(store_dir, create=True) as st:
        assert st.info()["status"] is None
        with st.transaction() as tx:
            assert generations.settle(tx) == "original"
        assert st.info()["status"] == "complete"
        before = st.info()
        with st.transaction() as tx:
            generations.settle(tx)  # already settled: writes nothing
        assert st.info() == before
    open_store(store_dir, reader_generation="original").close()
