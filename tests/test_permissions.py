"""The one permission policy: private by default (docs/operations.md, "Permissions").

Every directory bbg-migrate creates is 0700 and every file 0600, whatever the operator's
umask: stores on both engines and the records directory beside a Fjall store, receipts,
follow files and their binding, backups, restored stores, fleet reports and the HTML page.
A file that already exists keeps its mode: a rerun never changes an operator's choice.
"""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT

LEGACY = FIXTURES / "legacy"
#: The most permissive umask in common use: without the policy, files would be 0664.
LOOSE = 0o002


def _cli(*args: str, cwd: Path, stdout: Path | None = None) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("BBG_MIGRATE_ENGINE", None)
    out = subprocess.PIPE if stdout is None else stdout.open("wb")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "migrate", *args],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.PIPE,
            umask=LOOSE,
            timeout=300,
        )
    finally:
        if stdout is not None:
            out.close()  # type: ignore[union-attr]
    assert proc.returncode == 0, (args, proc.stderr.decode())


def _holds(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open (the follower opens its output to append,
    after checking the binding)."""
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.readlink(fd) == str(path) for fd in fds.iterdir())
    except OSError:
        return False


def _follow(store: str, output: str, cwd: Path) -> None:
    """``tail --follow --output OUTPUT`` until it has written every event, then Ctrl-C."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    env.pop("BBG_MIGRATE_ENGINE", None)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "migrate",
            "--store",
            store,
            "tail",
            "--follow",
            "--poll",
            "0.1",
            "--output",
            output,
        ],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        umask=LOOSE,
    )
    try:
        deadline = time.monotonic() + 120
        target, binding = cwd / output, cwd / f"{output}.store.json"
        while not (binding.exists() and _holds(proc.pid, target) and target.stat().st_size > 0):
            assert proc.poll() is None, proc.stderr.read().decode()  # type: ignore[union-attr]
            assert time.monotonic() < deadline
            time.sleep(0.1)
        time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()


def _modes(root: Path, skip: set[Path]) -> dict[str, str]:
    """``relative path -> octal mode`` of every directory and file under ``root`` that is
    not in ``skip`` (the test's own inputs and the shell's redirections)."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if path in skip or path.is_symlink():
                continue
            found[str(path.relative_to(root))] = oct(stat.S_IMODE(path.lstat().st_mode))
    return found


@pytest.mark.slow  # ~5 s: every verb under two umasks; a_file_that_exists_keeps_its_mode stays
def test_everything_created_is_private_whatever_the_umask(tmp_path: Path) -> None:
    cell = tmp_path / "cell.redb"
    cell.write_bytes(gzip.decompress((LEGACY / "cell-small.redb.gz").read_bytes()))
    fleet = tmp_path / "fleet"
    (fleet / "nodes" / "a").mkdir(parents=True)
    shutil.copy(cell, fleet / "nodes" / "a" / "cell.redb")
    (fleet / "fleet.toml").write_text(
        '[[jobs]]\nsource = "nodes/*/cell.redb"\nstore = "bbg/{node}"\n', encoding="utf-8"
    )
    snap = tmp_path / "snap.ndjson"
    snap_fjall = tmp_path / "snap-fjall.ndjson"
    inputs = {p for p in tmp_path.rglob("*")} | {snap, snap_fjall}

    _cli(
        "--engine",
        "sqlite",
        "run",
        "cell.redb",
        "--store",
        "lite",
        "--receipt",
        "r1.json",
        cwd=tmp_path,
    )
    _cli("run", "cell.redb", "--store", "real", "--receipt", "r2.json", cwd=tmp_path)
    for store in ("lite", "real"):
        _follow(store, f"{store}.ndjson", tmp_path)
        _cli("--store", store, "backup", f"{store}-backup", cwd=tmp_path)
    _cli("--store", "lite", "snapshot", cwd=tmp_path, stdout=snap)
    _cli("--store", "real", "snapshot", cwd=tmp_path, stdout=snap_fjall)
    _cli("--engine", "sqlite", "--store", "lite-restored", "restore", str(snap), cwd=tmp_path)
    _cli("--store", "real-restored", "restore", str(snap_fjall), cwd=tmp_path)
    _cli("fleet", "run", "fleet.toml", "--workers", "1", "--report-dir", "reports", cwd=fleet)
    _cli("fleet", "report", "reports", "--html", "fleet.html", cwd=fleet)

    created = _modes(tmp_path, inputs)
    for must in (
        "lite",
        "real",
        "real.bbg-migrate",
        "r1.json",
        "r2.json",
        "lite.ndjson",
        "real.ndjson",
        "lite-backup",
        "real-backup",
        "lite-restored",
        "real-restored",
        "fleet/bbg/a",
        "fleet/reports",
        "fleet/fleet.html",
    ):
        assert must in created, must
    wrong = {
        path: mode
        for path, mode in created.items()
        if mode != ("0o700" if (tmp_path / path).is_dir() else "0o600")
    }
    assert wrong == {}


def test_a_file_that_exists_keeps_its_mode(tmp_path: Path) -> None:
    cell = tmp_path / "cell.redb"
    cell.write_bytes(gzip.decompress((LEGACY / "cell-small.redb.gz").read_bytes()))
    _cli("--engine", "sqlite", "run", "cell.redb", "--store", "lite", cwd=tmp_path)
    out = tmp_path / "audit.ndjson"
    out.write_bytes(b"")
    out.chmod(0o644)
    _follow("lite", "audit.ndjson", tmp_path)
    _follow("lite", "audit.ndjson", tmp_path)
    assert out.stat().st_size > 0
    assert oct(stat.S_IMODE(out.stat().st_mode)) == "0o644"
    binding = tmp_path / "audit.ndjson.store.json"
    assert oct(stat.S_IMODE(binding.stat().st_mode)) == "0o600"
    binding.chmod(0o640)  # the operator's choice survives the binding's rewrite
    _follow("lite", "audit.ndjson", tmp_path)
    assert oct(stat.S_IMODE(binding.stat().st_mode)) == "0o640"
