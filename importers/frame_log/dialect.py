"""Which of the two legacy frame-log dialects a file holds, judged by its content.

Both are tape frames with renderer ``b``; intents (``^``, 136 bytes) are identical in both.
They differ in two ways, and the first frames that show either decide:

* a ``.`` frame exists only in bbg's CLI log (the old cyb Signal log has no such sigil);
* a ``!`` payload is laid out differently: neuron ‖ step ‖ prev ‖ height ‖ 145-byte links
  [‖ sections] (cyb) against neuron ‖ height ‖ 105-byte links ‖ box moves (bbg).  A payload
  that decodes strictly as exactly one of them decides; one that decodes as neither decides
  by whose link count fits the payload.

A log whose examined frames show neither (only intents, or ambiguous signals) is the old cyb
Signal log, as it always was; the bytes of such frames mean the same in both dialects.
"""

from __future__ import annotations

import os
import struct
from typing import Final, Literal

from bbg_core.errors import SignalLogError
from importers.frame_log.model import FINALIZE, LINK_BYTES, SIGILS, SIGNAL, SIGNAL_HEAD_BYTES
from importers.frame_log.payload import decode_cli_signal
from importers.signal_log.framing import PathLike, walk_frames
from importers.signal_log.model import DEFAULT_LIMITS as CYB_LIMITS
from importers.signal_log.model import MARKER, MAX_LEB128_BYTES, RENDERER
from importers.signal_log.payload import PayloadError, decode_signal
from importers.signal_log.window import FileWindow

Dialect = Literal["signal-log", "bbg-frame-log"]
SIGNAL_LOG: Final = "signal-log"
FRAME_LOG: Final = "bbg-frame-log"
MAX_FRAMES: Final = 256  # frames examined at most
MAX_BYTES: Final = 32 << 20  # bytes examined at most
_CYB_HEAD: Final = 84
_CYB_LINK: Final = 145


def looks_like_frame_log(head: bytes) -> bool:
    """True if ``head`` starts like a tape frame of either dialect (``!``, ``^`` or ``.``)."""
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
    return len(length) < MAX_LEB128_BYTES


def _cyb_decodes(payload: bytes) -> bool:
    try:
        decode_signal(payload, CYB_LIMITS)
    except PayloadError:
        return False
    return True


def _bbg_decodes(payload: bytes) -> bool:
    try:
        decode_cli_signal(payload)
    except PayloadError:
        return False
    return True


def _fits(payload: bytes, head: int, link: int) -> bool:
    if len(payload) < head:
        return False
    (count,) = struct.unpack_from("<I", payload, head - 4)
    return bool(count <= (len(payload) - head) // link)


def signal_dialect(payload: bytes) -> Dialect | None:
    """The dialect one ``!`` payload belongs to, or None when it cannot tell."""
    cyb, bbg = _cyb_decodes(payload), _bbg_decodes(payload)
    if cyb != bbg:
        return SIGNAL_LOG if cyb else FRAME_LOG
    if cyb:
        return None
    cyb_fits = _fits(payload, _CYB_HEAD, _CYB_LINK)
    bbg_fits = _fits(payload, SIGNAL_HEAD_BYTES, LINK_BYTES)
    if cyb_fits != bbg_fits:
        return SIGNAL_LOG if cyb_fits else FRAME_LOG
    return None


class _Open:
    max_log_bytes = 1 << 62
    max_events = MAX_FRAMES
    max_payload_bytes = 16 << 20


def _error(
    code: str, offset: int, frame_index: int, frame_start: int, detail: str, path: str | None = None
) -> SignalLogError:
    return SignalLogError(detail, code=code, offset=offset)


def _pair(sigil: str, payload: bytes) -> tuple[str, bytes]:
    return sigil, payload


def _body(
    index: int, start: int, end: int, sigil: str, at: int, size: int, raw: bytes,
    body: tuple[str, bytes],
) -> tuple[str, bytes]:  # fmt: skip
    return body


def frame_log_dialect(path: PathLike) -> Dialect:
    """The dialect of the frame log at ``path`` (see the module docstring)."""
    name = os.fspath(path)
    with open(name, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        window = FileWindow(handle, size, name)
        examined = 0
        frames = walk_frames(
            window,
            sigils="".join(SIGILS),
            decode=_pair,
            make=_body,
            limits=_Open(),
            error=_error,
            path=name,
        )
        try:
            for sigil, payload in frames:
                if sigil == FINALIZE:
                    return FRAME_LOG
                if sigil == SIGNAL:
                    found = signal_dialect(payload)
                    if found is not None:
                        return found
                examined += len(payload)
                if examined > MAX_BYTES:
                    break
        except SignalLogError:
            pass  # a broken frame says nothing more; the strict decoder names it later
    return SIGNAL_LOG
