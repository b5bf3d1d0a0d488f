"""``plan`` is a gate: it predicts ``run`` -- the same exit code and the
same message where ``run`` fails, and in ``action`` what ``run`` would do -- and writes nothing,
whatever the store's path; a step on other inputs than the sealed import names the input
that differs."""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import schemas
from tests.fs import fs_state, readonly_mount, untouched_but_scratch
from tests.pipeline.helpers import LEGACY, cell_fixtures, cli, expected, unpack
from tests.support.cell_records import write_store
from tests.support.subject import activate_subject

SMALL = LEGACY / "cell-small.redb.gz"
NAMESPACES = sorted(expected(SMALL)["namespaces"])
MAPS = [arg for i, ns in enumerate(NAMESPACES) for arg in ("--map", f"{ns}={i + 1:064x}")]
SUBJECT = ["--subject", "ab" * 32]


def _nonce_conflict(tmp: Path) -> tuple[list[str], None]:
    a = unpack(SMALL, tmp / "a")
    b = unpack(next(p for p in cell_fixtures() if p.name == "cell-empty.redb.gz"), tmp / "b")
    assert cli("run", str(a), "--store", str(tmp / "bbg"), "--nonce", "abcd").returncode == 0
    return [str(b), "--store", str(tmp / "bbg"), "--nonce", "abcd"], None


def _fenced(tmp: Path) -> tuple[list[str], None]:
    """A namespace of the source fenced in the destination (a mapped run fences nothing, so
    the fence is put as neuron's import would leave one)."""
    from fences.namespaces import fence
    from migrate.store import open_store

    src = unpack(SMALL, tmp / "src")
    store = str(tmp / "bbg")
    assert cli("run", str(src), "--store", store).returncode == 0
    with open_store(Path(store)) as handle, handle.transaction() as tx:
        fence(tx, bytes.fromhex(NAMESPACES[0]), import_id="neuron", reason="imported by neuron",
              subject=b"\xab" * 32, manifest=b"\x6b" * 32)  # fmt: skip
    return [str(src), "--store", store, "--nonce", "0f"], None


def _subject_missing(tmp: Path) -> tuple[list[str], None]:
    src = tmp / "cell.redb"
    names = write_store(src)
    maps = [arg for i, ns in enumerate(names) for arg in ("--map", f"{ns}={i + 1:064x}")]
    return [str(src), "--store", str(tmp / "bbg"), *SUBJECT, *maps], None


def _blob_origins(tmp: Path) -> tuple[list[str], None]:
    src = unpack(SMALL, tmp / "src")
    store = tmp / "bbg"
    activate_subject(store)
    return [str(src), "--store", str(store), *SUBJECT, *MAPS], None


def _invalid(tmp: Path) -> tuple[list[str], None]:
    bad = LEGACY / "cell-invalid-history-gap.redb.gz"
    return [str(unpack(bad, tmp / "src")), "--store", str(tmp / "bbg")], None


def _bounds(tmp: Path) -> tuple[list[str], None]:
    return [str(unpack(SMALL, tmp / "src")), "--store", str(tmp / "bbg"), "--max-rows", "9"], None


def _sealed_with_mapping(tmp: Path) -> tuple[list[str], None]:
    src = tmp / "cell.redb"
    names = write_store(src)
    maps = [arg for i, ns in enumerate(names) for arg in ("--map", f"{ns}={i + 1:064x}")]
    store = tmp / "bbg"
    activate_subject(store)
    assert cli("seal", str(src), "--store", str(store), *SUBJECT, *maps).returncode == 0
    return [str(src), "--store", str(store)], None


def _locked(tmp: Path) -> tuple[list[str], int]:
    src = unpack(SMALL, tmp / "src")
    fd = os.open(src, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # what the old binary holds while it runs
    return [str(src), "--store", str(tmp / "bbg")], fd


SCENARIOS: dict[str, tuple[Callable[[Path], tuple[list[str], int | None]], int]] = {
    "nonce-conflict": (_nonce_conflict, 4),
    "fenced": (_fenced, 4),
    "seal-mapping-differs": (_sealed_with_mapping, 4),
    "source-locked": (_locked, 11),
    "invalid-source": (_invalid, 3),
    "over-a-bound": (_bounds, 3),
    # neuron's import: the subject must have a head (neuron.rs inspect: Missing), and each
    # origin must read as cell records (legacy.rs inspect; data.rs Reader::pair on a Blob:
    # InvalidData) -- both refused before anything is written.
    "subject-not-activated": (_subject_missing, 3),
    "origin-not-cell-record": (_blob_origins, 3),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_plan_fails_exactly_as_run_would(name: str, tmp_path: Path) -> None:
    prepare, code = SCENARIOS[name]
    args, held = prepare(tmp_path)
    try:
        before = fs_state(tmp_path)
        planned = cli("plan", *args, "--json")
        assert fs_state(tmp_path) == before
        ran = cli("run", *args, "--json")
    finally:
        if held is not None:
            os.close(held)
    assert (planned.returncode, ran.returncode) == (code, code), (planned.stderr, ran.stderr)
    # --json: the same error document from both (schemas/error.schema.json)
    assert planned.stdout == ran.stdout
    schemas.validate(json.loads(planned.stdout), "error")
    assert json.loads(planned.stdout)["exit_code"] == code
    assert planned.stderr == ran.stderr
    assert planned.stderr.startswith("error: ")


def test_plan_on_a_readonly_store_fails_as_run_would(tmp_path: Path) -> None:
    src = unpack(SMALL, tmp_path / "src")
    store = tmp_path / "bbg"
    assert cli("seal", str(src), "--store", str(store)).returncode == 0
    mnt = tmp_path / "media"
    mnt.mkdir()
    before = fs_state(tmp_path)
    results = {
        verb: readonly_mount(
            store,
            mnt,
            [sys.executable, "-m", "migrate", verb, str(src), "--store", str(mnt)],
            env={"PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )
        for verb in ("plan", "run")
    }
    assert {v: r.returncode for v, r in results.items()} == {"plan": 1, "run": 1}
    assert results["plan"].stderr == results["run"].stderr
    assert b"the store cannot be written" in results["plan"].stderr
    assert b"read-only file system" in results["plan"].stderr
    assert fs_state(tmp_path) == before


def _action(src: Path, store: Path) -> str:
    res = cli("plan", str(src), "--store", str(store), "--json")
    assert res.returncode == 0, res.stderr
    action: str = json.loads(res.stdout)["action"]
    return action


@pytest.mark.slow
def test_plan_action_says_what_run_would_do(tmp_path: Path) -> None:
    src = unpack(SMALL, tmp_path / "src")
    store = tmp_path / "bbg"
    assert _action(src, store).startswith("migrate: seal, stage")
    staged = cli("stage", str(src), "--store", str(store), "--pages", "1", "--page-rows", "64")
    assert staged.returncode == 5, staged.stderr  # rows left to stage
    assert _action(src, store).startswith("resume: stage the rows after the first 64,")
    assert cli("stage", str(src), "--store", str(store)).returncode == 0
    assert _action(src, store).startswith("validate and activate")
    assert cli("validate", str(src), "--store", str(store)).returncode == 0
    assert _action(src, store).startswith("activate")
    assert cli("activate", str(src), "--store", str(store)).returncode == 0
    assert _action(src, store).startswith("none (already activated")


@pytest.mark.parametrize("name", ["x?y", "a#b", "p%41q", "q?mode=rwc"])
@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
def test_plan_writes_nothing_whatever_the_store_path(
    tmp_path: Path, name: str, existing: bool
) -> None:
    src = unpack(SMALL, tmp_path / "src")
    work = tmp_path / "cwd"
    work.mkdir()
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    store = work / name
    if existing:
        assert cli("run", str(src), "--store", str(store), "--nonce", "01").returncode == 0
    before = fs_state(src.parent, work, tmp)
    res = cli("plan", str(src), "--store", str(store), "--json", cwd=work, env={"TMPDIR": str(tmp)})
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["destination"]["exists"] is existing
    untouched_but_scratch(before, fs_state(src.parent, work, tmp), tmp)


@pytest.mark.slow
def test_stage_on_other_options_names_the_input_that_differs(tmp_path: Path) -> None:
    src = tmp_path / "cell.redb"
    names = write_store(src)
    maps = [arg for i, ns in enumerate(names) for arg in ("--map", f"{ns}={i + 1:064x}")]
    store = str(tmp_path / "bbg")
    activate_subject(Path(store))
    mapping = tmp_path / "m.json"
    mapping.write_text(
        json.dumps(
            {
                "subject": "ab" * 32,
                "origins": [
                    {"origin": ns, "install_nonce": f"{i + 1:064x}"} for i, ns in enumerate(names)
                ],
            }
        )
    )
    assert cli("seal", str(src), "--store", store, "--mapping", str(mapping)).returncode == 0
    for verb in ("stage", "validate", "activate", "run"):
        res = cli(verb, str(src), "--store", store)
        assert res.returncode == 4, (verb, res.stderr)
        err = " ".join(res.stderr.split())
        assert "derived from the source's SHA-256: no --nonce was given" in err
        assert f"mapping: sealed with --subject {'ab' * 32} --map {names[0]}={1:064x}" in err
        assert "this call has no mapping" in err
        assert f"give --subject {'ab' * 32} --map {names[0]}={1:064x}" in err
        assert "use a new nonce" not in err
    res = cli("stage", str(src), "--store", store, *SUBJECT, *maps)
    assert res.returncode == 0, res.stderr


def test_stage_on_another_kind_names_the_kind(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    store = str(tmp_path / "bbg")
    assert cli("seal", str(empty), "--store", store, "--kind", "signal-log").returncode == 0
    res = cli("stage", str(empty), "--store", store, "--kind", "text-archive")
    assert res.returncode == 4, res.stderr
    err = " ".join(res.stderr.split())
    assert "kind: sealed as signal-log, this call reads a text-archive" in err
    assert "give --kind signal-log" in err


@pytest.mark.slow
def test_stage_on_another_content_check_names_it(tmp_path: Path) -> None:
    src = unpack(SMALL, tmp_path / "src")
    store = str(tmp_path / "bbg")
    assert cli("seal", str(src), "--store", store, "--content-check", "none").returncode == 0
    res = cli("stage", str(src), "--store", store)
    assert res.returncode == 4, res.stderr
    err = " ".join(res.stderr.split())
    assert "content check: sealed with --content-check none, this call uses codec" in err
    assert "give --content-check none" in err
    assert cli("stage", str(src), "--store", store, "--content-check", "none").returncode == 0
