"""Reading a legacy frame log or TextArchive for the pipeline: whole, before any write.

:func:`scan` walks the whole source with the decoders of :mod:`importers` and keeps only each
item's byte span, so memory is 16 bytes per item.  A bbg CLI frame log is read as bbg's own
reader reads it (:mod:`importers.frame_log.real`): what it skips, drops or reads leniently is
recorded, and a torn tail ends it as it ends bbg's replay (recorded as the cut).  With
``strict`` (and for the other kinds) any decode error stops it as
:class:`~bbg_core.errors.ValidationFailed` (exit 3) naming the code and the offset / frame or
the line -- except a frame log's torn last frame (``truncated-frame``), which the operator
may accept explicitly: the valid prefix is then imported and the cut is recorded.

:func:`decode_item` re-decodes one item from its raw bytes (the pipeline re-reads spans
instead of holding every decoded item in memory).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bbg_core.errors import SignalLogError, TextArchiveError, ValidationFailed
from importers import frame_log, signal_log
from importers.frame_log import CliSignal, Finalize
from importers.signal_log import Intent, Signal
from importers.text_archive import DEFAULT_LIMITS as TEXT_LIMITS
from importers.text_archive import TextRecord, decode_line, read_records
from migrate.pipeline import identity
from migrate.pipeline.legacy_records import summary
from migrate.store.codec import MAX_PAYLOAD

SIGNAL_LOG, FRAME_LOG, TEXT_ARCHIVE = "signal-log", "bbg-frame-log", "text-archive"
KINDS = (SIGNAL_LOG, FRAME_LOG, TEXT_ARCHIVE)
LOG_KINDS = (SIGNAL_LOG, FRAME_LOG)
TORN = "truncated-frame"


@dataclass
class Scan:
    """What the strict pass found: item spans ``[start, end)`` and an accepted torn tail."""

    starts: array[int]
    ends: array[int]
    torn_tail: dict[str, Any] | None = None
    #: bbg frame logs read as bbg's reader reads them: every frame it skipped, dropped or read
    #: leniently (:class:`importers.frame_log.real.Finding` as JSON); empty otherwise.
    lenient: list[dict[str, Any]] = field(default_factory=list)

    @property
    def items(self) -> int:
        return len(self.starts)


def ordinal_of(kind: str, index: int) -> int:
    """The source ordinal of history ``index`` ≥ 1: event index (logs), 1-based line (archives)."""
    return index - 1 if kind in LOG_KINDS else index


def _invalid(exc: SignalLogError | TextArchiveError, extra: str = "") -> ValidationFailed:
    """A decode error as exit 3, keeping the decoder's code and position."""
    ctx = exc.context
    where = ("offset", "frame_index", "frame_start") if "offset" in ctx else ("line",)
    error: dict[str, Any] = {"code": ctx["code"], "detail": exc.message}
    error.update({k: ctx[k] for k in where})
    return ValidationFailed(
        f"{exc.message}{extra}; nothing was written",
        path=ctx.get("path"),
        errors=[error],
        **{k: ctx[k] for k in ("code", *where)},
    )


def _oversized(path: Path, index: int, start: int, size: int) -> ValidationFailed:
    # A content value is codec byte + payload ≤ 16 MiB (MAX_PAYLOAD); the frame header can
    # push a maximal 16 MiB payload just past that, so such a frame cannot be one Blob.
    detail = f"frame {index} of {size} bytes is larger than one Blob ({MAX_PAYLOAD} bytes)"
    return ValidationFailed(
        f"{path}: limit-exceeded at byte {start}: {detail}; nothing was written",
        path=str(path),
        errors=[
            {
                "code": "limit-exceeded",
                "detail": detail,
                "offset": start,
                "frame_index": index,
                "frame_start": start,
            }
        ],  # fmt: skip
        code="limit-exceeded",
        offset=start,
    )


def _frames(kind: str, path: Path) -> Iterator[signal_log.Frame | frame_log.CliFrame]:
    if kind == FRAME_LOG:
        return frame_log.read_frames(path)
    return signal_log.read_frames(path)


def _scan_real(path: Path, tick: Callable[[int, int], None]) -> Scan:
    """A bbg frame log as bbg's own reader reads it (:mod:`importers.frame_log.real`): the
    events it returns, what it skipped or read leniently, and where it stopped."""
    from importers.frame_log.real import STOPPED, Finding, read_real

    found = Scan(array("Q"), array("Q"))
    findings: list[Finding] = []
    try:
        for frame in read_real(path, findings, hash_fn=identity.hemera):
            if frame.end - frame.start > MAX_PAYLOAD:
                raise _oversized(path, frame.index, frame.start, frame.end - frame.start)
            found.starts.append(frame.start)
            found.ends.append(frame.end)
            tick(found.items, frame.end)
    except SignalLogError as exc:
        raise _invalid(exc) from exc
    found.lenient = [f.to_json() for f in findings]
    stop = next((f for f in findings if f.disposition == STOPPED), None)
    if stop is not None and stop.code == TORN:
        found.torn_tail = {
            "code": TORN,
            "offset": stop.offset,
            "valid_prefix_events": found.items,
            "valid_prefix_end": stop.start,
            "discarded_bytes": stop.end - stop.start,
        }
    return found


def _scan_log(
    path: Path, kind: str, accept_torn_tail: bool, tick: Callable[[int, int], None],
    strict: bool = False,
) -> Scan:  # fmt: skip
    if kind == FRAME_LOG and not strict:
        return _scan_real(path, tick)
    found = Scan(array("Q"), array("Q"))
    try:
        for frame in _frames(kind, path):
            if frame.end - frame.start > MAX_PAYLOAD:
                raise _oversized(path, frame.index, frame.start, frame.end - frame.start)
            found.starts.append(frame.start)
            found.ends.append(frame.end)
            tick(found.items, frame.end)
    except SignalLogError as exc:
        ctx = exc.context
        if ctx["code"] != TORN:
            raise _invalid(exc) from exc
        end = found.ends[-1] if found.items else 0
        if not accept_torn_tail:
            raise _invalid(
                exc,
                f"; to import the {found.items} intact event(s) before byte {end} and record "
                "the cut in the receipt, rerun with --accept-torn-tail",
            ) from exc
        found.torn_tail = {
            "code": TORN,
            "offset": ctx["offset"],
            "valid_prefix_events": found.items,
            "valid_prefix_end": end,
            "discarded_bytes": ctx["offset"] - end,
        }
    return found


def _scan_archive(path: Path, tick: Callable[[int, int], None]) -> Scan:
    found = Scan(array("Q"), array("Q"))
    try:
        from hashing.hemera import Hasher

        records = read_records(path, limits=TEXT_LIMITS, hash_fn=identity.hemera, hasher=Hasher)
        for record in records:
            found.starts.append(record.start)
            found.ends.append(record.end)
            tick(found.items, record.end)
    except TextArchiveError as exc:
        raise _invalid(exc) from exc
    return found


def scan(
    path: Path,
    kind: str,
    *,
    accept_torn_tail: bool = False,
    strict: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> Scan:
    """The whole-source pass (see the module docstring); a bbg frame log is read as bbg's
    own reader reads it unless ``strict``."""

    def tick(items: int, offset: int) -> None:
        if progress is not None and items % 4096 == 0:
            progress(items, offset)

    found = _scan_log(path, kind, accept_torn_tail, tick, strict) if kind in LOG_KINDS \
        else _scan_archive(path, tick)  # fmt: skip
    if progress is not None:  # the whole file was read (a torn tail's bytes too)
        progress(found.items, path.stat().st_size)
    return found


def decode_item(kind: str, raw: bytes, index: int, start: int, path: Path) -> dict[str, Any]:
    """The summary of the item at history ``index`` from its exact raw bytes."""
    body: Signal | CliSignal | Intent | Finalize | TextRecord
    try:
        if kind == SIGNAL_LOG:
            body = next(iter(signal_log.decode_frames(raw, path=str(path)))).body
        elif kind == FRAME_LOG:
            # bbg's reader: a frame it read leniently decodes here the same way; a strictly
            # valid frame decodes as the strict decoder decodes it.
            from importers.frame_log.real import decode_real_frame

            event = decode_real_frame(raw)
            if event is None:
                raise StopIteration
            body = event.body
        else:
            body = decode_line(raw, index, start, hash_fn=identity.hemera, path=str(path))
    except (SignalLogError, TextArchiveError, StopIteration) as exc:
        raise _changed(path, index, start) from exc
    return summary(body)


def decode_text(raw: bytes, line: int, start: int, path: Path) -> TextRecord:
    """The TextArchive line ``line`` (1-based, at byte ``start``) from its exact raw bytes."""
    try:
        return decode_line(raw, line, start, hash_fn=identity.hemera, path=str(path))
    except TextArchiveError as exc:
        raise _changed(path, line, start) from exc


def _changed(path: Path, index: int, start: int) -> ValidationFailed:
    # The strict pass accepted these bytes; failing now means the file changed under us.
    return ValidationFailed(
        f"{path}: the item at byte {start} no longer decodes; the source changed after "
        "it was read. Stop whatever writes it, then start again",
        path=str(path),
        errors=[{"code": "source-changed", "detail": f"item {index} at byte {start}"}],
    )
