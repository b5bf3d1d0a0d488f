"""bbg's CLI frame log: the decoder against bbg's own tests, our strict codes, the fixtures.

Transcribed from cyberia-to/bbg ``cli/src/frame.rs`` (its ``mod tests``) at commit
742075ae95beaea9d98089b6eddb8905ffd067c2 (signal_frame_roundtrips, intent_frame_roundtrips,
mixed_log_decodes_in_order) and the later tade-era version of the same file (index id
69542656545; the index does not name its commit), which adds
rejects_n_links_that_cannot_fit_in_the_payload, rejects_n_links_larger_than_the_records_
remaining, rejects_n_moves_that_cannot_fit_in_the_payload and accepts_a_well_formed_signal_
with_links_and_moves.  bbg's ``decode_events`` drops a payload it cannot read (``None``) and
skips what it does not know; the import refuses each such frame with a named code instead.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

import schemas
from bbg_core.errors import FrameLogError, SignalLogError
from importers.frame_log import (
    ERROR_CODES,
    CliFrame,
    CliLink,
    CliSignal,
    Finalize,
    Limits,
    decode_frames,
    encode_cli_signal,
    encode_frame,
    frame,
    inspect_frame_log,
    read_frames,
)
from importers.signal_log import BoxMove, Intent
from tests.legacy._support import expected, fixture_params, hemera_module

LINK_BYTES = 105  # bbg cli/src/frame.rs LINK_BYTES


def b(byte: int, n: int = 32) -> bytes:
    return bytes([byte]) * n


def sig() -> CliSignal:
    """bbg's ``sig()``."""
    return CliSignal(b(1), 7, (CliLink(b(2), b(3), b(0), 4, 1),), ())


def error(data: bytes, limits: Limits | None = None) -> dict[str, Any]:
    seen: list[CliFrame] = []
    with pytest.raises(FrameLogError) as info:
        for item in decode_frames(data, limits=limits or Limits(), path="log"):
            seen.append(item)
    ctx = info.value.context
    assert ctx["frame_index"] == len(seen)
    assert ctx["frame_start"] == (seen[-1].end if seen else 0)
    return ctx


def where(ctx: dict[str, Any]) -> tuple[Any, Any, Any, Any]:
    return ctx["code"], ctx["offset"], ctx["frame_index"], ctx["frame_start"]


# -- bbg cli/src/frame.rs tests ------------------------------------------------------------


def test_signal_frame_roundtrips() -> None:
    data = encode_frame(sig())
    assert data[0] == 0x1F  # tape marker
    assert data[1:2] == b"!"
    [event] = decode_frames(data)
    body = event.body
    assert isinstance(body, CliSignal)
    assert body.neuron == b(1) and body.height == 7
    assert len(body.links) == 1 and body.links[0].amount == 4 and body.links[0].to == b(3)


def test_intent_frame_roundtrips() -> None:
    intent = Intent(b(9), 3, b(5), b(0, 64))
    [event] = decode_frames(encode_frame(intent))
    assert isinstance(event.body, Intent)
    assert event.body.h0 == 3 and event.body.neuron == b(9)


def test_mixed_log_decodes_in_order() -> None:
    log = encode_frame(sig()) + encode_frame(Finalize()) + encode_frame(sig())
    events = [f.body for f in decode_frames(log)]
    assert len(events) == 3
    assert isinstance(events[0], CliSignal)
    assert isinstance(events[1], Finalize)
    assert isinstance(events[2], CliSignal)


def payload_frame(payload: bytes) -> bytes:
    return frame("!", payload)


HEAD = bytes(32) + struct.pack("<Q", 7)  # neuron, height


@pytest.mark.parametrize(
    "payload",
    [
        HEAD + struct.pack("<I", 0xFFFF_FFFF),  # n_links: malicious
        HEAD + struct.pack("<I", 2) + bytes(LINK_BYTES),  # claims 2 links, room for only 1
        HEAD + struct.pack("<I", 0) + struct.pack("<I", 0xFFFF_FFFF),  # n_moves: malicious
    ],
    ids=[
        "rejects_n_links_that_cannot_fit_in_the_payload",
        "rejects_n_links_larger_than_the_records_remaining",
        "rejects_n_moves_that_cannot_fit_in_the_payload",
    ],
)
def test_counts_that_cannot_fit_are_refused(payload: bytes) -> None:
    data = payload_frame(payload)
    assert where(error(data)) == ("truncated-payload", len(data), 0, 0)


def test_accepts_a_well_formed_signal_with_links_and_moves() -> None:
    body = CliSignal(b(1), 7, (CliLink(b(2), b(3), b(0), 4, -1),), (BoxMove(b(5), 1, b(6), 9),))
    [event] = decode_frames(encode_frame(body))
    decoded = event.body
    assert isinstance(decoded, CliSignal)
    assert len(decoded.links) == 1 and len(decoded.box_moves) == 1
    assert decoded.box_moves[0].nullifier == b(5)
    assert (decoded.box_moves[0].commitment, decoded.box_moves[0].value) == (b(6), 9)
    assert decoded.links[0].valence == -1


# -- the strict rules bbg's lenient reader does not have ---------------------------------------


FIRST = encode_frame(sig())


def test_the_box_move_count_is_not_optional() -> None:
    payload = encode_cli_signal(sig())[:-4]  # bbg's reader drops such a payload
    data = FIRST + payload_frame(payload)
    assert where(error(data)) == ("truncated-payload", len(data), 1, len(FIRST))


def test_bytes_after_the_box_moves_are_trailing() -> None:
    payload = encode_cli_signal(sig()) + b"xy"
    data = FIRST + payload_frame(payload)
    at = len(FIRST) + 5 + len(payload) - 2
    assert where(error(data)) == ("trailing-bytes", at, 1, len(FIRST))


def test_a_flag_other_than_zero_or_one_is_bad_flag() -> None:
    body = encode_cli_signal(CliSignal(b(1), 0, (), (BoxMove(b(5), 0),)))
    payload = body[:-1] + b"\x07"
    data = FIRST + payload_frame(payload)
    assert where(error(data)) == ("bad-flag", len(FIRST) + 4 + 44 + 4 + 32, 1, len(FIRST))


def test_a_finalize_frame_carries_nothing() -> None:
    assert [f.payload_len for f in decode_frames(encode_frame(Finalize()))] == [0]
    data = FIRST + frame(".", b"\x00\x00")
    assert where(error(data)) == ("bad-finalize-length", len(FIRST) + 4, 1, len(FIRST))


@pytest.mark.parametrize("size", [0, 135, 137])
def test_an_intent_is_136_bytes(size: int) -> None:
    data = FIRST + frame("^", bytes(size))
    at = len(FIRST) + 3 + (1 if size < 128 else 2) + min(size, 136)
    assert where(error(data)) == ("bad-intent-length", at, 1, len(FIRST))


def _one_case_per_code() -> dict[str, tuple[bytes, Limits, int]]:
    f = len(FIRST)
    flagged = encode_cli_signal(CliSignal(b(1), 0, (), (BoxMove(b(5), 0),)))[:-1] + b"\x02"
    return {
        "bad-marker": (FIRST + b"\x00", Limits(), f),  # bbg's tape reader would skip it
        "unknown-sigil": (FIRST + frame("#", b""), Limits(), f + 1),  # bbg would skip it
        "bad-renderer": (FIRST + b"\x1f.t\x00", Limits(), f + 2),  # bbg does not check it
        "overlong-leb128": (FIRST + b"\x1f.b\x80\x00", Limits(), f + 3),
        "truncated-frame": (FIRST + FIRST[:-1], Limits(), 2 * f - 1),
        "truncated-payload": (FIRST + frame("!", bytes(43)), Limits(), f + 3 + 1 + 43),
        "trailing-bytes": (FIRST + frame("!", bytes(48) + b"!"), Limits(), f + 4 + 48),
        "bad-intent-length": (FIRST + frame("^", bytes(10)), Limits(), f + 4 + 10),
        "bad-finalize-length": (FIRST + frame(".", b"x"), Limits(), f + 4),
        "bad-flag": (FIRST + frame("!", flagged), Limits(), f + 4 + 44 + 4 + 32),
        "limit-exceeded": (FIRST * 2, Limits(max_events=1), f),
    }


@pytest.mark.parametrize("code", ERROR_CODES)
def test_every_code_has_a_case(code: str) -> None:
    data, limits, offset = _one_case_per_code()[code]
    assert where(error(data, limits)) == (code, offset, 1, len(FIRST))


def test_errors_are_signal_log_errors_of_their_own_class() -> None:
    with pytest.raises(SignalLogError) as info:
        list(decode_frames(FIRST + b"\x00"))
    assert type(info.value) is FrameLogError and info.value.code == "frame-log"


def test_the_inspect_schema_names_every_code() -> None:
    doc = schemas.load("bbg-frame-log-inspect")
    codes = doc["properties"]["errors"]["items"]["properties"]["code"]["enum"]
    assert sorted(codes) == sorted(ERROR_CODES)


def test_log_size_is_checked_first() -> None:
    ctx = error(b"\x00" * 10, Limits(max_log_bytes=9))
    assert where(ctx) == ("limit-exceeded", 0, 0, 0)


# -- the bbg-cli-*.log fixtures (fixtures/legacy/make_real_layouts.py) ------------------------

LOGS = fixture_params("bbg-cli-*.log")
VALID = [p for p in LOGS if expected(p.values[0])["strict"]["valid"]]
INVALID = [p for p in LOGS if not expected(p.values[0])["strict"]["valid"]]


def row(f: CliFrame) -> list[Any]:
    head: list[Any] = [f.start, f.end, f.sigil, f.payload_start, f.payload_len]
    if isinstance(f.body, CliSignal):
        return [*head, len(f.body.links), len(f.body.box_moves), f.body.height]
    return [*head, None, None, None]


@pytest.mark.parametrize("path", VALID)
def test_valid_fixture_reproduces_its_frames(path: Path) -> None:
    exp = expected(path)
    frames = list(read_frames(path))
    assert [row(f) for f in frames] == exp["frames"]
    assert b"".join(f.raw for f in frames) == path.read_bytes()
    report = inspect_frame_log(path, hasher=hemera_module().Hasher)
    schemas.validate(report, "bbg-frame-log-inspect")
    for key in ("event_count", "per_sigil", "blocks", "link_count", "box_move_count",
                "last_height", "sha256", "hemera_source_digest", "size_bytes"):  # fmt: skip
        assert report[key] == exp[key], key
    assert report["lenient_frames"] == [] and report["strict"]["valid"]


@pytest.mark.parametrize("path", INVALID)
def test_invalid_fixture_stops_at_its_error_under_strict(path: Path) -> None:
    exp = expected(path)
    seen = []
    with pytest.raises(FrameLogError) as info:
        for item in read_frames(path):
            seen.append(item)
    want = exp["strict"]["error"]
    assert where(info.value.context) == tuple(
        want[k] for k in ("code", "offset", "frame_index", "frame_start")
    )
    assert len(seen) == exp["strict"]["valid_prefix_events"]
    report = inspect_frame_log(path, hasher=hemera_module().Hasher)
    schemas.validate(report, "bbg-frame-log-inspect")
    assert report["strict"] == exp["strict"]
    # bbg's own reader reads these logs: the report's counts are its events.
    assert report["valid"] and report["event_count"] == exp["event_count"]
    assert report["lenient_frames"] == exp["lenient_frames"]
    assert report["valid_prefix_end"] == exp["valid_prefix_end"]
