"""Binding a ``tail --follow --output FILE`` to its store, so a resume never continues a file
that is not this store's stream.

Beside ``FILE`` the follower keeps ``FILE.store.json`` (written atomically when the follower
starts, or first resumes a file written before this check existed): the store's path and its
id (``bbg_storage_v1.store_id`` of the records; null for a Fjall store without records of
ours).  On a resume it checks, before appending anything:

* the store id is the one recorded (a file of another store is refused, naming both ids);
* the file's last event is this store's: the store, read now, has the same event line (the
  same id and the same SHA-256 of the canonical line) at the same place -- the same ``tx``
  and position in it (on a Fjall store the last event that is not a generation event: a
  status rewritten later moves its generation event to the newer batch).  A store put back
  from a backup that has lost (or rewritten) that transaction is refused, naming the file's
  event and what the store holds there.

The refusal is a UsageError (exit 2) and nothing is appended: name a new output file, or
the store the file came from.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bbg_core.errors import UsageError
from bbg_core.files import atomic_write
from migrate.share.common import canonical
from migrate.share.tailing import tail
from migrate.store.engine import FJALL, engine_of
from migrate.store.readonly import open_readonly, store_identity

SUFFIX = ".store.json"


def sidecar(path: Path) -> Path:
    """Where the binding of the event file ``path`` is kept."""
    return path.with_name(path.name + SUFFIX)


def _identity(store_dir: Path) -> str | None:
    with open_readonly(store_dir) as handle:
        return store_identity(handle)


def _record(store_dir: Path, path: Path, ident: str | None) -> None:
    doc = {"kind": "bbg-follow-binding", "store": str(Path(store_dir).resolve()),
           "store_id": ident}  # fmt: skip
    try:
        atomic_write(sidecar(path), canonical(doc))
    except OSError as exc:
        raise UsageError(f"{sidecar(path)}: cannot write the follow binding beside the output "
                         f"file ({exc.strerror}); name an output file in a writable directory",
                         path=str(path)) from exc  # fmt: skip


def _recorded(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(sidecar(path).read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{sidecar(path)}: not a follow binding this tool wrote ({exc}); "
                         "move it away only if FILE is this store's", path=str(path)) from exc
    if not isinstance(doc, dict) or doc.get("kind") != "bbg-follow-binding":
        raise UsageError(f"{sidecar(path)}: not a follow binding this tool wrote",
                         path=str(path))  # fmt: skip
    return doc


def _lines_backwards(path: Path) -> Iterator[bytes]:
    """The complete lines of ``path``, last first (each with its LF)."""
    with open(path, "rb") as fh:
        pos, rest = fh.seek(0, 2), b""
        while pos > 0:
            step = min(65536, pos)
            fh.seek(pos - step)
            rest = fh.read(step) + rest
            pos -= step
            parts = rest.split(b"\n")
            rest = parts[0]
            for part in reversed(parts[1:]):
                if part:
                    yield part + b"\n"
        if rest:
            yield rest + b"\n"


def _anchor(path: Path, fjall: bool) -> tuple[int, int, bytes] | None:
    """``(tx, number in it, line)`` of the file's last event to check.  On a Fjall store a
    trailing generation event is passed over: it follows the status marker's newest write and
    leaves its batch when a later batch writes the status again (docs/event1.md)."""
    found: tuple[int, bytes] | None = None
    number = 0
    for line in _lines_backwards(path):
        doc = json.loads(line)
        if found is None:
            if fjall and doc.get("kind") == "generation":
                continue
            found = (int(doc["tx"]), line)
        elif int(doc["tx"]) != found[0]:
            break
        number += 1
    if found is None:
        return None
    # ``number`` counted the anchor and the lines of its tx before it
    return found[0], number, found[1]


def _store_event_at(store_dir: Path, tx: int, number: int) -> bytes | None:
    """The canonical line of event ``number`` (1-based) of transaction ``tx``, or None."""
    seen = 0
    for event in tail(store_dir, tx - 1):
        if int(event["tx"]) != tx:
            return None
        seen += 1
        if seen == number:
            return canonical(event)
    return None


def _describe(line: bytes | None) -> str:
    if line is None:
        return "no such event"
    try:
        ident = json.loads(line).get("event", "?")
    except ValueError:
        ident = "?"
    digest = hashlib.sha256(line.rstrip(b"\n")).hexdigest()
    return f"event {ident} (sha256 {digest[:16]}…)"


def check(store_dir: Path, path: Path, point: tuple[int, int] | None) -> None:
    """Refuse to continue ``path`` unless it is ``store_dir``'s stream (module docstring);
    then (re)write the binding.  ``point``: the file's resume point (None: it is empty)."""
    ident = _identity(store_dir)
    if point is None:
        _record(store_dir, path, ident)
        return
    recorded = _recorded(path)
    if recorded is not None and recorded.get("store_id") != ident:
        raise UsageError(
            f"{path}: holds the events of store {recorded.get('store_id')} "
            f"({recorded.get('store')}), not of {store_dir} (store {ident}); nothing was "
            "appended. Name a new --output file, or the store it came from",
            path=str(path), store=str(store_dir),
        )  # fmt: skip
    del point  # the resume point is the file's last line; the anchor may be before it
    anchor = _anchor(path, engine_of(Path(store_dir)) == FJALL)
    if anchor is None:  # only generation events of a Fjall store: nothing write-once to check
        return
    tx, count, mine = anchor
    theirs = _store_event_at(store_dir, tx, count)
    if theirs != mine:
        raise UsageError(
            f"{path}: its last event, {_describe(mine)} at tx {tx} #{count}, is not "
            f"what {store_dir} holds there ({_describe(theirs)}): the store was replaced (a "
            "backup put in its place?) or the file is another store's; nothing was appended. "
            "Name a new --output file", path=str(path), store=str(store_dir),
        )  # fmt: skip
    if recorded is None:
        _record(store_dir, path, ident)
