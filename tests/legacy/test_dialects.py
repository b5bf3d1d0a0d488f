"""``detect`` tells the two frame-log dialects apart by content.

The old cyb Signal log (foculus' legacy profile) and bbg's CLI log share the tape framing and
the intent layout; they differ in the ``.`` finalize frame (bbg only) and in the signal
payload (cyb: neuron ‖ step ‖ prev ‖ height ‖ 145-byte links [‖ sections]; bbg: neuron ‖
height ‖ 105-byte links ‖ box moves).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from importers import frame_log, signal_log
from importers.frame_log import CliLink, CliSignal, Finalize, frame_log_dialect, signal_dialect
from importers.signal_log import BoxMove, Intent, Link, Signal
from migrate.probe.detect import detect
from tests.legacy._support import expected, fixture_params

FRAME_LOGS = fixture_params("*.log")


def b(byte: int, n: int = 32) -> bytes:
    return bytes([byte]) * n


@pytest.mark.parametrize("path", FRAME_LOGS)
def test_every_log_fixture_is_detected_as_its_dialect(path: Path) -> None:
    kind = detect(path)["kind"]
    if path.stat().st_size == 0:
        assert kind == "unknown"  # an empty file is any kind: the operator says which
    elif path.name.startswith("bbg-cli-"):
        assert kind == "bbg-frame-log"
    else:
        assert kind == "signal-log", expected(path).get("description")


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "log"
    path.write_bytes(data)
    return path


def test_signals_alone_decide(tmp_path: Path) -> None:
    bbg = frame_log.encode_frame(CliSignal(b(1), 7, (CliLink(b(2), b(3), b(0), 4, 1),), ()))
    link = Link(b(5), b(6), b(7), b(8), 1, 0, 2)
    cyb = signal_log.encode_frame(Signal(b(1), 3, b(2), 4, (link,)))
    assert frame_log_dialect(write(tmp_path, bbg * 3)) == "bbg-frame-log"
    assert frame_log_dialect(write(tmp_path, cyb * 3)) == "signal-log"


def test_a_finalize_frame_decides_after_any_intents(tmp_path: Path) -> None:
    intent = frame_log.encode_frame(Intent(b(9), 3, b(5), b(0, 64)))
    finalize = frame_log.encode_frame(Finalize())
    assert frame_log_dialect(write(tmp_path, intent * 5 + finalize)) == "bbg-frame-log"
    assert detect(write(tmp_path, finalize))["kind"] == "bbg-frame-log"


def test_intents_alone_are_the_old_signal_log(tmp_path: Path) -> None:
    # Byte for byte the same in both dialects: kept as it always was.
    intent = signal_log.encode_frame(Intent(b(9), 3, b(5), b(0, 64)))
    assert detect(write(tmp_path, intent * 4))["kind"] == "signal-log"


def test_a_signal_valid_in_neither_decides_by_whose_counts_fit() -> None:
    bbg = frame_log.encode_cli_signal(
        CliSignal(b(1), 7, (CliLink(b(2), b(3), b(0), 4, 1),), (BoxMove(b(5), 0),))
    )
    bad_bbg = bbg[:-1] + b"\x02"  # a bad flag: bbg's layout still fits
    assert signal_dialect(bad_bbg) == "bbg-frame-log"
    cyb = signal_log.encode_signal(Signal(b(1), 3, b(2), 4, (), (BoxMove(b(5), 0),)))
    bad_cyb = cyb[:-1] + b"\x02"
    assert signal_dialect(bad_cyb) == "signal-log"
    # Too short for either layout's link count: no decision from this frame.
    assert signal_dialect(bytes(20)) is None


def test_a_broken_frame_ends_the_look(tmp_path: Path) -> None:
    intent = signal_log.encode_frame(Intent(b(9), 3, b(5), b(0, 64)))
    finalize = frame_log.encode_frame(Finalize())
    assert frame_log_dialect(write(tmp_path, intent + b"\x00" + finalize)) == "signal-log"


def test_links_limit_no_longer_misreports_a_bbg_log() -> None:
    # The old cyb reading of bbg's sig(): its bytes 80..84 (inside a link's `to`) as a count.
    sig = CliSignal(b(1), 7, (CliLink(b(2), b(3), b(0), 4, 1),), ())
    payload = frame_log.encode_cli_signal(sig)
    (as_cyb_count,) = struct.unpack_from("<I", payload, 80)
    assert as_cyb_count == 0x03030303  # far over foculus' MAX_LINKS: "links limit"
    assert signal_dialect(payload) == "bbg-frame-log"
