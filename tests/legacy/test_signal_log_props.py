"""Property tests: encode→decode round trips, and damaged logs fail only as SignalLogError."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bbg_core.errors import SignalLogError
from importers.signal_log import (
    BoxMove,
    DeltaPi,
    Frame,
    Intent,
    Link,
    Signal,
    decode_frames,
    encode_frame,
    valid_prefix,
)
from tests.legacy._support import LOCAL

b32 = st.binary(min_size=32, max_size=32)
u64 = st.integers(0, 2**64 - 1)
links = st.builds(Link, b32, b32, b32, b32, u64, st.integers(-128, 127), u64)
box_moves = st.one_of(
    st.builds(BoxMove, b32, st.just(1), b32, u64),
    st.builds(BoxMove, b32, st.just(0)),
)
deltas = st.builds(DeltaPi, b32, u64)


@st.composite
def signals(draw: st.DrawFn) -> Signal:
    kind = draw(st.sampled_from(["none", "box_moves", "box_moves+delta_pi"]))
    moves = None if kind == "none" else tuple(draw(st.lists(box_moves, max_size=3)))
    delta = tuple(draw(st.lists(deltas, max_size=3))) if kind == "box_moves+delta_pi" else None
    return Signal(
        draw(b32), draw(u64), draw(b32), draw(u64), tuple(draw(st.lists(links, max_size=3))),
        moves, delta,
    )  # fmt: skip


bodies = st.one_of(signals(), st.builds(Intent, b32, u64, b32, st.binary(min_size=64, max_size=64)))
logs = st.lists(bodies, max_size=6)
SMALL = (LOCAL / "signals-small.log").read_bytes()


def decode_until_error(data: bytes) -> tuple[list[Frame], SignalLogError | None]:
    """Every frame the decoder yields, and the error that stopped it (only SignalLogError)."""
    frames: list[Frame] = []
    try:
        for frame in decode_frames(data):
            frames.append(frame)
    except SignalLogError as exc:
        return frames, exc
    return frames, None


def check_prefix_invariants(data: bytes, frames: list[Frame], error: SignalLogError | None) -> None:
    end = 0
    for i, frame in enumerate(frames):
        assert (frame.index, frame.start) == (i, end)
        assert frame.raw == data[frame.start : frame.end]
        end = frame.end
    if error is None:
        assert end == len(data)
        return
    ctx = error.context
    assert ctx["frame_index"] == len(frames)
    assert ctx["frame_start"] == end  # no frame past the error, none skipped
    assert end <= ctx["offset"] <= len(data)
    prefix = valid_prefix(data)
    assert (prefix.events, prefix.end) == (len(frames), end)


@settings(deadline=None)  # timing varies on CI machines; correctness does not
@given(logs)
def test_round_trip(items: list[Signal | Intent]) -> None:
    encoded = [encode_frame(body) for body in items]
    data = b"".join(encoded)
    frames, error = decode_until_error(data)
    assert error is None
    assert [f.body for f in frames] == items
    assert [f.raw for f in frames] == encoded
    check_prefix_invariants(data, frames, error)


@settings(deadline=None)  # timing varies on CI machines; correctness does not
@given(logs, st.data())
def test_truncation_is_a_torn_tail_at_the_cut(
    items: list[Signal | Intent], data: st.DataObject
) -> None:
    # An empty draw falls back to the real fixture, cut at its own frame boundaries.
    encoded = [encode_frame(body) for body in items] or [f.raw for f in decode_frames(SMALL)]
    whole = b"".join(encoded)
    cut = data.draw(st.integers(0, len(whole)))
    frames, error = decode_until_error(whole[:cut])
    check_prefix_invariants(whole[:cut], frames, error)
    boundaries = [0]
    for raw in encoded:
        boundaries.append(boundaries[-1] + len(raw))
    if cut in boundaries:
        assert error is None
    else:
        assert error is not None
        ctx = error.context
        assert (ctx["code"], ctx["offset"]) == ("truncated-frame", cut)
        assert ctx["frame_start"] == max(b for b in boundaries if b < cut)


@settings(deadline=None)  # timing varies on CI machines; correctness does not
@given(st.one_of(logs.map(lambda xs: b"".join(map(encode_frame, xs))), st.just(SMALL)), st.data())
def test_byte_flips_fail_cleanly(whole: bytes, data: st.DataObject) -> None:
    if not whole:
        whole = SMALL
    flips = data.draw(
        st.lists(
            st.tuples(st.integers(0, len(whole) - 1), st.integers(0, 255)), min_size=1, max_size=4
        )
    )
    damaged = bytearray(whole)
    for pos, value in flips:
        damaged[pos] = value
    frames, error = decode_until_error(bytes(damaged))
    check_prefix_invariants(bytes(damaged), frames, error)
    # Frames wholly before the first damaged byte are exactly the original frames.
    first = min(pos for pos, _ in flips)
    originals, _ = decode_until_error(whole)
    intact = [f for f in originals if f.end <= first]
    assert frames[: len(intact)] == intact
