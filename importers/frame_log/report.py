"""Read-only report on a bbg CLI frame log (the ``inspect`` stage)."""

from __future__ import annotations

import os
from typing import Any

from bbg_core.errors import SignalLogError
from hashing.hemera import HasherFactory
from importers.frame_log.decode import read_frames
from importers.frame_log.model import DEFAULT_LIMITS, SIGILS, CliSignal, Limits
from importers.frame_log.real import STOPPED, Finding, read_real
from importers.signal_log import file_digests
from importers.signal_log.framing import PathLike


def _strict(name: str, limits: Limits) -> dict[str, Any]:
    """What ``--strict`` (today's refusals) says: valid, its first error, the valid prefix."""
    events = end = 0
    error: dict[str, Any] | None = None
    try:
        for frame in read_frames(name, limits=limits):
            events, end = events + 1, frame.end
    except SignalLogError as exc:
        ctx = exc.context
        error = {k: ctx[k] for k in ("code", "offset", "frame_index", "frame_start")}
    return {"valid": error is None, "error": error, "valid_prefix_events": events,
            "valid_prefix_end": end}  # fmt: skip


def inspect_frame_log(
    path: PathLike, *, limits: Limits = DEFAULT_LIMITS, hasher: HasherFactory | None = None
) -> dict[str, Any]:
    """The read-only report (schema ``bbg-frame-log-inspect``) of the log at ``path``.

    Counts cover the events bbg's own reader returns (:mod:`importers.frame_log.real`), which
    the import takes by default; ``lenient_frames`` lists every frame it skipped, dropped or
    read leniently and where it stopped; ``strict`` is the verdict of ``--strict`` (today's
    refusals).  ``errors`` holds at most one error: one of our own bounds exceeded.
    ``blocks`` counts finalize frames, ``last_height`` is the height of the last signal.
    """
    from hashing import hemera

    name = os.fspath(path)
    per_sigil = dict.fromkeys(SIGILS, 0)
    links = moves = events = 0
    last_height: int | None = None
    errors: list[dict[str, Any]] = []
    findings: list[Finding] = []
    factory = hasher or hemera.Hasher

    def hash_fn(data: bytes) -> bytes:
        h = factory()
        h.update(data)
        return h.digest()

    try:
        for frame in read_real(name, findings, limits=limits, hash_fn=hash_fn):
            events += 1
            per_sigil[frame.sigil] += 1
            if isinstance(frame.body, CliSignal):
                links += len(frame.body.links)
                moves += len(frame.body.box_moves)
                last_height = frame.body.height
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
    stop = next((f for f in findings if f.disposition == STOPPED), None)
    sha256, hemera_digest = file_digests(name, hasher)
    return {
        "kind": "bbg-frame-log",
        "path": name,
        "size_bytes": size,
        "valid": not errors,
        "event_count": events,
        "per_sigil": per_sigil,
        "blocks": per_sigil["."],
        "link_count": links,
        "box_move_count": moves,
        "last_height": last_height,
        "errors": errors,
        "lenient_frames": [f.to_json() for f in findings],
        "valid_prefix_events": events,
        "valid_prefix_end": stop.start if stop is not None else size,
        "strict": _strict(name, limits),
        "sha256": sha256,
        "hemera_source_digest": hemera_digest,
    }
