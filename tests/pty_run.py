"""Run the CLI on a pseudo-terminal of a given size (progress bars, narrow terminals)."""

from __future__ import annotations

import errno
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

from tests.conftest import ROOT


def run_on_pty(
    *args: str, columns: int = 40, rows: int = 24, stdout_to: Path | None = None,
    env: dict[str, str] | None = None, cwd: Path | None = None,
) -> tuple[int, str]:  # fmt: skip
    """Run ``bbg-migrate ARGS`` with stderr (and stdout, unless ``stdout_to``) on a pty of
    ``columns`` x ``rows``; returns (exit code, everything the terminal received)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    full = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", **(env or {})}
    for name in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE"):
        if env is None or name not in env:
            full.pop(name, None)
    out = open(stdout_to, "wb") if stdout_to is not None else None
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "migrate", *args], stdin=subprocess.DEVNULL,
            stdout=out if out is not None else slave, stderr=slave, env=full, cwd=cwd or ROOT,
        )  # fmt: skip
    finally:
        os.close(slave)
        if out is not None:
            out.close()
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError as exc:  # EIO: the child closed the terminal
            if exc.errno != errno.EIO:
                raise
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    code = proc.wait()
    return code, b"".join(chunks).decode("utf-8", "replace")
