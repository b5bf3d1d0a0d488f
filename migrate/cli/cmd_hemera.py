"""``bbg-migrate hemera [FILE...|-]``: hemera digests printed like ``sha256sum``."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from bbg_core.errors import SourceError
from importers import hemera
from migrate.cli import app
from migrate.cli._render import err


def _line(digest: bytes, name: str) -> bytes:
    """``<hex>  <name>``; like sha256sum, a name with \\ or a newline is escaped and flagged."""
    raw = os.fsencode(name)  # bytes, so names that are not UTF-8 print unchanged
    if any(c in raw for c in b"\\\n\r"):
        raw = raw.replace(b"\\", b"\\\\").replace(b"\n", b"\\n").replace(b"\r", b"\\r")
        return b"\\" + digest.hex().encode() + b"  " + raw + b"\n"
    return digest.hex().encode() + b"  " + raw + b"\n"


@app.command("hemera")
def hemera_cmd(
    files: Annotated[
        list[str] | None,
        typer.Argument(metavar="FILE", help="Files to hash; '-' or no file reads standard input."),
    ] = None,
) -> None:
    """Print the hemera hash of each input as `<hex>  <name>`, like sha256sum (streaming)."""
    names = files or ["-"]
    unreadable = 0
    for name in names:
        try:
            if name == "-":
                digest = hemera.hash_stream(sys.stdin.buffer)
            else:
                digest = hemera.hash_file(name)
        except SourceError as exc:  # report it and go on with the other files, as sha256sum
            err.print(f"error: {exc.message}", markup=False, soft_wrap=True)
            unreadable += 1
            continue
        sys.stdout.buffer.write(_line(digest, name))
        sys.stdout.buffer.flush()
    if unreadable:
        raise SourceError(f"{unreadable} of {len(names)} inputs could not be read")
