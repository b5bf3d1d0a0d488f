"""Helpers for tests that race real processes: start the CLI, and wait for what a process holds."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.conftest import ROOT

WAIT = 60.0  # generous: a wait that never ends fails the test, it does not time it


def cli_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "200"}


def start(*args: str, stdin: int | None = None) -> subprocess.Popen[bytes]:
    """Start ``bbg-migrate ARGS`` in a child process."""
    return subprocess.Popen(
        [sys.executable, "-m", "migrate", *args],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        cwd=ROOT,
    )


def wait_until(what: str, ready: Callable[[], bool]) -> None:
    """Poll until ``ready()``; fail (naming ``what``) if it never happens."""
    deadline = time.monotonic() + WAIT
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.02)


def holds_open(pid: int, under: Path) -> bool:
    """True when process ``pid`` has a file or directory at or under ``under`` open."""
    fd_dir = Path(f"/proc/{pid}/fd")
    prefix = str(under.resolve())
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return False
    for name in names:
        try:
            target = os.readlink(fd_dir / name)
        except OSError:
            continue
        if target == prefix or target.startswith(prefix + os.sep):
            return True
    return False
