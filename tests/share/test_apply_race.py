"""A refused ``apply`` removes only what it created and nobody else wrote to.

Race with real processes in the risky ordering: A applies (from a pipe) into a store path that
does not exist yet, so it creates the store; while A is still reading its stream, B applies a
good stream into the same path and is waiting for the store; then A's stream turns out bad.
A must exit 3, B must exit 0, and B's events must be in the store afterwards.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.procs import holds_open, start, wait_until
from tests.share.helpers import digest, logical, tail_bytes

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="watches /proc/PID/fd for the ordering"
)


@pytest.mark.parametrize("trial", range(3))
def test_a_refused_apply_keeps_what_a_concurrent_apply_committed(
    graph: Path, tmp_path: Path, trial: int
) -> None:
    good = tail_bytes(graph)
    stream_b = tmp_path / "b.ndjson"
    stream_b.write_bytes(good)
    dest = tmp_path / f"new-{trial}"
    a = start("apply", "-", "--store", str(dest), stdin=subprocess.PIPE)
    b: subprocess.Popen[bytes] | None = None
    try:
        assert a.stdin is not None
        a.stdin.write(good.splitlines(keepends=True)[0])  # one good line: A is under way
        a.stdin.flush()
        wait_until("A created the store", lambda: (dest / "bbg.sqlite3").exists())
        b = start("apply", str(stream_b), "--store", str(dest))
        pid = b.pid
        wait_until("B waits for the store", lambda: holds_open(pid, dest))
        _, a_err = a.communicate(b"{not an event\n", timeout=120)  # A's stream is refused
        _, b_err = b.communicate(timeout=120)
    finally:
        for p in (a, b):
            if p is not None:
                if p.poll() is None:
                    p.kill()
                with p:  # closes its pipes
                    p.wait()
    assert a.returncode == 3, a_err
    assert b.returncode == 0, b_err
    assert digest(dest) == digest(graph)
    assert logical(tail_bytes(dest)) == logical(good)


def test_a_refused_apply_into_a_new_path_still_leaves_nothing(
    graph: Path, tmp_path: Path
) -> None:
    dest = tmp_path / "fresh"
    bad = tail_bytes(graph).splitlines(keepends=True)[0] + b"{oops\n"
    a = start("apply", "-", "--store", str(dest), stdin=subprocess.PIPE)
    _, err = a.communicate(bad, timeout=120)
    assert a.returncode == 3, err
    assert not dest.exists()
