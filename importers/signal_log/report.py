"""Read-only report on a Signal log (the ``inspect`` stage), and content sniffing for ``detect``."""

from __future__ import annotations

import hashlib
import os
from typing import Any, Final

from bbg_core.errors import SignalLogError, SourceError
from hashing import hemera
from hashing.hemera import HasherFactory
from importers.signal_log.decode import PathLike, read_frames
from importers.signal_log.model import (
    DEFAULT_LIMITS,
    MARKER,
    MAX_LEB128_BYTES,
    RENDERER,
    SIGILS,
    SUFFIX_KINDS,
    Limits,
    Signal,
)

LEGACY_SOURCE_DOMAIN: Final = b"cybergraph/legacy-source/v1\x00"
"""Domain prefix of ``hemera_source_digest`` = hemera(domain ‖ whole file)."""

_CHUNK: Final = 1 << 20


def looks_like_signal_log(head: bytes) -> bool:
    """True if ``head`` (the first bytes of a file) starts like a Signal log frame.

    Content only, never the name.  An empty head is not claimed: a 0-byte file is a valid
    empty log but also a valid empty archive, so the caller must decide.
    """
    if not head or head[0] != MARKER:
        return False
    if len(head) > 1 and chr(head[1]) not in SIGILS:
        return False
    if len(head) > 2 and head[2] != RENDERER:
        return False
    length = head[3 : 3 + MAX_LEB128_BYTES]
    for i, byte in enumerate(length):
        if not byte & 0x80:
            return byte != 0 or i == 0  # minimal LEB128 only
    return len(length) < MAX_LEB128_BYTES  # cut by the head, or > 10 bytes


def file_digests(path: PathLike, hasher: HasherFactory | None = None) -> tuple[str, str]:
    """(SHA-256, hemera source digest) of the whole file at ``path``, in hex, streaming."""
    name = os.fspath(path)
    sha = hashlib.sha256()
    hem = (hasher or hemera.Hasher)()
    hem.update(LEGACY_SOURCE_DOMAIN)
    try:
        with open(name, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                sha.update(chunk)
                hem.update(chunk)
    except OSError as exc:
        raise SourceError(f"{name}: cannot read the signal log: {exc.strerror}", path=name) from exc
    return sha.hexdigest(), hem.digest().hex()


def inspect_signal_log(
    path: PathLike, *, limits: Limits = DEFAULT_LIMITS, hasher: HasherFactory | None = None
) -> dict[str, Any]:
    """The read-only report (schema ``signal-log-inspect``) of the log at ``path``.

    Counts cover the frames decoded before the first error (all of them for a valid log);
    ``errors`` holds at most that one error, since nothing after it can be framed.
    """
    name = os.fspath(path)
    per_sigil = dict.fromkeys(SIGILS, 0)
    suffixes = dict.fromkeys(SUFFIX_KINDS, 0)
    events = 0
    end = 0
    errors: list[dict[str, Any]] = []
    try:
        for frame in read_frames(name, limits=limits):
            events += 1
            end = frame.end
            per_sigil[frame.sigil] += 1
            if isinstance(frame.body, Signal):
                suffixes[frame.body.suffix] += 1
    except SignalLogError as exc:
        ctx = exc.context
        errors.append(
            {
                "code": ctx["code"],
                "offset": ctx["offset"],
                "frame_index": ctx["frame_index"],
                "frame_start": ctx["frame_start"],
                "message": exc.message,
            }
        )
    size = os.stat(name).st_size
    sha256, hemera_digest = file_digests(name, hasher)
    return {
        "kind": "signal-log",
        "path": name,
        "size_bytes": size,
        "valid": not errors,
        "event_count": events,
        "per_sigil": per_sigil,
        "signal_suffixes": suffixes,
        "errors": errors,
        "valid_prefix_events": events,
        "valid_prefix_end": end,
        "sha256": sha256,
        "hemera_source_digest": hemera_digest,
    }
