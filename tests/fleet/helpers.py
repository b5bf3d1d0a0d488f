"""Build fleets of legacy stores from the bundled fixtures, and judge fleet results.

The valid cell stores are content-identical copies of ``fixtures/legacy`` cells unpacked
under different paths (fine for fleet mechanics: each job is still its own source, lock,
store and receipt).  The invalid jobs each fail with their own code: rule violations (3),
a file that is no source at all (1), an empty log whose kind cannot be told (2).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bbg_core.errors import error_document
from migrate import api
from tests.conftest import FIXTURES

LEGACY = FIXTURES / "legacy"
ROOT = Path(__file__).resolve().parents[2]
VALID_CELLS = ("cell-small", "cell-empty", "cell-nondurable-tail")
INVALID_CELLS = ("cell-invalid-history-gap", "cell-invalid-unknown-codec", "cell-invalid-multimap")


@dataclass
class Fleet:
    root: Path
    manifest: Path
    valid: int
    invalid: int


def _unpack(name: str, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(gzip.decompress((LEGACY / f"{name}.redb.gz").read_bytes()))


def build_fleet(root: Path, cells: int, *, page_rows: int = 16, invalid: bool = True) -> Fleet:
    """``cells`` valid cell stores under nodes/, invalid ones under bad/, and legacy logs
    (a Signal log and a TextArchive into one shared store, plus invalid ones)."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(cells):
        _unpack(VALID_CELLS[i % len(VALID_CELLS)], root / "nodes" / f"n{i:03d}" / "cell.redb")
    logs = root / "logs"
    logs.mkdir()
    shutil.copy(LEGACY / "signals-small.log", logs / "signals-small.log")
    shutil.copy(LEGACY / "texts-small.jsonl", logs / "texts-small.jsonl")
    n_invalid = 0
    jobs = [
        f"[defaults]\nbounds = {{ page_rows = {page_rows} }}\n",
        '[[jobs]]\nsource = "nodes/*/cell.redb"\nstore = "bbg/{node}"\n',
        '[[jobs]]\nsource = "logs/*-small.*"\nstore = "bbg/legacy"\n',
    ]
    if invalid:
        for name in INVALID_CELLS:
            _unpack(name, root / "bad" / name / "cell.redb")
        junk = root / "bad" / "junk" / "cell.redb"
        junk.parent.mkdir(parents=True)
        junk.write_bytes(hashlib.sha256(b"junk").digest() * 100)
        shutil.copy(LEGACY / "signals-unknown-sigil.log", logs / "signals-unknown-sigil.log")
        shutil.copy(LEGACY / "texts-invalid-utf8.jsonl", logs / "texts-invalid-utf8.jsonl")
        (logs / "empty.log").write_bytes(b"")
        jobs += [
            '[[jobs]]\nsource = "bad/*/cell.redb"\nstore = "bbg/bad-{node}"\n',
            '[[jobs]]\nsource = "logs/*-invalid-*.jsonl"\nstore = "bbg/legacy"\n',
            '[[jobs]]\nsource = "logs/*-unknown-*.log"\nstore = "bbg/legacy-bad"\n',
            '[[jobs]]\nsource = "logs/empty.log"\nstore = "bbg/empty"\nname = "empty log"\n',
        ]
        n_invalid = len(INVALID_CELLS) + 1 + 3
    manifest = root / "fleet.toml"
    manifest.write_text("\n".join(jobs))
    return Fleet(root, manifest, cells + 2, n_invalid)


def single_run(source: Path, work: Path, **job: Any) -> dict[str, Any]:
    """What one ordinary ``run`` of ``source`` into a fresh store gives: exit code and the
    receipt or the error document (the reference a fleet job must match)."""
    store = work / hashlib.sha256(str(source).encode()).hexdigest()[:16]
    try:
        outcome = api.run(api.Job(source=source, store=store, **job))
    except Exception as exc:  # the reference failure
        return {"exit_code": error_document(exc)["exit_code"], "error": error_document(exc)}
    finally:
        shutil.rmtree(store, ignore_errors=True)
    return {"exit_code": 0, "receipt": outcome.receipt}


def fleet_cli(*args: str, cwd: Path | None = None, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrate", "fleet", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        **kw,
    )


def start_fleet(*args: str) -> subprocess.Popen[bytes]:
    """``fleet ARGS`` in its own process group (so the whole group can be SIGKILLed)."""
    return subprocess.Popen(
        [sys.executable, "-m", "migrate", "fleet", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def kill_group_after(
    proc: subprocess.Popen[bytes], report_dir: Path, results: int, extra: float
) -> bool:
    """SIGKILL the whole process group once ``results`` job results exist (plus ``extra``
    seconds); False when the run ended first."""
    jobs = report_dir / "jobs"
    while proc.poll() is None:
        if jobs.is_dir() and sum(1 for p in jobs.glob("*.json")) >= results:
            time.sleep(extra)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            return proc.returncode == -signal.SIGKILL
        time.sleep(0.02)
    return False


def no_process_left(pgid: int) -> bool:
    """True when no process of group ``pgid`` is alive any more."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def strip_timing(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """A report's jobs without what legitimately differs between runs (times)."""
    return [
        {k: v for k, v in j.items() if k not in ("started", "finished", "seconds")}
        for j in doc["jobs"]
    ]


def check_against_single_runs(doc: dict[str, Any], work: Path) -> tuple[int, int]:
    """Every job of a fleet report equals a single ``run`` of its source: the same receipt
    (byte for byte as JSON) or the same exit code and error code.  Returns (ok, failed)."""
    work.mkdir(parents=True, exist_ok=True)
    ok = failed = 0
    for job in doc["jobs"]:
        kind = "signal-log" if job["name"] == "empty log" else None
        ref = single_run(Path(job["source"]), work, bounds=api.Bounds(page_rows=16))
        if kind is not None:
            # The empty log has no kind by content: a single run says so (exit 2) too.
            assert ref["exit_code"] == 2
        assert job["exit_code"] == ref["exit_code"], (job["source"], job.get("error"))
        if ref["exit_code"] == 0:
            assert json.dumps(job["receipt"], sort_keys=True) == json.dumps(
                ref["receipt"], sort_keys=True
            ), job["source"]
            ok += 1
        else:
            assert job["error"]["code"] == ref["error"]["code"], job["source"]
            failed += 1
    return ok, failed
