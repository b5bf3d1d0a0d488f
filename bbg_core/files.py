"""File helpers shared by every layer."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from bbg_core.errors import SourceError

CHUNK = 1 << 20


def file_sha256(path: Path, progress: Callable[[int], None] | None = None) -> str:
    """SHA-256 of a file, streamed in 1 MiB chunks."""
    h = hashlib.sha256()
    done = 0
    try:
        with path.open("rb") as fh:
            while chunk := fh.read(CHUNK):
                h.update(chunk)
                done += len(chunk)
                if progress is not None:
                    progress(done)
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror}", path=str(path)) from exc
    return h.hexdigest()
