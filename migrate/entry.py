"""The ``bbg-migrate`` console entry point (``python -m migrate`` too).

Kept tiny on purpose: importing the CLI (typer, rich, every command, the C extensions) takes
most of a second, and a Ctrl-C in that time must end like a Ctrl-C at any other moment --
exit 130 and one line on stderr saying what stopped and that a rerun resumes -- never a
traceback or a death by signal.  Once the outcome is decided, further Ctrl-Cs are ignored
while it is reported.
"""

from __future__ import annotations

import signal
import sys
from typing import NoReturn

INTERRUPTED = 130
STARTING = "interrupted (Ctrl-C) while starting: nothing was done; run the same command again"


def _leave(code: int, line: str | None = None) -> NoReturn:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # decided: a second Ctrl-C changes nothing
    if line is not None:
        try:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
    sys.exit(code)


def main(argv: list[str] | None = None) -> NoReturn:
    """Run ``bbg-migrate`` with ``argv`` (default: the command line) and exit with its code."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args == ["--version"]:  # the fast path: no typer, rich, SQLite or jsonschema
        try:
            from migrate.probe.versions import version_text

            sys.stdout.write(version_text() + "\n")
            sys.stdout.flush()
        except KeyboardInterrupt:
            _leave(INTERRUPTED, STARTING)
        _leave(0)
    try:
        from migrate.cli import run
    except KeyboardInterrupt:
        _leave(INTERRUPTED, STARTING)
    try:
        code = run(argv)
    except KeyboardInterrupt:  # between the CLI's own reporting and here
        _leave(INTERRUPTED, "interrupted (Ctrl-C) while finishing; run the same command again")
    _leave(code)
