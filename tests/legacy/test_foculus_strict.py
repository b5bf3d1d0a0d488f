"""The old cyb Signal log decoder against foculus' own strict decoder tests.

Transcribed from cyberia-to/foculus ``tests/legacy_frames_strict.rs`` at commit
fb06fbad8134eb108e19a9e6024e56f9178fa788 (the decoder under test is ``src/frames/strict.rs``
at 881fec187c2b22462b8bc9586d271a52370fb82d, with ``Reader`` from
``src/signal_codec/cursor.rs`` and ``links``/``boxes``/``deltas`` from ``src/signal_codec.rs``
at da87adbd62d7dbb2fbf7b22d7c000cb0eadc78c0).  Each test keeps the Rust test's name, inputs
and expected outcome; where foculus names an ``ErrorKind`` we name our error code
it maps to.

Offsets differ on purpose: foculus reports the reader's position just past the byte(s) it
consumed when it failed; we report the offset of the offending byte (e.g. the marker,
sigil, renderer or flag byte itself, the first byte of the length field).  The tests pin both.
"""

from __future__ import annotations

import struct

import pytest

from bbg_core.errors import SignalLogError
from importers.signal_log import (
    BoxMove,
    DeltaPi,
    Intent,
    Limits,
    Link,
    Signal,
    decode_frames,
    encode_frame,
    encode_leb128,
    encode_signal,
)
from importers.signal_log.model import DEFAULT_LIMITS

MAX_SIGNAL_BYTES = 16 * 1024 * 1024  # foculus signal_codec::MAX_SIGNAL_BYTES
MAX_LEGACY_LOG_BYTES = 64 * 1024 * 1024  # foculus frames::strict::MAX_LEGACY_LOG_BYTES
MAX_LEGACY_EVENTS = 65_536  # foculus frames::strict::MAX_LEGACY_EVENTS
MAX_LINKS = 16_384  # foculus signal_codec::MAX_LINKS
ZAP, KET, HAX, MARKER = b"!", b"^", b"#", 0x1F


def b(byte: int) -> bytes:
    return bytes([byte]) * 32


def signal() -> Signal:
    """foculus' ``signal()`` (network and proof are not part of the legacy profile)."""
    return Signal(
        neuron=b(1),
        step=3,
        prev=b(2),
        height=4,
        links=(Link(b(5), b(6), b(7), b(8), 11, -1, 13),),
        # foculus::encode_signal_frame writes box_moves, then delta_pi (src/frames.rs).
        box_moves=(BoxMove(b(15), 1, b(16), 19),),
        delta_pi=(DeltaPi(b(14), 17),),
    )


def empty_signal() -> Signal:
    """``signal()`` with links, delta_pi and box_moves cleared (both counts written as 0)."""
    return Signal(b(1), 3, b(2), 4, (), (), ())


def frame(sigil: bytes, payload: bytes) -> bytes:
    """``Chunk::new(sigil, b'b', payload).encode()``: marker, sigil, 'b', LEB128, payload."""
    return bytes([MARKER]) + sigil + b"b" + encode_leb128(len(payload)) + payload


def decode(data: bytes, limits: Limits = DEFAULT_LIMITS) -> list[object]:
    return [f.body for f in decode_frames(data, limits=limits)]


def error(data: bytes, limits: Limits = DEFAULT_LIMITS) -> dict[str, object]:
    with pytest.raises(SignalLogError) as info:
        decode(data, limits)
    return info.value.context


def test_strict_import_preserves_order_spans_and_the_documented_legacy_profile() -> None:
    first = encode_frame(signal())
    intent = Intent(b(20), 23, b(21), bytes([22]) * 64)
    second = encode_frame(intent)
    log = first + second + first
    frames = list(decode_frames(log))
    assert len(frames) == 3
    assert (frames[0].start, frames[0].end) == (0, len(first))
    assert (frames[1].start, frames[1].end) == (len(first), len(first) + len(second))
    assert (frames[2].start, frames[2].end) == (len(first) + len(second), len(log))
    assert log[frames[1].start : frames[1].end] == second
    decoded = frames[0].body
    assert isinstance(decoded, Signal)
    assert (decoded.neuron, decoded.prev, decoded.step, decoded.height) == (b(1), b(2), 3, 4)
    assert decoded.links[0].token == b(8)
    assert decoded.links[0].valence == -1
    assert decoded.delta_pi == (DeltaPi(b(14), 17),)
    assert decoded.box_moves is not None
    assert (decoded.box_moves[0].commitment, decoded.box_moves[0].value) == (b(16), 19)
    assert frames[1].body == intent
    assert len(decode(log)) == 3


def test_strict_import_accepts_only_complete_historical_suffix_layouts() -> None:
    full = encode_signal(empty_signal())
    assert len(full) == 92
    for length in (84, 88, 92):
        assert len(decode(frame(ZAP, full[:length]))) == 1
    for length in (85, 86, 87, 89, 90, 91):
        assert error(frame(ZAP, full[:length]))["code"] == "partial-suffix"
    # ErrorKind::Trailing
    assert error(frame(ZAP, full + b"\x00"))["code"] == "trailing-bytes"


def test_strict_import_rejects_every_partial_frame_and_intent_payload() -> None:
    intent = Intent(b(1), 0, b(2), bytes([3]) * 64)
    for whole in (encode_frame(signal()), encode_frame(intent)):
        for end in range(1, len(whole)):
            ctx = error(whole[:end])
            assert (ctx["code"], ctx["offset"]) == ("truncated-frame", end)
    assert decode(b"") == []
    data = encode_frame(intent)[5:]  # the 136-byte payload (2-byte LEB128 for 136)
    assert len(data) == 136
    for end in range(len(data)):
        # ErrorKind::Truncated in foculus; our code for an intent of the wrong size.
        assert error(frame(KET, data[:end]))["code"] == "bad-intent-length"
    ctx = error(frame(KET, data + b"\x00"))  # ErrorKind::Trailing
    assert (ctx["code"], ctx["offset"]) == ("bad-intent-length", 5 + 136)


@pytest.mark.parametrize(
    ("suffix", "code", "ours", "foculus"),
    [
        # (bytes after a valid frame, our code, our offset, foculus' position), both offsets
        # relative to the end of the valid frame.
        (b"\x00", "bad-marker", 0, 1),
        (frame(HAX, b"unknown"), "unknown-sigil", 1, 2),
        (bytes([MARKER]) + ZAP + b"t\x00", "bad-renderer", 2, 3),
        (bytes([MARKER]) + ZAP + b"b\x80\x00", "overlong-leb128", 3, 5),
    ],
    ids=["noise", "unknown-event", "renderer", "nonminimal-varint"],
)
def test_unknown_events_noise_and_bad_varints_are_errors_with_absolute_positions(
    suffix: bytes, code: str, ours: int, foculus: int
) -> None:
    valid = encode_frame(signal())
    data = valid + suffix
    ctx = error(data)
    # foculus: error.position > valid.len() and <= bytes.len(); its position is just past
    # the byte it consumed, ours is at that byte.
    assert len(valid) < len(valid) + foculus <= len(data)
    assert (ctx["code"], ctx["offset"]) == (code, len(valid) + ours)


def test_leb128_overflow_and_a_length_over_the_frame_limit() -> None:
    overflow = bytes([MARKER]) + ZAP + b"b" + b"\xff" * 10  # ErrorKind::Invalid("LEB128 overflow")
    assert (error(overflow)["code"], error(overflow)["offset"]) == ("overlong-leb128", 3)
    too_large = bytes([MARKER]) + ZAP + b"b" + encode_leb128(MAX_SIGNAL_BYTES + 1)
    assert error(too_large)["code"] == "limit-exceeded"  # ErrorKind::Limit(_)
    # Exactly the limit is allowed (foculus: length > MAX_SIGNAL_BYTES is the error): the
    # frame is then only cut short.
    at_limit = bytes([MARKER]) + ZAP + b"b" + encode_leb128(MAX_SIGNAL_BYTES)
    assert error(at_limit)["code"] == "truncated-frame"


def test_collection_counts_and_option_tags_are_checked_before_allocation() -> None:
    raw = bytearray(encode_signal(signal()))
    raw[80:84] = struct.pack("<I", 0xFFFF_FFFF)
    payload_at = 3 + len(encode_leb128(len(raw)))
    ctx = error(frame(ZAP, bytes(raw)))  # ErrorKind::Limit(_)
    assert (ctx["code"], ctx["offset"]) == ("limit-exceeded", payload_at + 80)
    raw = bytearray(encode_signal(signal()))
    # Fixed header + one 145-byte link + box count + nullifier.
    raw[84 + 145 + 4 + 32] = 2
    ctx = error(frame(ZAP, bytes(raw)))  # ErrorKind::Invalid("option tag")
    assert (ctx["code"], ctx["offset"]) == ("bad-flag", payload_at + 84 + 145 + 4 + 32)


def test_a_link_count_at_the_limit_that_cannot_fit_is_truncated() -> None:
    # cyberia-to/foculus tests/signal_codec.rs (fb06fbad), malformed_versions_tags_counts_and_
    # residues_are_rejected: count = MAX_LINKS with too few bytes left is ErrorKind::Truncated
    # (the same signal_codec::links reader decodes the legacy link list).
    raw = bytearray(encode_signal(empty_signal()))
    raw[80:84] = struct.pack("<I", MAX_LINKS)
    assert error(frame(ZAP, bytes(raw)))["code"] == "truncated-payload"
    raw[80:84] = struct.pack("<I", MAX_LINKS + 1)
    assert error(frame(ZAP, bytes(raw)))["code"] == "limit-exceeded"


def test_legacy_log_byte_and_event_limits_are_enforced() -> None:
    ctx = error(bytes(MAX_LEGACY_LOG_BYTES + 1))  # all zeros: the size is checked first
    assert (ctx["code"], ctx["offset"], ctx["frame_index"]) == ("limit-exceeded", 0, 0)
    one = encode_frame(empty_signal())
    many = one * (MAX_LEGACY_EVENTS + 1)
    ctx = error(many)  # ErrorKind::Limit("legacy event count")
    assert (ctx["code"], ctx["frame_index"]) == ("limit-exceeded", MAX_LEGACY_EVENTS)
    assert ctx["offset"] == MAX_LEGACY_EVENTS * len(one)
