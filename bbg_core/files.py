"""File helpers shared by every layer."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from bbg_core.errors import SourceError

CHUNK = 1 << 20


def cannot_read(path: str | os.PathLike[str], exc: OSError) -> SourceError:
    """The one error for an input that cannot be read (missing, no permission, a directory
    where a file is expected, ...): exit 1, one line naming the path and the OS's reason."""
    reason = exc.strerror or type(exc).__name__
    return SourceError(f"{os.fspath(path)}: cannot read: {reason}", path=os.fspath(path),
                       reason=reason)  # fmt: skip


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
        raise cannot_read(path, exc) from exc
    return h.hexdigest()
