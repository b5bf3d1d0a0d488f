"""A mapped run (``--subject``/``--map``: the origins converted beside the activated subject,
staged in bbg's transfer form pinned to it) into the BBG database that holds the subject
takes the single pass (:mod:`migrate.pipeline.existing`): the result is the staged path's --
the receipt byte for byte (its ``neuron_import``), every key of the keyspace (the transfer's
``'s'``/``'u'``/``'t'`` keys, the ``neuron-v1`` status), the records, ``doctor`` --; an exact
rerun returns the same receipt; what the admission refuses (an origin neuron's legacy reader
refuses, a subject that is not there) is refused as the staged path refuses it, the store
byte for byte as it was.

Activations over 3 rows go in as segments (``KILL_RUNNER_BATCH_ROWS``), so that these small
sources take the bulk path on the staged path too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bbg_core.errors import OriginNotCellRecord, SubjectNotActivated
from migrate import pipeline
from migrate.job.mapping import parse_cli
from migrate.pipeline import existing, stages
from migrate.store import guard
from tests.pipeline.helpers import (
    STAGED,
    copy_store,
    doctor_logical,
    keyspace_of,
    ledger_kinds,
    records_of,
    run_in_segments,
    segment_folders,
    tree_state,
)
from tests.pipeline_legacy.support import copy_fixture
from tests.support.cell_records import write_store
from tests.support.subject import SUBJECT, activate_subject

pytestmark = pytest.mark.engine("fjall")

NONCE = "77" * 32


def _mapped(src: Path, store: Path, names: list[str], *extra: str) -> list[str]:
    args = ["run", str(src), "--store", str(store), "--subject", SUBJECT, "--nonce", NONCE,
            "--json", *extra]  # fmt: skip
    for i, ns in enumerate(names):
        args += ["--map", f"{ns}={i:064x}"]
    return args


def _named(records: object, store: Path) -> str:
    """``records`` with the store's path as ``STORE`` (a receipt names it)."""
    return repr(records).replace(str(store), "STORE")


def _setup(tmp_path: Path, **kw: object) -> tuple[Path, Path, list[str]]:
    src = tmp_path / "cell.redb"
    names = write_store(src, origins=3, commits=3, **kw)  # type: ignore[arg-type]
    store = tmp_path / "bbg"
    activate_subject(store)
    return store, src, names


def test_equal_to_the_staged_path(tmp_path: Path) -> None:
    store, src, names = _setup(tmp_path)
    staged = copy_store(store, tmp_path / "staged")
    one = run_in_segments(*_mapped(src, store, names))
    two = run_in_segments(*_mapped(src, staged, names, *STAGED))
    assert one.returncode == 0, one.stderr
    assert two.returncode == 0, two.stderr
    # The receipt, byte for byte but for the store's path (in the command that completes
    # the import: ``complete_with``).
    assert one.stdout == two.stdout.replace(str(staged), str(store))
    receipt = json.loads(one.stdout)
    assert receipt["neuron_import"]["state"] == "prepared, validated, inert"
    iid = receipt["import_id"]
    assert ledger_kinds(store, iid) == ["activate"]  # the single pass
    assert len(ledger_kinds(staged, iid)) > 1
    assert keyspace_of(store) == keyspace_of(staged)
    assert _named(records_of(store), store) == _named(records_of(staged), staged)
    assert doctor_logical(store) == doctor_logical(staged)
    assert doctor_logical(store)["healthy"] is True
    assert not guard.path_of(store).exists() and segment_folders(tmp_path) == []
    # An exact rerun returns the same receipt and changes nothing.
    state = tree_state(store), records_of(store)
    again = run_in_segments(*_mapped(src, store, names))
    assert again.returncode == 0 and again.stdout == one.stdout
    assert (tree_state(store), records_of(store)) == state


@pytest.mark.parametrize("refused", ["origin", "log", "subject"])
def test_admission_refusals_leave_the_store_byte_identical(
    refused: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An origin neuron's legacy reader refuses (a commit claiming a wrong index; any origin
    of a converted log), or a subject with no head here: the single pass reads the source,
    the admission refuses, the staged path says so with its own error (the same message and
    exit code as a staged run), and nothing of the store changed."""
    store, src, names = _setup(tmp_path, break_at=(1, 2) if refused == "origin" else None)
    if refused == "log":
        src = copy_fixture("signals-small.log", tmp_path / "src")
        scratch = tmp_path / "scratch"
        probe = run_in_segments("run", str(src), "--store", str(scratch), "--json")
        names = [json.loads(probe.stdout)["legacy"]["namespace"]]
    args = _mapped(src, store, names)
    if refused == "subject":
        args[args.index(SUBJECT)] = "cd" * 32
    both = (store, store.with_name(store.name + ".bbg-migrate"))
    before = tree_state(*both)
    res = run_in_segments(*args)
    assert res.returncode == 3, res.stderr
    assert tree_state(*both) == before
    staged = run_in_segments(*args, *STAGED)
    assert (staged.returncode, staged.stdout, staged.stderr) == (3, res.stdout, res.stderr)
    assert tree_state(*both) == before
    assert not guard.path_of(store).exists() and segment_folders(tmp_path) == []
    # In process: the single pass was made (the source read once, aside), then left to the
    # staged path's refusal.
    made: list[str] = []
    real = existing.fresh.source_pass
    monkeypatch.setattr(existing.fresh, "source_pass",
                        lambda *a, **k: made.append("x") or real(*a, **k))  # fmt: skip
    monkeypatch.setattr(stages, "BATCH_ROWS", 3)
    maps = [args[i + 1] for i, a in enumerate(args) if a == "--map"]
    mapping = parse_cli(args[args.index("--subject") + 1], maps, None)
    with pytest.raises(SubjectNotActivated if refused == "subject" else OriginNotCellRecord):
        pipeline.run(pipeline.Job(src, store, mapping=mapping, nonce=NONCE))
    assert made == ["x"]
    assert tree_state(*both) == before
