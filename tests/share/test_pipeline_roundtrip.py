"""The round trips on a real migration: the bundled demo cell.redb run through the pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from migrate.demo import unpack_demo
from migrate.share import doctor
from tests.share.conftest import run_cli
from tests.share.helpers import check_event_lines, logical


def _receipt(store: Path, import_id: str) -> object:
    from migrate.store import imports, open_store

    with open_store(store) as st:
        return imports.receipt_of(st, import_id)

ORIGINS = (
    "01d0f39cc19e6bfe39f546efb98941a9b5b5fdf403d12dba1c46811b419b6d28",
    "4deeafc562dc4287bfcd052abbfe7f0d89dc005c98b5258b83005a824aa797cc",
    "e9b101900b3d37c1bea4945b366ef74c491a481f17cceca85297bcafc6c76dec",
)


def _digest(store: Path) -> str:
    done = run_cli("inspect", str(store), "--json")
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["archive_digest_sha256"])


@pytest.mark.slow
@pytest.mark.parametrize("mapped", [False], ids=["plain"])
def test_migrated_demo_round_trips(tmp_path: Path, mapped: bool) -> None:
    # A mapped run no longer fences or promotes (neuron's import does, under the subject's
    # authority), and the demo's namespaces are Blob histories neuron refuses as origins:
    # fences and neuron-v1 travelling over tail/apply are covered by tests/share
    # (test_apply_fjall, test_tail_fjall), which put them directly.
    source = unpack_demo(tmp_path)
    store = tmp_path / "bbg"
    extra: list[str] = []
    if mapped:
        extra = ["--subject", "ab" * 32]
        for n, origin in enumerate(ORIGINS, 1):
            extra += ["--map", f"{origin}=" + f"{n:02x}" * 32]
    done = run_cli("run", str(source), "--store", str(store), "--json", *extra)
    assert done.returncode == 0, done.stderr
    report = doctor(store)
    assert report["healthy"]
    assert len(report["fences"]) == (3 if mapped else 0)

    events = run_cli("--store", str(store), "tail").stdout
    docs = check_event_lines(events)
    assert sum(d["kind"] == "commit" for d in docs) == 50 + (2 if mapped else 0)
    kinds = [d["kind"] for d in docs]
    # what the store means travels too: the fences, the generation, the import record
    assert kinds.count("fence") == (3 if mapped else 0)
    assert kinds.count("generation") == 1 and kinds.count("import") == 1
    assert run_cli("--store", str(tmp_path / "a"), "apply", "-", stdin=events).returncode == 0
    assert logical(run_cli("--store", str(tmp_path / "a"), "tail").stdout) == logical(events)
    assert _digest(tmp_path / "a") == _digest(store)
    copied = doctor(tmp_path / "a")
    assert copied["healthy"]
    # a neuron-v1 store copied by tail/apply is neuron-v1, with the same fences
    assert copied["generation"] == report["generation"]
    assert copied["generation"]["generation"] == ("neuron-v1" if mapped else "original")
    assert copied["fences"] == report["fences"]
    receipt = [d for d in docs if d["kind"] == "import"][0]["asserted"][0]
    assert _receipt(tmp_path / "a", receipt["import_id"]) == receipt["receipt"]

    snap = run_cli("--store", str(store), "snapshot").stdout
    assert run_cli("--store", str(tmp_path / "r"), "restore", "-", stdin=snap).returncode == 0
    again = run_cli("--store", str(tmp_path / "r"), "snapshot").stdout
    # byte-identical but for the creation-time line (line 2)
    assert snap.splitlines()[:1] + snap.splitlines()[2:] == (
        again.splitlines()[:1] + again.splitlines()[2:])  # fmt: skip
    assert run_cli("--store", str(tmp_path / "r"), "tail").stdout == events  # the same ledger
    assert _digest(tmp_path / "r") == _digest(store)
    restored = doctor(tmp_path / "r")
    assert restored["healthy"]
    assert restored["fences"] == report["fences"]
    assert restored["generation"] == report["generation"]


@pytest.mark.slow
@pytest.mark.engine("fjall")
@pytest.mark.parametrize("source_engine", ["sqlite", "fjall"])
def test_migrated_demo_tail_apply_round_trips_into_fjall(tmp_path: Path,
                                                        source_engine: str) -> None:
    """tail -> apply into a new store on the Fjall engine, from a demo migrated on either
    engine: the same five tables, a healthy store, the generation (and, from SQLite, where
    the stream carries it, the import record) travel; its own tail means the same."""
    source = unpack_demo(tmp_path)
    store = tmp_path / "bbg"
    done = run_cli("--engine", source_engine, "run", str(source), "--store", str(store), "--json")
    assert done.returncode == 0, done.stderr
    events = run_cli("--store", str(store), "tail").stdout
    docs = check_event_lines(events)
    copy = tmp_path / "a"
    applied = run_cli("--engine", "fjall", "--store", str(copy), "apply", "-", stdin=events)
    assert applied.returncode == 0, applied.stderr
    assert (copy / "bbg.lock").exists()  # a keyspace: the real BBG database
    assert _digest(copy) == _digest(store)
    copied = doctor(copy)
    assert copied["healthy"], copied
    assert copied["generation"] == doctor(store)["generation"]
    for imported in [d for d in docs if d["kind"] == "import"]:
        fact = imported["asserted"][0]
        assert _receipt(copy, fact["import_id"]) == fact["receipt"]
    again = run_cli("--store", str(copy), "tail").stdout
    strip = {"import"}  # a Fjall store's tail carries no import events (records, not rows)
    assert [d for d in logical(again) if d["kind"] not in strip] == [
        d for d in logical(events) if d["kind"] not in strip]  # fmt: skip
