"""The import guard beside a BBG database: ``<store>.bbg-importing``.

bbg's converter creates this file (mode 0600, fsynced with its directory) before the
destination exists and removes it only when the destination is complete; bbg's open refuses
a store whose guard exists (:mod:`migrate.store.bbgdb`).  This toolkit uses the same file
the same way, and writes into it what bbg leaves empty: which tool and which import own it
and for what (``{"tool": "bbg-migrate", "import_id": ..., "op": ...}``; ``op`` is ``convert``
for a new database built aside, ``activate`` for rows going into an existing one as
segments).  That is the proof a rerun needs before it may finish -- or, for a conversion
only, remove -- what an interrupted run left: a guard that is not this import's own for the
same operation -- bbg's (empty), another import's, unreadable -- is never taken over, and
the destination it guards is left alone.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

from bbg_core.errors import StoreRefused
from bbg_core.files import fsync_dir
from migrate.store import bbgdb

TOOL = "bbg-migrate"
CONVERT = "convert"
ACTIVATE = "activate"
_MAX = 1 << 16


def path_of(directory: Path) -> Path:
    """Where the guard of ``directory`` lives (bbg's rule)."""
    return bbgdb.guard_path(directory)


def read(directory: Path) -> dict[str, Any] | None:
    """The guard's owner: None when there is no guard; ``{"tool": None}`` for a guard this
    toolkit did not write (bbg's own is empty)."""
    guard = path_of(directory)
    try:
        with open(guard, "rb") as fh:
            raw = fh.read(_MAX + 1)
    except FileNotFoundError:
        return None
    except OSError:
        return {"tool": None}
    try:
        doc = json.loads(raw.decode("utf-8")) if raw else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        doc = None
    if not isinstance(doc, dict) or doc.get("tool") != TOOL:
        return {"tool": None}
    return doc


def owned_by(directory: Path, import_id: str, op: str | None = None) -> bool:
    """True when ``directory``'s guard is this import's own (for ``op``, when given)."""
    doc = read(directory)
    return (doc is not None and doc.get("import_id") == import_id
            and (op is None or doc.get("op") == op))  # fmt: skip


def refusal(directory: Path, doc: dict[str, Any]) -> StoreRefused:
    """The error for a guard that is not ours to take over."""
    guard = path_of(directory)
    if doc.get("tool") == TOOL:
        who = f"an interrupted bbg-migrate import ({doc.get('import_id')})"
        what = "rerun that import (the same command) to finish it"
    else:
        who = "an interrupted conversion by bbg or another tool"
        what = ("finish or undo that conversion first; if you know it was abandoned and the "
                "destination holds nothing you need, move both aside")
    return StoreRefused(
        f"{directory}: {guard} exists: {who} owns this destination; {what}",
        path=str(directory), guard=str(guard),
    )  # fmt: skip


def take(directory: Path, import_id: str, op: str, plan: dict[str, Any] | None = None) -> bool:
    """Create the guard for ``import_id``'s ``op`` (durable before anything else happens);
    True if it was already this import's own for ``op`` (a rerun), StoreRefused if it is
    anyone else's.  ``plan``: what the rerun of an interrupted ``op`` must know (it is kept
    in the guard as ``plan``: an activation in segments without staging records its counts
    there, :mod:`migrate.pipeline.existing`)."""
    guard = path_of(directory)
    doc: dict[str, Any] = {"tool": TOOL, "import_id": import_id, "op": op}
    if plan is not None:
        doc["plan"] = plan
    body = json.dumps(doc, sort_keys=True).encode()
    try:
        fd = os.open(guard, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, bbgdb.LOCK_MODE)
    except FileExistsError:
        doc = read(directory) or {"tool": None}
        if doc.get("tool") == TOOL and doc.get("import_id") == import_id and doc.get("op") == op:
            return True
        raise refusal(directory, doc) from None
    try:
        os.write(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(guard.parent)
    return False


def drop(directory: Path, import_id: str) -> None:
    """Remove this import's guard (the destination is complete), then fsync the parent."""
    if not owned_by(directory, import_id):
        return
    guard = path_of(directory)
    try:
        os.unlink(guard)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise
    fsync_dir(guard.parent)
