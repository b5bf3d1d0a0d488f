"""Every Signal log fixture reproduces its ``.expected.json`` (golden pairs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import schemas
from bbg_core.errors import SignalLogError
from importers.signal_log import (
    Frame,
    Signal,
    inspect_signal_log,
    looks_like_signal_log,
    read_frames,
    valid_prefix,
)
from importers.text_archive import looks_like_text_archive
from tests.legacy._support import expected, fixture_params, hemera_module, legacy_files

LOGS = fixture_params("signals-*.log")
VALID = [p for p in LOGS if expected(p.values[0])["valid"]]
INVALID = [p for p in LOGS if not expected(p.values[0])["valid"]]


def frame_row(frame: Frame) -> list[Any]:
    """One row of the fixtures' ``frames`` table."""
    row: list[Any] = [
        frame.start,
        frame.end,
        frame.sigil,
        frame.payload_start,
        frame.payload_len,
    ]
    if isinstance(frame.body, Signal):
        return [*row, frame.body.suffix, len(frame.body.links), frame.body.step]
    return [*row, None, None, None]


def test_the_fixture_set_is_complete() -> None:
    names = {p.name for p in legacy_files("signals-*.log")}
    assert {
        "signals-small.log",
        "signals-empty.log",
        "signals-truncated-tail.log",
        "signals-overlong-leb.log",
        "signals-unknown-sigil.log",
        "signals-trailing-bytes.log",
    } <= names


@pytest.mark.parametrize("path", VALID)
def test_valid_log_reproduces_frames(path: Path) -> None:
    exp = expected(path)
    frames = list(read_frames(path))
    assert exp["frames_columns"] == [
        "start", "end", "sigil", "payload_start", "payload_len", "suffix", "links", "step"
    ]  # fmt: skip
    assert [frame_row(f) for f in frames] == exp["frames"]
    assert len(frames) == exp["event_count"]
    raw = path.read_bytes()
    assert b"".join(f.raw for f in frames) == raw
    for frame in frames:
        assert raw[frame.start : frame.end] == frame.raw
        assert frame.payload == raw[frame.payload_start : frame.payload_end]


@pytest.mark.parametrize("path", VALID)
def test_valid_log_counts(path: Path) -> None:
    exp = expected(path)
    report = inspect_signal_log(path, hasher=hemera_module().Hasher)
    schemas.validate(report, "signal-log-inspect")
    assert report["valid"] is True
    assert report["errors"] == []
    assert report["event_count"] == exp["event_count"]
    assert report["per_sigil"] == exp["per_sigil"]
    assert report["signal_suffixes"] == exp["signal_suffixes"]
    assert report["valid_prefix_events"] == exp["event_count"]
    assert report["valid_prefix_end"] == exp["size_bytes"] == report["size_bytes"]
    assert report["sha256"] == exp["sha256"]
    assert report["hemera_source_digest"] == exp["hemera_source_digest"]


@pytest.mark.parametrize("path", INVALID)
def test_invalid_log_stops_at_its_error(path: Path) -> None:
    exp = expected(path)
    seen: list[Frame] = []
    with pytest.raises(SignalLogError) as info:
        for frame in read_frames(path):
            seen.append(frame)
    ctx = info.value.context
    want = exp["error"]
    assert (ctx["code"], ctx["offset"], ctx["frame_index"], ctx["frame_start"]) == (
        want["code"],
        want["offset"],
        want["frame_index"],
        want["frame_start"],
    )
    assert ctx["path"] == str(path)
    assert str(path) in info.value.message and str(want["offset"]) in info.value.message
    assert len(seen) == exp["valid_prefix_events"]
    assert (seen[-1].end if seen else 0) == exp["valid_prefix_end"]


@pytest.mark.parametrize("path", INVALID)
def test_invalid_log_valid_prefix(path: Path) -> None:
    exp = expected(path)
    prefix = valid_prefix(path)
    assert prefix.error is not None
    assert prefix.error.context["code"] == exp["error"]["code"]
    assert (prefix.events, prefix.end) == (exp["valid_prefix_events"], exp["valid_prefix_end"])
    assert prefix.size == exp["size_bytes"]
    assert prefix.discarded_bytes == exp["size_bytes"] - exp["valid_prefix_end"]
    # The same answer from the bytes as from the file.
    from_bytes = valid_prefix(path.read_bytes())
    assert (from_bytes.events, from_bytes.end) == (prefix.events, prefix.end)


@pytest.mark.parametrize("path", INVALID)
def test_invalid_log_report(path: Path) -> None:
    exp = expected(path)
    report = inspect_signal_log(path, hasher=hemera_module().Hasher)
    schemas.validate(report, "signal-log-inspect")
    assert report["valid"] is False
    [error] = report["errors"]
    assert {k: error[k] for k in ("code", "offset", "frame_index", "frame_start")} == {
        k: exp["error"][k] for k in ("code", "offset", "frame_index", "frame_start")
    }
    assert report["valid_prefix_events"] == exp["valid_prefix_events"]
    assert report["valid_prefix_end"] == exp["valid_prefix_end"]
    assert report["sha256"] == exp["sha256"]


def test_valid_prefix_of_a_valid_log_is_the_whole_file() -> None:
    [path] = [p for p in legacy_files("signals-small.log")]
    prefix = valid_prefix(path)
    assert prefix.error is None
    assert (prefix.events, prefix.end, prefix.discarded_bytes) == (10, path.stat().st_size, 0)


@pytest.mark.parametrize("path", LOGS)
def test_logs_are_sniffed_by_content(path: Path) -> None:
    exp = expected(path)
    head = path.read_bytes()[:64]
    if not head:  # an empty file is claimed by neither sniffer (ambiguous by design)
        assert not looks_like_signal_log(head) and not looks_like_text_archive(head)
        return
    assert not looks_like_text_archive(head)
    if exp["valid"] or exp["valid_prefix_events"] > 0:  # the first frame is intact
        assert looks_like_signal_log(head)
