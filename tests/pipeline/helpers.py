"""Shared helpers of the pipeline tests: fixtures, CLI runs, tree hashes (the live digest
of a store, either engine, is :func:`tests.support.stores.live_digest`)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES, shared_fixtures
from tests.support.stores import EMPTY_DIGEST, dump, live_digest

LEGACY = FIXTURES / "legacy"


def cell_fixtures(pattern: str = "cell-*.redb.gz") -> list[Path]:
    """Local cell fixtures, plus the full shared set's extra files when available."""
    found = {p.name: p for p in sorted(LEGACY.glob(pattern))}
    shared = shared_fixtures()
    if shared is not None:
        for p in sorted((shared / "legacy").glob(pattern)):
            found.setdefault(p.name, p)
    return [found[k] for k in sorted(found)]


def expected(gz: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(
        gz.with_name(gz.name.replace(".redb.gz", ".expected.json")).read_text()
    )
    return doc


def unpack(gz: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / "cell.redb"
    path.write_bytes(gzip.decompress(gz.read_bytes()))
    return path


def cli(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    kill_at_commit: int | None = None,
    kill_at_file_op: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``bbg-migrate ARGS``; ``kill_at_commit=N`` SIGKILLs it at its N-th commit phase,
    ``kill_at_file_op=N`` before the N-th file operation of a source retirement."""
    full = {**os.environ, **(env or {})}
    entry = ["-m", "migrate"]
    if kill_at_file_op is not None:
        entry = ["-m", "tests.kill_runner", f"file-op:{kill_at_file_op}"]
    elif kill_at_commit is not None:
        entry = ["-m", "tests.kill_runner", str(kill_at_commit)]
    if kill_at_commit is not None or kill_at_file_op is not None:
        full["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(Path(__file__).resolve().parents[2]), full.get("PYTHONPATH")) if p
        )
    return subprocess.run(
        [sys.executable, *entry, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=full,
    )


def tree_state(*roots: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``roots`` -> (sha256, mtime_ns); directories as markers."""
    out: dict[str, tuple[str, int]] = {}
    for root in roots:
        if not root.exists():
            out[str(root)] = ("absent", 0)
            continue
        for dirpath, _dirnames, filenames in os.walk(root):
            out[dirpath] = ("dir", 0)
            for name in filenames:
                p = Path(dirpath) / name
                st = p.stat()
                out[str(p)] = (hashlib.sha256(p.read_bytes()).hexdigest(), st.st_mtime_ns)
    return out


def kill_at_every_commit(args: tuple[str, ...], tmp_path: Path, want: str, ref_stdout: str) -> int:
    """Run ``bbg-migrate ARGS`` once per commit point, SIGKILLed there; after each kill the
    live tables must be empty or complete (archive digest ``want``) and a rerun must print
    ``ref_stdout``.  Returns how many kill points there were."""
    killed = 0
    point = 0
    while True:
        point += 1
        store = tmp_path / f"s{point}"
        res = cli(*args, "--store", str(store), kill_at_commit=point)
        if res.returncode == 0:
            return killed  # past the last commit point
        assert res.returncode == -signal.SIGKILL, res.stderr
        killed += 1
        assert live_digest(store) in (None, EMPTY_DIGEST, want), f"half-advanced at point {point}"
        again = cli(*args, "--store", str(store))
        assert again.returncode == 0, again.stderr
        assert again.stdout == ref_stdout, f"receipt differs after a kill at point {point}"
        assert live_digest(store) == want


# -- a BBG database that holds history (the single pass into it: ``existing``) ------------------


#: ``prefilled_store``'s source when it is a generated cell.redb.
CELL = "cell.redb"


def prefilled_store(tmp_path: Path, source: str = CELL) -> tuple[Path, Path]:
    """A store holding another import (3 namespaces), and the source to import: a cell.redb
    (4 other namespaces), or the local legacy fixture named ``source``."""
    from migrate import pipeline
    from tests.pipeline_legacy.support import copy_fixture
    from tests.support.cell_store import generate

    generate(tmp_path / "a.redb", rows=300, namespaces=3, seed=1)
    store = tmp_path / "store"
    pipeline.run(pipeline.Job(source=tmp_path / "a.redb", store=store))
    if source != CELL:
        return store, copy_fixture(source, tmp_path / "src")
    generate(tmp_path / "b.redb", rows=900, namespaces=4, seed=2)
    return store, tmp_path / "b.redb"


def copy_store(store: Path, to: Path) -> Path:
    """A copy of ``store`` and of its records beside it, at ``to``."""
    shutil.copytree(store, to, symlinks=True)
    shutil.copytree(store.with_name(store.name + ".bbg-migrate"),
                    to.with_name(to.name + ".bbg-migrate"))  # fmt: skip
    return to


def keyspace_of(store: Path) -> dict[str, Any]:
    """Every key of the BBG database's keyspace, with its value."""
    return {k: v for k, v in dump(store).items() if k.startswith("fjall:")}


def records_of(store: Path) -> dict[str, Any]:
    """The records, without transaction numbers and times (the staged path makes more)."""
    d = dump(store)
    return {
        "imports": [r[:2] for r in d["bbg_import_v1_imports"]],
        "journal": sorted(r[:3] for r in d["bbg_import_v1_journal"]),
        "seals": d["bbg_import_v1_seals"], "receipts": d["bbg_import_v1_receipts"],
        "cursors": d["bbg_import_v1_cursors"], "nonces": d["bbg_import_v1_nonces"],
        "staged": d["bbg_import_v1_staged"], "pins": d["bbg_import_v1_staged_namespaces"],
    }  # fmt: skip


def segment_folders(parent: Path) -> list[str]:
    """The folders of segments written aside under ``parent`` (none once a run is over)."""
    return sorted(n for n in os.listdir(parent) if ".bbg-segments-" in n)


#: Keeps ``run`` on the staged path, whatever the destination: a bounded run (far more pages
#: than any test source has).
STAGED = ("--pages", str(10**9))


def run_in_segments(*args: str) -> subprocess.CompletedProcess[str]:
    """``bbg-migrate ARGS`` with activations of over 3 rows written as segments
    (``KILL_RUNNER_BATCH_ROWS``), so that a small source's activation takes the real
    database's bulk path, and the single pass into an existing store."""
    return cli(*args, kill_at_commit=0, env={"KILL_RUNNER_BATCH_ROWS": "3"})


def ledger_kinds(store: Path, iid: str) -> list[str]:
    """The kinds of the import's transactions in the ledger (the single pass: one)."""
    return [r[2] for r in dump(store)["bbg_ledger_v1"] if r[3] == iid]


def doctor_logical(store: Path) -> dict[str, Any]:
    """``doctor``'s report but for the keyspace's physical counts (blocks, segments, journal
    batches: the staged path's bulk publication flushes every partition's journal, bbg's
    markers too, the single pass only the five tables') and the records' transaction number
    (the staged path makes one a stage and a page); the store's path as ``STORE``."""
    from migrate.share.health import doctor

    report: dict[str, Any] = json.loads(json.dumps(doctor(store)).replace(str(store), "STORE"))
    del report["keyspace"]["checked"], report["store"]["last_transaction"]
    return report
