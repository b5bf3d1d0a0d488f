"""Binding a ``tail --follow --output FILE`` to its store, so a resume never continues a file
that is not this store's stream.

Beside ``FILE`` the follower keeps ``FILE.store.json`` (written atomically when the follower
starts, or first resumes a file written before this check existed): the store's path and its
id (``bbg_storage_v1.store_id`` of the records; null for a Fjall store without records of
ours).  On a resume it checks, before appending anything:

* the store id is the one recorded (a file of another store is refused, naming both ids);
* the file's last event is this store's: the store, read now, has the same event line (the
  same id and the same SHA-256 of the canonical line) at the same place -- the same ``tx``
  and position in it.  A store put back from a backup that has lost (or rewritten) that
  transaction is refused, naming the file's event and what the store holds there.

The refusal is a UsageError (exit 2) and nothing is appended: name a new output file, or
the store the file came from.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from bbg_core.errors import UsageError
from bbg_core.files import atomic_write
from migrate.share.common import canonical
from migrate.share.tailing import tail
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
    atomic_write(sidecar(path), canonical(doc))


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


def _last_line(path: Path) -> bytes:
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        pos, tail_bytes = size, b""
        while pos > 0:
            step = min(65536, pos)
            fh.seek(pos - step)
            tail_bytes = fh.read(step) + tail_bytes
            pos -= step
            cut = tail_bytes.rstrip(b"\n").rfind(b"\n")
            if cut >= 0:
                return tail_bytes[cut + 1 :]
        return tail_bytes


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
    since, count = point
    mine = _last_line(path).rstrip(b"\n") + b"\n"
    theirs = _store_event_at(store_dir, since + 1, count)
    if theirs != mine:
        raise UsageError(
            f"{path}: its last event, {_describe(mine)} at tx {since + 1} #{count}, is not "
            f"what {store_dir} holds there ({_describe(theirs)}): the store was replaced (a "
            "backup put in its place?) or the file is another store's; nothing was appended. "
            "Name a new --output file", path=str(path), store=str(store_dir),
        )  # fmt: skip
    if recorded is None:
        _record(store_dir, path, ident)
