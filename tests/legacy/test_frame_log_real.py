"""bbg's CLI frame log read as bbg's own reader reads it (the import's default).

Transcribed from cyberia-to/bbg ``cli/src/frame.rs`` @ 742075ae95beaea9d98089b6eddb8905ffd067c2
(``decode_events``, ``deserialize_signal``, ``deserialize_intent`` and its tests
``signal_frame_roundtrips``, ``intent_frame_roundtrips``, ``mixed_log_decodes_in_order``) and
cyberia-to/tade ``impl/rust/src/lib.rs`` @ 94bc494ccf4dcbd2b26438ad44885712f959e0d5
(``Reader::next_chunk``, ``decode_varint``; tests ``garbage_before_marker_is_skipped``,
``truncated_frame_returns_pending``, ``truncated_payload_returns_pending``,
``huge_varint_length_returns_pending_instead_of_overflowing``).  Each expected value below is
what that code returns for the input; the code's behaviour is described beside each case.
"""

from __future__ import annotations

import struct

from importers.frame_log import CliLink, CliSignal, Finalize, encode_cli_signal, encode_frame, frame
from importers.frame_log.real import Finding, decode_real_frame, walk_real
from importers.signal_log import BoxMove, Intent


def b(byte: int, n: int = 32) -> bytes:
    return bytes([byte]) * n


def sig() -> CliSignal:
    """bbg's ``sig()``."""
    return CliSignal(b(1), 7, (CliLink(b(2), b(3), b(0), 4, 1),), ())


SIG = encode_frame(sig())


def read(data: bytes) -> tuple[list[object], list[tuple[str, str, int, int]]]:
    found: list[Finding] = []
    bodies = [f.body for f in walk_real(data, found)]
    return bodies, [(f.code, f.disposition, f.offset, f.frame_index) for f in found]


def test_bbg_tests_read_the_same() -> None:
    # signal_frame_roundtrips, intent_frame_roundtrips, mixed_log_decodes_in_order
    assert read(SIG) == ([sig()], [])
    intent = Intent(b(9), 3, b(5), b(0, 64))
    assert read(encode_frame(intent)) == ([intent], [])
    bodies, found = read(SIG + encode_frame(Finalize()) + SIG)
    assert bodies == [sig(), Finalize(), sig()] and found == []


def test_a_flag_other_than_one_is_no_commitment_and_the_next_move_follows_the_flag() -> None:
    # deserialize_signal: `match take_u8 { 1 => Some((take32, take_u64)), _ => None }`
    head = b(1) + struct.pack("<QI", 7, 0) + struct.pack("<I", 2)
    second = b(6) + b"\x01" + b(7) + struct.pack("<Q", 9)
    data = SIG + frame("!", head + b(5) + b"\x02" + second)
    bodies, found = read(data)
    assert bodies[1] == CliSignal(b(1), 7, (), (BoxMove(b(5), 0), BoxMove(b(6), 1, b(7), 9)))
    assert found == [("bad-flag", "lenient", len(SIG) + 5 + 48 + 32, 1)]


def test_bytes_after_a_signal_and_a_finalize_payload_are_ignored() -> None:
    # deserialize_signal returns Some(Signal) with no length check; decode_events pushes
    # Event::Finalize for any '.' chunk without reading its payload.
    data = SIG + frame("!", encode_cli_signal(sig()) + b"xyz") + frame(".", b"\x00\x00")
    bodies, found = read(data)
    assert bodies == [sig(), sig(), Finalize()]
    assert [f[:2] for f in found] == [("trailing-bytes", "lenient"),
                                      ("bad-finalize-length", "lenient")]  # fmt: skip


def test_unknown_sigils_are_skipped_and_unreadable_payloads_dropped() -> None:
    # decode_events: `ReadResult::Chunk(_) => {}`; deserialize_* returning None pushes nothing.
    cut = encode_cli_signal(sig())[:-3]
    data = frame("#", b"found") + frame("!", cut) + frame("^", bytes(135)) + SIG
    bodies, found = read(data)
    assert bodies == [sig()]
    assert [(c, d, i) for c, d, _, i in found] == [
        ("unknown-sigil", "skipped", 0), ("truncated-payload", "dropped", 1),
        ("bad-intent-length", "dropped", 2),
    ]  # fmt: skip


def test_a_longer_intent_is_read_from_its_first_136_bytes() -> None:
    intent = Intent(b(9), 3, b(5), b(0, 64))
    raw = encode_frame(intent)
    data = frame("^", raw[5:] + b"tail")
    bodies, found = read(data)
    assert bodies == [intent] and found == [("bad-intent-length", "lenient", 5 + 136, 0)]


def test_tade_framing_garbage_renderer_and_lengths() -> None:
    # garbage_before_marker_is_skipped: [0x01,0x02,0x03,0xFF,0xAB] before a frame
    bodies, found = read(bytes([1, 2, 3, 0xFF, 0xAB]) + SIG)
    assert bodies == [sig()] and found == [("bad-marker", "skipped", 0, 0)]
    # the renderer byte is never checked
    other = SIG[:2] + b"t" + SIG[3:]
    assert read(other) == ([sig()], [("bad-renderer", "lenient", 2, 0)])
    # decode_varint has no minimality check: 153 as three bytes
    payload = encode_cli_signal(sig())
    long = bytes([0x1F, ord("!"), ord("b"), 0x99, 0x81, 0x00]) + payload
    assert read(long) == ([sig()], [("overlong-leb128", "lenient", 3, 0)])


def test_tade_framing_stops_silently() -> None:
    # truncated_frame_returns_pending / truncated_payload_returns_pending: the events before
    # are returned, nothing after.
    assert read(SIG + SIG[:3]) == ([sig()], [("truncated-frame", "stopped", len(SIG) + 3, 1)])
    assert read(SIG + SIG[:-1])[0] == [sig()]
    # huge_varint_length_returns_pending_instead_of_overflowing: u64::MAX - 3 as 10 bytes
    huge = bytes([0x1F, ord("!"), ord("b")]) + bytes([0xFC] + [0xFF] * 8 + [0x01])
    assert read(SIG + huge + SIG) == (
        [sig()],
        [("truncated-frame", "stopped", 2 * len(SIG) + len(huge), 1)],
    )
    # a continuation after the 10th length byte: decode_varint returns None (overflow)
    over = bytes([0x1F, ord("!"), ord("b")]) + bytes([0x80] * 10 + [0x01])
    assert read(SIG + over + SIG) == ([sig()], [("overlong-leb128", "stopped", len(SIG) + 3, 1)])


def test_one_frame_decodes_alone_as_in_the_log() -> None:
    data = SIG[:2] + b"t" + SIG[3:]
    event = decode_real_frame(data)
    assert event is not None and event.body == sig() and event.raw == data
    assert decode_real_frame(frame("#", b"x")) is None
