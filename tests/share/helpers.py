"""Small helpers shared by the share tests."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import schemas
from migrate.share import tail
from migrate.share.common import canonical
from migrate.store import archive_digest, open_store


def tail_bytes(store: Path, since: int = 0) -> bytes:
    """What ``bbg-migrate tail`` prints for ``store``."""
    return b"".join(canonical(e) for e in tail(store, since))


LOCAL = ("tx", "at", "imported_at")


def logical(data: bytes) -> list[dict[str, Any]]:
    """The events of a stream without their local ledger stamps (``tx``, ``at``,
    ``imported_at``): what two stores holding the same changes agree on."""
    return [
        {k: v for k, v in json.loads(line).items() if k not in LOCAL}
        for line in data.split(b"\n")[:-1]
    ]


def check_event_lines(data: bytes) -> list[dict[str, Any]]:
    """Every line is canonical event/1 (sorted, no spaces, LF, schema); returns the docs."""
    assert data == b"" or data.endswith(b"\n")
    docs = []
    for line in data.split(b"\n")[:-1]:
        doc = json.loads(line)
        schemas.validate(doc, "event")
        assert canonical(doc) == line + b"\n"
        docs.append(doc)
    return docs


def digest(store: Path) -> str:
    """The archive digest of a store's five tables."""
    with open_store(store, maintenance=True) as st, st.snapshot() as tables:
        return archive_digest(tables).hex()


def stream(data: bytes) -> io.BytesIO:
    return io.BytesIO(data)
