"""A mapped run ends in the state neuron's own operator path leaves (``neuron legacy-export
SOURCE DEST --target SUBJECT``): the origins staged in bbg's transfer form pinned to the
subject, written in the run's activating transaction.

Expected values are bbg's formulas (cyberia-to/bbg@36cc420b
``rs/src/storage/application/transfer.rs``), computed here from the run's inputs and the rows
the run left, not taken from the toolkit:

* manifest = hemera("bbg/application-transfer/1\\0" ‖ target ‖ key ‖ prior ‖ for each source
  head in namespace order: namespace ‖ index u64 LE ‖ commit) (L50-60); target = the subject,
  key = the run's nonce, prior = 32 zero bytes (no bbg ``last_transaction``: L49
  ``unwrap_or([0; 32])``);
* ``prepare_target`` (L186-224): status promoted to ``neuron-v1`` (L192-195),
  ``'s' ‖ namespace = manifest`` (L196-208), ``'u' ‖ manifest = target`` (L209);
* the cursor (L281-304) ``table u8 ‖ len(after) u8 ‖ rows u64 LE ‖ bytes u64 LE ‖ after``, at
  table 5 once every row was copied, rows and key+value bytes of the copied rows;
* ``apply_checked`` (bbg application.rs L204-207): a namespace with an ``'s'`` key → Fenced.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import schemas
from bbg_core.errors import Fenced
from hashing import hemera
from migrate.store import open_store
from migrate.store.codec import Head
from tests.pipeline.helpers import cli
from tests.support.cell_records import write_store
from tests.support.stores import FIVE, dump, engine_of, live_get, live_rows, status
from tests.support.subject import SUBJECT, activate_subject

MIGRATION = "bbg_import_v1"
NONCE = "77" * 32
BOTH = [
    pytest.param("fjall", marks=pytest.mark.engine("fjall")),
    pytest.param("sqlite", marks=pytest.mark.engine("sqlite")),
]


def _args(src: Path, store: Path, names: list[str], verb: str = "run",
          nonce: str = NONCE) -> list[str]:  # fmt: skip
    args = [verb, str(src), "--store", str(store), "--subject", SUBJECT, "--nonce", nonce,
            "--json"]  # fmt: skip
    for i, ns in enumerate(names):
        args += ["--map", f"{ns}={i:064x}"]
    return args


def _rows(store: Path) -> set[tuple[str, bytes, bytes]]:
    return {(t, k, v) for t in FIVE for k, v in live_rows(store, t)}


@pytest.mark.parametrize("engine", BOTH)
def test_a_mapped_run_stages_the_origins_in_bbgs_transfer_form(
    engine: str, tmp_path: Path
) -> None:
    src = tmp_path / "cell.redb"
    names = write_store(src, origins=2, commits=2)
    store = tmp_path / "bbg"
    activate_subject(store)
    assert engine_of(store) == engine
    before = _rows(store)
    plan = cli(*_args(src, store, names, "plan"))
    assert plan.returncode == 0, plan.stderr
    planned = json.loads(plan.stdout)
    schemas.validate(planned, "plan")
    assert planned["generation_after"] == "neuron-v1"
    res = cli(*_args(src, store, names))
    assert res.returncode == 0, res.stderr
    receipt = json.loads(res.stdout)
    schemas.validate(receipt, "receipt")

    # The manifest, from bbg's formula over the heads the run left (transfer.rs L50-60).
    h = hemera.Hasher()
    h.update(b"bbg/application-transfer/1\x00")
    h.update(bytes.fromhex(SUBJECT) + bytes.fromhex(NONCE) + bytes(32))
    for ns in sorted(names):
        head = live_get(store, "application_heads", bytes.fromhex(ns))
        assert head is not None and len(head) == 40  # index u64 LE ‖ commit
        h.update(bytes.fromhex(ns) + head)
    manifest = h.digest()
    # The cursor at table 5 over every source row copied (transfer.rs L281-304; bbg counts
    # a row already present in the target too), the source's rows being what a plain
    # conversion of it into an empty store holds.
    plain = tmp_path / "plain"
    assert cli("run", str(src), "--store", str(plain)).returncode == 0
    copied = _rows(plain)
    assert copied - before == _rows(store) - before  # the run copied these rows
    nbytes = sum(len(k) + len(v) for _, k, v in copied)
    cursor = bytes([5, 0]) + len(copied).to_bytes(8, "little") + nbytes.to_bytes(8, "little")

    transfer = receipt["neuron_import"]["transfer"]
    assert transfer == {
        "manifest": manifest.hex(),
        "target": SUBJECT,
        "nonce": NONCE,
        "prior": "00" * 32,
        "cursor": cursor.hex(),
        "origins": "pinned: bbg refuses writes to them (Fenced)",
    }
    assert planned["neuron_import"] == receipt["neuron_import"]
    assert receipt["generation"] == "neuron-v1" and status(store) == "neuron-v1"
    assert receipt["fences"] == [] and receipt["manifest"] is None  # no neuron fence/import
    if engine == "fjall":
        # bbg's own keys (prepare_target L192-220): the whole of bbg_import_v1.
        keys = dict(live_rows(store, MIGRATION))
        want = {b"s" + bytes.fromhex(ns): manifest for ns in names}
        want[b"status"] = b"neuron-v1"
        want[b"u" + manifest] = bytes.fromhex(SUBJECT)
        want[b"t" + manifest] = cursor
        assert keys == want
    # An exact rerun prints the same receipt.
    again = cli(*_args(src, store, names))
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == receipt
    # Every origin refuses writes (apply_checked: Fenced); the subject still takes them.
    with open_store(store) as st:
        for ns_hex in names:
            ns = bytes.fromhex(ns_hex)
            head = st.head(ns)
            assert head is not None
            with pytest.raises(Fenced):
                st.commit(ns, b"\x09" * 32, head, Head(head.index + 1, head.commit), {}, {},
                          b"\x08" * 32)  # fmt: skip
        subject = bytes.fromhex(SUBJECT)
        head = st.head(subject)
        assert head is not None
        nxt = Head(head.index + 1, head.commit)
        assert st.commit(subject, b"\x09" * 32, head, nxt, {}, {}, b"\x08" * 32) == nxt


@pytest.mark.parametrize("engine", BOTH)
def test_a_refused_mapped_run_writes_nothing(engine: str, tmp_path: Path) -> None:
    """A subject that is not activated (exit 3), or a nonce that cannot be the transfer's
    32-byte key (exit 2): refused before anything is written."""
    src = tmp_path / "cell.redb"
    names = write_store(src)
    other = tmp_path / "other"
    activate_subject(other, "cd" * 32)
    before = dump(other)
    res = cli(*_args(src, other, names))
    assert res.returncode == 3 and f"subject {SUBJECT} not activated" in res.stderr
    assert dump(other) == before and status(other) != "neuron-v1"
    store = tmp_path / "bbg"
    activate_subject(store)
    before = dump(store)
    for verb in ("plan", "run"):
        res = cli(*_args(src, store, names, verb, nonce="77"))
        assert res.returncode == 2, (verb, res.stderr)
        assert "must be 32 bytes" in res.stderr
        assert dump(store) == before
