"""Hand-built byte cases: every Signal log error code at its exact offset."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from bbg_core.errors import SignalLogError, SourceError
from importers.signal_log import (
    DEFAULT_LIMITS,
    BoxMove,
    DeltaPi,
    Frame,
    Intent,
    Limits,
    Link,
    Signal,
    decode_frames,
    encode_frame,
    encode_leb128,
    encode_signal,
    looks_like_signal_log,
    read_frames,
    valid_prefix,
)
from importers.signal_log.model import ERROR_CODES
from importers.signal_log.window import FileWindow

N = bytes(range(32))
LINK = Link(N, b"f" * 32, b"t" * 32, b"k" * 32, 7, -1, 9)
INTENT = Intent(N, 5, b"s" * 32, b"g" * 64)
MOVES = (BoxMove(b"n" * 32, 0), BoxMove(b"m" * 32, 1, b"c" * 32, 3))
DELTA = (DeltaPi(b"p" * 32, 11),)
PLAIN = Signal(N, 0, bytes(32), 1, (LINK,))
FULL = Signal(N, 1, b"v" * 32, 2, (LINK, LINK), MOVES, DELTA)
FIRST = encode_frame(PLAIN)  # a valid frame to precede every broken one


def frame_bytes(sigil: bytes, payload: bytes) -> bytes:
    return b"\x1f" + sigil + b"b" + encode_leb128(len(payload)) + payload


def fails(data: bytes, limits: Limits = DEFAULT_LIMITS) -> tuple[dict[str, object], list[Frame]]:
    """Decode ``data``; return the error context and the frames yielded before it."""
    seen: list[Frame] = []
    with pytest.raises(SignalLogError) as info:
        for frame in decode_frames(data, limits=limits, path="t.log"):
            seen.append(frame)
    ctx = info.value.context
    assert ctx["path"] == "t.log"
    # Never a frame past the error: the prefix ends exactly where the bad frame starts.
    assert ctx["frame_index"] == len(seen)
    assert ctx["frame_start"] == (seen[-1].end if seen else 0)
    return ctx, seen


def where(ctx: dict[str, object]) -> tuple[object, object, object, object]:
    return ctx["code"], ctx["offset"], ctx["frame_index"], ctx["frame_start"]


def test_round_trip_of_every_field() -> None:
    data = FIRST + encode_frame(INTENT) + encode_frame(FULL)
    frames = list(decode_frames(data))
    assert [f.body for f in frames] == [PLAIN, INTENT, FULL]
    assert [f.sigil for f in frames] == ["!", "^", "!"]
    assert [s.suffix for s in (PLAIN, FULL)] == ["none", "box_moves+delta_pi"]
    assert frames[1].start == len(FIRST) and frames[1].payload_len == 136
    assert frames[2].end == len(data)


def test_empty_sections_differ_from_absent_ones() -> None:
    empty_moves = Signal(N, 0, bytes(32), 0, (), ())
    empty_both = Signal(N, 0, bytes(32), 0, (), (), ())
    frames = list(decode_frames(encode_frame(empty_moves) + encode_frame(empty_both)))
    assert [f.body for f in frames] == [empty_moves, empty_both]
    assert [f.body.suffix for f in frames if isinstance(f.body, Signal)] == [
        "box_moves",
        "box_moves+delta_pi",
    ]


def test_multi_byte_length_field() -> None:
    big = Signal(N, 0, bytes(32), 0, (LINK,) * 120)
    data = encode_frame(big)
    assert len(encode_signal(big)) == 84 + 120 * 145 > 16384  # needs a 3-byte LEB128
    [frame] = decode_frames(data)
    assert frame.payload_start == 6 and frame.body == big


def test_bad_marker() -> None:
    ctx, _ = fails(FIRST + b"\x00!b\x00")
    assert where(ctx) == ("bad-marker", len(FIRST), 1, len(FIRST))


def test_unknown_sigil() -> None:
    ctx, _ = fails(FIRST + frame_bytes(b"?", bytes(136)))
    assert where(ctx) == ("unknown-sigil", len(FIRST) + 1, 1, len(FIRST))


def test_bad_renderer() -> None:
    ctx, _ = fails(FIRST + b"\x1f^c" + encode_leb128(136) + bytes(136))
    assert where(ctx) == ("bad-renderer", len(FIRST) + 2, 1, len(FIRST))


@pytest.mark.parametrize(
    "length",
    [b"\x88\x81\x00", b"\x80\x00", b"\x80" * 10 + b"\x01", b"\xff" * 10],
    ids=["3-bytes-for-136", "zero-in-2", "11-bytes", "10-continuations"],
)
def test_overlong_leb128(length: bytes) -> None:
    ctx, _ = fails(FIRST + b"\x1f^b" + length + bytes(136))
    assert where(ctx) == ("overlong-leb128", len(FIRST) + 3, 1, len(FIRST))


def test_ten_byte_length_that_is_minimal_hits_the_payload_limit() -> None:
    length = b"\xff" * 9 + b"\x01"  # 2**64 - 1: minimal, but no payload can be that long
    ctx, _ = fails(b"\x1f!b" + length)
    assert where(ctx) == ("limit-exceeded", 3, 0, 0)


@pytest.mark.parametrize("cut", [1, 2, 3, 4, 5, 100, len(encode_frame(FULL)) - 1])
def test_truncated_frame(cut: int) -> None:
    whole = encode_frame(FULL)
    data = FIRST + whole[:cut]
    ctx, _ = fails(data)
    assert where(ctx) == ("truncated-frame", len(data), 1, len(FIRST))


def test_truncated_frame_inside_the_length_field() -> None:
    data = FIRST + b"\x1f!b\x80"
    ctx, _ = fails(data)
    assert where(ctx) == ("truncated-frame", len(data), 1, len(FIRST))


def test_truncated_payload_in_the_fixed_header() -> None:
    payload = encode_signal(PLAIN)[:50]
    data = FIRST + frame_bytes(b"!", payload)
    ctx, _ = fails(data)
    assert where(ctx) == ("truncated-payload", len(data), 1, len(FIRST))


def test_truncated_payload_in_the_link_list() -> None:
    payload = encode_signal(Signal(N, 0, bytes(32), 0, (LINK, LINK)))[:-10]
    data = FIRST + frame_bytes(b"!", payload)
    ctx, _ = fails(data)
    assert where(ctx) == ("truncated-payload", len(data), 1, len(FIRST))


def plain_payload() -> bytes:
    return encode_signal(Signal(N, 0, bytes(32), 0, (LINK,)))


@pytest.mark.parametrize(
    "suffix",
    [
        b"\x02\x00",  # box_moves count cut
        struct.pack("<I", 2) + b"n" * 32 + b"\x00" + b"m" * 20,  # second entry cut
        struct.pack("<I", 1) + b"n" * 32 + b"\x01" + b"c" * 39,  # commitment + value cut
        struct.pack("<I", 0) + b"\x01",  # delta_pi count cut
        struct.pack("<I", 0) + struct.pack("<I", 2) + b"p" * 79,  # delta_pi entries cut
    ],
    ids=["moves-count", "moves-entry", "moves-commitment", "delta-count", "delta-entries"],
)
def test_partial_suffix(suffix: bytes) -> None:
    data = FIRST + frame_bytes(b"!", plain_payload() + suffix)
    ctx, _ = fails(data)
    assert where(ctx) == ("partial-suffix", len(data), 1, len(FIRST))


def test_trailing_bytes() -> None:
    payload = encode_signal(FULL)
    data = FIRST + frame_bytes(b"!", payload + b"xyz") + FIRST
    ctx, _ = fails(data)
    payload_start = len(FIRST) + 3 + len(encode_leb128(len(payload) + 3))
    assert where(ctx) == ("trailing-bytes", payload_start + len(payload), 1, len(FIRST))


@pytest.mark.parametrize("size", [0, 100, 135, 137, 200])
def test_bad_intent_length(size: int) -> None:
    data = FIRST + frame_bytes(b"^", bytes(size)) + FIRST
    ctx, _ = fails(data)
    payload_start = len(FIRST) + 3 + len(encode_leb128(size))
    offset = payload_start + (136 if size > 136 else size)
    assert where(ctx) == ("bad-intent-length", offset, 1, len(FIRST))


def test_limit_events() -> None:
    data = FIRST * 3
    ctx, seen = fails(data, Limits(max_events=2))
    assert where(ctx) == ("limit-exceeded", 2 * len(FIRST), 2, 2 * len(FIRST))
    assert len(list(decode_frames(data, limits=Limits(max_events=3)))) == 3


def test_limit_payload() -> None:
    intent = encode_frame(INTENT)  # 136-byte payload, then FIRST's 229-byte payload
    ctx, _ = fails(intent + FIRST, Limits(max_payload_bytes=228))
    assert where(ctx) == ("limit-exceeded", len(intent) + 3, 1, len(intent))


def test_limit_links() -> None:
    two = encode_frame(Signal(N, 0, bytes(32), 0, (LINK, LINK)))
    ctx, _ = fails(FIRST + two, Limits(max_links=1))
    offset_of_count = len(FIRST) + 3 + len(encode_leb128(84 + 2 * 145)) + 80
    assert where(ctx) == ("limit-exceeded", offset_of_count, 1, len(FIRST))


def test_limit_section_entries() -> None:
    frame = encode_frame(FULL)  # two box moves, one delta_pi entry
    payload_start = len(FIRST) + 3 + len(encode_leb128(len(encode_signal(FULL))))
    ctx, _ = fails(FIRST + frame, Limits(max_section_entries=1))
    assert where(ctx) == ("limit-exceeded", payload_start + 84 + 2 * 145, 1, len(FIRST))
    assert [f.body for f in decode_frames(frame, limits=Limits(max_section_entries=2))] == [FULL]


def test_limit_log_bytes() -> None:
    # As foculus decode_events_strict_with_spans: the whole log's size is checked first, so
    # an oversized log fails at byte 0, frame 0, before any frame is decoded.
    data = FIRST * 2
    ctx, seen = fails(data, Limits(max_log_bytes=len(data) - 1))
    assert where(ctx) == ("limit-exceeded", 0, 0, 0) and seen == []
    assert len(list(decode_frames(data, limits=Limits(max_log_bytes=len(data))))) == 2


def test_bad_flag_at_the_flag_byte() -> None:
    for flag in (2, 0x80, 0xFF):
        payload = plain_payload() + struct.pack("<I", 1) + b"z" * 32 + bytes([flag])
        data = FIRST + frame_bytes(b"!", payload) + FIRST
        ctx, _ = fails(data)
        payload_start = len(FIRST) + 3 + len(encode_leb128(len(payload)))
        assert where(ctx) == ("bad-flag", payload_start + 229 + 4 + 32, 1, len(FIRST))


def test_flag_zero_and_one_decode() -> None:
    moves = (BoxMove(b"z" * 32, 0), BoxMove(b"y" * 32, 1, b"c" * 32, 2**64 - 1))
    body = Signal(N, 0, bytes(32), 0, (), moves)
    [frame] = decode_frames(encode_frame(body))
    assert frame.body == body


def test_section_count_that_cannot_fit_is_cut_before_any_entry() -> None:
    # foculus Reader::count: count > remaining / smallest entry is "truncated" before any
    # entry is read, so a bad flag in the first entry is not reached.
    payload = plain_payload() + struct.pack("<I", 3) + b"z" * 32 + b"\x07" + bytes(20)
    data = FIRST + frame_bytes(b"!", payload)
    ctx, _ = fails(data)
    assert where(ctx) == ("partial-suffix", len(data), 1, len(FIRST))


def test_valid_prefix_from_bytes() -> None:
    data = FIRST * 2 + encode_frame(FULL)[:-1]
    prefix = valid_prefix(data)
    assert (prefix.events, prefix.end, prefix.size) == (2, 2 * len(FIRST), len(data))
    assert prefix.error is not None and prefix.error.context["code"] == "truncated-frame"


def test_sniffing_rejects_near_misses() -> None:
    assert looks_like_signal_log(FIRST[:1]) and looks_like_signal_log(FIRST)
    assert not looks_like_signal_log(b"\x1f?b")
    assert not looks_like_signal_log(b"\x1f!c")
    assert not looks_like_signal_log(b"\x1f!b\x80\x00")
    assert not looks_like_signal_log(b'{"particle":"00"}\n')
    assert not looks_like_signal_log(b"redb\x1a\x0a\xa9\x0d\x0a")


def _one_case_per_code() -> dict[str, tuple[bytes, Limits, int]]:
    """code -> (log, limits, offset): one representative case for each error code."""
    f = len(FIRST)
    intent_payload_at = f + 3 + 2  # 137 needs a 2-byte LEB128
    return {
        "bad-marker": (FIRST + b"\x00", DEFAULT_LIMITS, f),
        "unknown-sigil": (FIRST + b"\x1f?b\x00", DEFAULT_LIMITS, f + 1),
        "bad-renderer": (FIRST + b"\x1f!B\x00", DEFAULT_LIMITS, f + 2),
        "overlong-leb128": (FIRST + b"\x1f!b\x80\x00", DEFAULT_LIMITS, f + 3),
        "truncated-frame": (FIRST + FIRST[:-1], DEFAULT_LIMITS, 2 * f - 1),
        "truncated-payload": (FIRST + frame_bytes(b"!", bytes(83)), DEFAULT_LIMITS, f + 4 + 83),
        "partial-suffix": (  # 229 + 1 payload bytes: a 2-byte LEB128
            FIRST + frame_bytes(b"!", plain_payload() + b"\x01"),
            DEFAULT_LIMITS,
            f + 5 + 230,
        ),
        "trailing-bytes": (  # empty box_moves, empty delta_pi, then one extra byte
            FIRST + frame_bytes(b"!", plain_payload() + bytes(8) + b"!"),
            DEFAULT_LIMITS,
            f + 5 + 229 + 8,
        ),
        "bad-intent-length": (FIRST + frame_bytes(b"^", bytes(137)), DEFAULT_LIMITS,
                              intent_payload_at + 136),
        "bad-flag": (  # one box move whose flag is 2: 229 + 4 + 33 payload bytes
            FIRST + frame_bytes(b"!", plain_payload() + struct.pack("<I", 1) + bytes(32) + b"\x02"),
            DEFAULT_LIMITS,
            f + 5 + 229 + 4 + 32,
        ),
        "limit-exceeded": (FIRST * 2, Limits(max_events=1), f),
    }  # fmt: skip


@pytest.mark.parametrize("code", ERROR_CODES)
def test_every_code_has_a_case(code: str) -> None:
    data, limits, offset = _one_case_per_code()[code]
    ctx, _ = fails(data, limits)
    assert where(ctx) == (code, offset, 1, len(FIRST))


def test_file_window_gives_the_same_frames_for_any_chunk_size(tmp_path: Path) -> None:
    data = FIRST + encode_frame(INTENT) + encode_frame(FULL) + FIRST[:-3]
    path = tmp_path / "x.log"
    path.write_bytes(data)
    want = valid_prefix(data)
    for chunk in (1, 7, 300, 1 << 20):
        with path.open("rb") as handle:
            window = FileWindow(handle, len(data), str(path), chunk=chunk)
            frames, error = [], None
            try:
                for frame in decode_frames(window):
                    frames.append(frame)
            except SignalLogError as exc:
                error = exc
        assert [f.raw for f in frames] == [FIRST, encode_frame(INTENT), encode_frame(FULL)]
        assert error is not None and want.error is not None
        assert error.context == want.error.context


def test_a_file_that_shrinks_while_read_is_a_source_error(tmp_path: Path) -> None:
    path = tmp_path / "x.log"
    count = (2 << 20) // len(FIRST)  # two read chunks' worth of frames
    path.write_bytes(FIRST * count)
    frames = read_frames(path)
    next(frames)  # the first chunk is resident now; cut the file under the reader
    with path.open("r+b") as handle:
        handle.truncate(len(FIRST) * 10)
    with pytest.raises(SourceError) as info:
        for _ in frames:
            pass
    assert "shrank" in info.value.message
    assert info.value.context["path"] == str(path)


def test_a_missing_file_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as info:
        list(read_frames(tmp_path / "absent.log"))
    assert str(tmp_path / "absent.log") in info.value.message


def test_the_inspect_schema_names_every_code() -> None:
    import schemas

    doc = schemas.load("signal-log-inspect")
    codes = doc["properties"]["errors"]["items"]["properties"]["code"]["enum"]
    assert sorted(codes) == sorted(ERROR_CODES)
