"""Every key of source and target after a complete transfer on the real BBG database, against
the end state of bbg's own transfer test scenario.

The expected keys and values below were **derived by hand from bbg's code (not transcribed
from a test's literal values)**: cyberia-to/bbg at commit
36cc420b48c5af8be5afaa3679d271c7b90155e3, ``rs/src/storage/application/transfer.rs``
(``from_archive``, ``prepare_target``, ``stage``), ``archive.rs``, ``application.rs``
(``apply_checked``), ``validation.rs`` (``validate_links``) and ``database/mod.rs``
(``change_id``), applied to the scenario of ``rs/src/storage/application/transfer/tests.rs``
at commit 5f4d9bdf79e51986e4c46925be5009591c4c9d66 (``publish([1; 32], 2)``,
``publish([1; 32], 3)``: content ``[n; 32] -> [1, n]``, request = fingerprint = ``[n; 32]``;
target ``[9; 32]``, key (nonce) ``[8; 32]``; a complete transfer).  The derivation is the
research note ``issue27-findings.md`` section D.4; the values are change detectors.

The source is built as bbg's ``apply_checked`` writes it: one batch per publication holding
exactly the rows it puts (content, history, head, request) plus bbg's ``last_transaction``
(:func:`migrate.store.bbgdb.with_markers`).  The transfer runs with ``content_check="none"``
(bbg's test passes an accepting ``validate_content``; ``[n; 32]`` is not the hemera id of
``[1, n]``), and with the transfer target pinned to ``[9; 32]`` (bbg takes the target as a
parameter; this toolkit derives it from the target store's id, so the test replaces that
derivation).

Two values cannot match, and the test says exactly which and why (asserting what they are):

* the **source's** ``last_transaction``: bbg's ``stage`` runs ``validate_links`` on the sealed
  source, which writes ``'r' ‖ namespace ‖ index`` keys into it and removes them again, so
  its last batch is that removal.  This toolkit validates the source *before* sealing, by
  reading only; nothing is written to the source after the seal, so its last batch is the
  seal itself (``application-export`` and ``status``).
* the **target's** ``last_transaction``: bbg copies each page into the live tables in its
  own batch and its last batch moves only the cursor to table 5.  This toolkit stages the
  pages inertly (in its records, outside the keyspace) and publishes all rows in the
  activating batch, which also moves the cursor to table 5; so its last batch holds the seven
  rows and the cursor.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate import transfer
from migrate.store import bbgdb
from migrate.store.fjall import open_keyspace
from migrate.store.fjall.session import append_batch
from migrate.store.keyspace_store import create_keyspace

pytestmark = pytest.mark.engine("fjall")

NS = bytes([1]) * 32
TARGET = bytes([9]) * 32
NONCE = bytes([8]) * 32
C2, C3 = bytes([2]) * 32, bytes([3]) * 32

PRIOR = bytes.fromhex("cc4569b548aa8ebae2924c157b150b735f8ba1a89c014f929186768d8366f7b8")
MANIFEST = bytes.fromhex("a897b5151d9c2fc0ecfc9982c67a6ad163a33db76c9f4fdaa98d5fb7e1d73ba1")
BBG_SOURCE_LAST = bytes.fromhex(
    "69be2a4ab60df2e9136805ab720af5de8779104ae3dbd83b57b14a770010cd68"
)
BBG_TARGET_LAST = bytes.fromhex(
    "b1b8568fa204078f2e5af1d83c932c22213de83c142ffb10b7737841363125b7"
)
CURSOR_DONE = bytes.fromhex("0500" "0700000000000000" "2c02000000000000")  # table 5, 7 rows, 556 B

Keys = dict[tuple[str, bytes], bytes]

APPLICATION: Keys = {
    ("application_content", C2): bytes([1, 2]),
    ("application_content", C3): bytes([1, 3]),
    ("application_heads", NS): bytes.fromhex("0100000000000000") + C3,
    ("application_history", NS + bytes(8)): C2,
    ("application_history", NS + (1).to_bytes(8, "big")): C3,
    ("application_requests", NS + C2): C2 + bytes(8) + C2,
    ("application_requests", NS + C3): C3 + bytes.fromhex("0100000000000000") + C3,
}
SOURCE: Keys = {
    **APPLICATION,
    ("bbg_import_v1", b"application-export"): TARGET + NONCE + PRIOR + MANIFEST,
    ("bbg_import_v1", b"status"): b"export-v1",
    ("bbg_storage_v1", b"last_transaction"): BBG_SOURCE_LAST,
}
TARGET_KEYS: Keys = {
    **APPLICATION,
    ("bbg_import_v1", b"s" + NS): MANIFEST,
    ("bbg_import_v1", b"status"): b"neuron-v1",
    ("bbg_import_v1", b"t" + MANIFEST): CURSOR_DONE,
    ("bbg_import_v1", b"u" + MANIFEST): TARGET,
    ("bbg_storage_v1", b"last_transaction"): BBG_TARGET_LAST,
}
LAST = ("bbg_storage_v1", b"last_transaction")


def _publish(n: int, index: int) -> Keys:
    """The rows bbg's ``apply_checked`` puts for the test's ``publish(store, [1; 32], n)``."""
    commit = bytes([n]) * 32
    head = index.to_bytes(8, "little") + commit
    return {
        ("application_content", commit): bytes([1, n]),
        ("application_history", NS + index.to_bytes(8, "big")): commit,
        ("application_heads", NS): head,
        ("application_requests", NS + commit): commit + head,
    }


def _commit(store: Path, changes: Keys) -> None:
    """One bbg transaction: the changes and bbg's marker rows, one fsynced batch."""
    full = bbgdb.with_markers(dict(changes))
    append_batch(store, [(t, k, v) for (t, k), v in sorted(full.items())])


def every_key(store: Path) -> Keys:
    """Every key of every partition of the keyspace at ``store``."""
    ks = open_keyspace(store)
    try:
        return {(part, k): v for part in ks.partitions() for k, v in ks.scan(part)}
    finally:
        ks.close()


def test_a_complete_transfer_ends_in_bbgs_key_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    create_keyspace(source)
    _commit(source, _publish(2, 0))
    _commit(source, _publish(3, 1))
    assert every_key(source)[LAST] == PRIOR  # bbg's change id of publish 3: the seal's prior

    monkeypatch.setattr(transfer.tgt, "target_id", lambda store_id: TARGET)
    job = transfer.TransferJob(source=source, store=target, nonce=NONCE.hex(),
                               content_check="none")  # fmt: skip
    outcome = transfer.run(job)
    assert outcome.status == "complete" and outcome.manifest == MANIFEST.hex()
    assert outcome.receipt is not None and outcome.receipt["prior"] == PRIOR.hex()

    got_source, got_target = every_key(source), every_key(target)
    # Every key but last_transaction: exactly bbg's, in both stores.
    assert {k: v for k, v in got_source.items() if k != LAST} == {
        k: v for k, v in SOURCE.items() if k != LAST
    }
    assert {k: v for k, v in got_target.items() if k != LAST} == {
        k: v for k, v in TARGET_KEYS.items() if k != LAST
    }
    assert set(got_source) == set(SOURCE) and set(got_target) == set(TARGET_KEYS)

    # last_transaction: the two values that differ, and exactly why (module docstring).
    seal = SOURCE[("bbg_import_v1", b"application-export")]
    ours_source = bbgdb.change_id({("bbg_import_v1", b"application-export"): seal,
                                   ("bbg_import_v1", b"status"): b"export-v1"})  # fmt: skip
    bbg_source = bbgdb.change_id(
        {("bbg_import_v1", b"r" + NS + i.to_bytes(8, "big")): None for i in (0, 1)}
    )
    assert bbg_source == BBG_SOURCE_LAST  # bbg: validate_links removing its two 'r' keys
    assert got_source[LAST] == ours_source != BBG_SOURCE_LAST  # ours: the seal's batch
    cursor = {("bbg_import_v1", b"t" + MANIFEST): CURSOR_DONE}
    assert bbgdb.change_id(cursor) == BBG_TARGET_LAST  # bbg: the cursor moved to table 5 alone
    ours_target = bbgdb.change_id({**APPLICATION, **cursor})
    assert got_target[LAST] == ours_target != BBG_TARGET_LAST  # ours: rows + cursor, one batch

    # An exact rerun changes no key of either store and returns the same receipt.
    again = transfer.run(job)
    assert again.receipt == outcome.receipt
    assert (every_key(source), every_key(target)) == (got_source, got_target)


def test_an_activation_in_segments_ends_in_the_same_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beyond bbg's batch bounds the activation publishes the rows as segments under the
    import's guard (bounds lowered here so seven rows exceed them): the same keys, no guard
    left, and bbg's last batch is the activation's own (the status put and the cursor)."""
    from migrate.pipeline import stages
    from migrate.store import guard

    source, target = tmp_path / "source", tmp_path / "target"
    create_keyspace(source)
    _commit(source, _publish(2, 0))
    _commit(source, _publish(3, 1))
    monkeypatch.setattr(transfer.tgt, "target_id", lambda store_id: TARGET)
    monkeypatch.setattr(stages, "BATCH_ROWS", 3)
    job = transfer.TransferJob(source=source, store=target, nonce=NONCE.hex(),
                               content_check="none")  # fmt: skip
    outcome = transfer.run(job)
    assert outcome.status == "complete" and outcome.manifest == MANIFEST.hex()
    got = every_key(target)
    assert {k: v for k, v in got.items() if k != LAST} == {
        k: v for k, v in TARGET_KEYS.items() if k != LAST
    }
    last_batch = {("bbg_import_v1", b"status"): b"neuron-v1",
                  ("bbg_import_v1", b"t" + MANIFEST): CURSOR_DONE}  # fmt: skip
    assert got[LAST] == bbgdb.change_id(last_batch)
    assert not guard.path_of(target).exists()
    assert transfer.run(job).receipt == outcome.receipt


def test_a_refused_source_the_cyber_code_wrote_is_left_as_it_was(tmp_path: Path) -> None:
    """The scenario's source checked as cybergraph's content (the default): ``[n; 32]`` is not
    the id of ``[1, n]``, so the transfer is refused before sealing (the toolkit's order, see
    docs/operations.md "Differences from the cyber code"): no key of the source changes, no
    target is left, and the records the transfer made beside the source are removed again."""
    from bbg_core.errors import ValidationFailed
    from migrate.store.engine import records_dir

    source, target = tmp_path / "source", tmp_path / "target"
    create_keyspace(source)
    _commit(source, _publish(2, 0))
    _commit(source, _publish(3, 1))
    before = every_key(source)
    with pytest.raises(ValidationFailed, match="nothing was written"):
        transfer.run(transfer.TransferJob(source=source, store=target, nonce=NONCE.hex()))
    assert every_key(source) == before
    assert not records_dir(source).exists()
    assert not target.exists() and not records_dir(target).exists()
