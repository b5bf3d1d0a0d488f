"""Read-only report on a bbg CLI frame log (the ``inspect`` stage)."""

from __future__ import annotations

import os
from typing import Any

from bbg_core.errors import SignalLogError
from hashing.hemera import HasherFactory
from importers.frame_log.decode import read_frames
from importers.frame_log.model import DEFAULT_LIMITS, SIGILS, CliSignal, Limits
from importers.signal_log import file_digests
from importers.signal_log.framing import PathLike


def inspect_frame_log(
    path: PathLike, *, limits: Limits = DEFAULT_LIMITS, hasher: HasherFactory | None = None
) -> dict[str, Any]:
    """The read-only report (schema ``frame-log-inspect``) of the log at ``path``.

    Counts cover the frames decoded before the first error (all of them for a valid log);
    ``errors`` holds at most that one error, since nothing after it can be framed.
    ``blocks`` counts finalize frames, ``last_height`` is the height of the last signal.
    """
    name = os.fspath(path)
    per_sigil = dict.fromkeys(SIGILS, 0)
    links = moves = events = end = 0
    last_height: int | None = None
    errors: list[dict[str, Any]] = []
    try:
        for frame in read_frames(name, limits=limits):
            events += 1
            end = frame.end
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
    sha256, hemera_digest = file_digests(name, hasher)
    return {
        "kind": "bbg-frame-log",
        "path": name,
        "size_bytes": os.stat(name).st_size,
        "valid": not errors,
        "event_count": events,
        "per_sigil": per_sigil,
        "blocks": per_sigil["."],
        "link_count": links,
        "box_move_count": moves,
        "last_height": last_height,
        "errors": errors,
        "valid_prefix_events": events,
        "valid_prefix_end": end,
        "sha256": sha256,
        "hemera_source_digest": hemera_digest,
    }
