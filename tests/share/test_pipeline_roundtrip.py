"""The round trips on a real migration: the bundled demo cell.redb run through the pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from migrate.demo import unpack_demo
from migrate.share import doctor
from tests.share.conftest import run_cli
from tests.share.helpers import check_event_lines

ORIGINS = (
    "01d0f39cc19e6bfe39f546efb98941a9b5b5fdf403d12dba1c46811b419b6d28",
    "4deeafc562dc4287bfcd052abbfe7f0d89dc005c98b5258b83005a824aa797cc",
    "e9b101900b3d37c1bea4945b366ef74c491a481f17cceca85297bcafc6c76dec",
)


def _digest(store: Path) -> str:
    done = run_cli("inspect", str(store), "--json")
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["archive_digest_sha256"])


@pytest.mark.parametrize("mapped", [False, True], ids=["plain", "mapped"])
def test_migrated_demo_round_trips(tmp_path: Path, mapped: bool) -> None:
    source = unpack_demo(tmp_path)
    store = tmp_path / "bbg"
    extra: list[str] = []
    if mapped:
        extra = ["--subject", "ab" * 32]
        for n, origin in enumerate(ORIGINS, 1):
            extra += ["--map", f"{origin}={n:02x}" + f"{n:02x}" * 15]
    done = run_cli("run", str(source), "--store", str(store), "--json", *extra)
    assert done.returncode == 0, done.stderr
    report = doctor(store)
    assert report["healthy"]
    assert len(report["fences"]) == (3 if mapped else 0)

    events = run_cli("--store", str(store), "tail").stdout
    docs = check_event_lines(events)
    assert sum(d["kind"] == "commit" for d in docs) == 50 + (2 if mapped else 0)
    assert run_cli("--store", str(tmp_path / "a"), "apply", "-", stdin=events).returncode == 0
    assert run_cli("--store", str(tmp_path / "a"), "tail").stdout == events
    assert _digest(tmp_path / "a") == _digest(store)

    snap = run_cli("--store", str(store), "snapshot").stdout
    assert run_cli("--store", str(tmp_path / "r"), "restore", "-", stdin=snap).returncode == 0
    again = run_cli("--store", str(tmp_path / "r"), "snapshot").stdout
    assert snap.splitlines()[1:-1] == again.splitlines()[1:-1]
    assert _digest(tmp_path / "r") == _digest(store)
    restored = doctor(tmp_path / "r")
    assert restored["healthy"]
    assert restored["fences"] == report["fences"]
    assert restored["generation"] == report["generation"]
