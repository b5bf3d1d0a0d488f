"""``imports`` lists every import of a store; ``discard`` gives up one in progress and refuses
a published one by name; ``doctor`` and the source-changed refusal name the exact ``discard``
command."""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

import schemas
from tests.pipeline.helpers import LEGACY, cli

LOG = LEGACY / "signals-small.log"
ARCHIVE = LEGACY / "texts-small.jsonl"
ONE_PAGE = ("--pages", "1", "--page-rows", "2", "--json")


def _imports(store: Path) -> dict[str, Any]:
    done = cli("--store", str(store), "imports", "--json")
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    schemas.validate(doc, "imports")
    return doc


def _two_imports(tmp_path: Path) -> tuple[Path, str, str]:
    """A store holding one published import (the log) and one in progress (the archive)."""
    store = tmp_path / "store with space"
    ran = cli("run", str(LOG), "--store", str(store), "--json")
    assert ran.returncode == 0, ran.stderr
    active = json.loads(ran.stdout)["import_id"]
    staged = cli("stage", str(ARCHIVE), "--store", str(store), *ONE_PAGE)
    assert staged.returncode == 5, staged.stderr  # not finished: more pages to stage
    report = json.loads(staged.stdout)
    assert report["status"] == "staging"
    return store, active, report["import_id"]


def test_imports_lists_state_stage_rows_source_and_receipt(tmp_path: Path) -> None:
    store, active, staging = _two_imports(tmp_path)
    doc = _imports(store)
    by_id = {imp["import_id"]: imp for imp in doc["imports"]}
    assert list(by_id) == [active, staging]  # creation order
    pub, wip = by_id[active], by_id[staging]
    assert (pub["state"], pub["stage"], pub["kind"]) == ("active", "activated", "migration")
    assert pub["receipt"]["import_id"] == active and pub["discard_command"] is None
    assert pub["source"]["kind"] == "signal-log" and pub["rows_staged"] == pub["rows_total"]
    assert (wip["state"], wip["stage"], wip["receipt"]) == ("staging", "sealed", None)
    assert 0 < wip["rows_staged"] < wip["rows_total"]
    assert wip["source"]["sha256"] == hashlib.sha256(ARCHIVE.read_bytes()).hexdigest()
    assert wip["discard_command"] == (
        f"bbg-migrate --store {shlex.quote(str(store))} discard {staging}"
    )
    human = cli("--store", str(store), "imports")
    assert human.returncode == 0 and human.stdout == ""
    assert active in human.stderr and staging in human.stderr
    assert wip["discard_command"] in human.stderr


@pytest.mark.slow
def test_the_named_discard_command_gives_the_import_up(tmp_path: Path) -> None:
    store, active, staging = _two_imports(tmp_path)
    command = _imports(store)["imports"][1]["discard_command"]
    argv = shlex.split(command)
    assert argv[0] == "bbg-migrate"
    done = cli(*argv[1:])
    assert done.returncode == 0, done.stderr
    states = {i["import_id"]: (i["state"], i["stage"]) for i in _imports(store)["imports"]}
    assert states == {active: ("active", "activated"), staging: ("discarded", "discarded")}


@pytest.mark.slow
def test_discard_refuses_a_published_import_by_name(tmp_path: Path) -> None:
    store, active, _ = _two_imports(tmp_path)
    before = _imports(store)
    done = cli("--store", str(store), "discard", active)
    assert done.returncode == 4
    assert done.stderr.startswith(f"error: {store}: import {active} is active (published): it "
                                  "cannot be discarded"), done.stderr
    assert "nothing was changed" in done.stderr and "imports" in done.stderr
    assert _imports(store) == before
    unknown = cli("--store", str(store), "discard", "0" * 64)
    assert unknown.returncode == 1 and f"no import {'0' * 64}" in unknown.stderr


@pytest.mark.engine("sqlite")  # doctor: a share command, SQLite stores only in this version
@pytest.mark.slow
def test_doctor_names_the_discard_command(tmp_path: Path) -> None:
    store, _, staging = _two_imports(tmp_path)
    command = f"bbg-migrate --store {shlex.quote(str(store))} discard {staging}"
    doctor = cli("--store", str(store), "doctor", "--json")
    warnings = json.loads(doctor.stdout)["warnings"]
    [wip] = [w for w in warnings if w["code"] == "import-in-progress"]
    assert wip["detail"].endswith(command), wip


@pytest.mark.slow
def test_the_source_changed_refusal_names_the_discard_command(tmp_path: Path) -> None:
    changed = tmp_path / "archive.jsonl"
    shutil.copy(ARCHIVE, changed)
    staged = cli("stage", str(changed), "--store", str(tmp_path / "s2"), *ONE_PAGE)
    iid = json.loads(staged.stdout)["import_id"]
    with changed.open("ab") as fh:
        fh.write(ARCHIVE.read_bytes().splitlines(keepends=True)[0])
    refused = cli("run", str(changed), "--store", str(tmp_path / "s2"))
    assert refused.returncode == 3
    command = f"bbg-migrate --store {tmp_path / 's2'} discard {iid}"
    assert command in refused.stderr.replace("\n", "")
