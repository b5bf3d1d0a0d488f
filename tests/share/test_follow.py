"""tail --follow: new commits stream as they land, through WAL checkpoints, until Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import schemas
from migrate.share import follow
from tests.conftest import ROOT
from tests.share.helpers import check_event_lines, tail_bytes
from tests.share.stores import birth

CHILD = birth("child").namespace.hex()


def test_follow_streams_new_commits_through_truncate_checkpoints(
    graph: Path, spawn_writer: Callable[..., subprocess.Popen[str]]
) -> None:
    initial = check_event_lines(tail_bytes(graph))
    seen: list[dict[str, object]] = []
    deadline = time.monotonic() + 60
    stream = follow(graph, poll=0.02)
    # The first event fixes the snapshot of the initial tail; only then does the writer start.
    seen.append(next(stream))
    writer = spawn_writer(graph, 40, checkpoint=True)
    try:
        for event in stream:
            schemas.validate(event, "event")
            seen.append(event)
            child = [e for e in seen if e.get("namespace") == CHILD]
            if child and child[-1]["index"] == 40:
                break
            assert time.monotonic() < deadline, "follow did not see the writer's commits"
    finally:
        stream.close()
    writer.communicate(timeout=30)
    assert writer.returncode == 0
    # First the tail as it was, then the child's 41 commits (birth + 40) in index order.
    assert seen[: len(initial)] == initial
    new = seen[len(initial):]
    child_new = [e for e in new if e.get("namespace") == CHILD]
    assert [e["index"] for e in child_new] == list(range(41))
    # The rows groups that changed (each commit carries one orphan record) come along too.
    final = {e["event"] for e in check_event_lines(tail_bytes(graph))}
    assert {e["event"] for e in child_new} <= final
    assert len({e["event"] for e in seen}) == len(seen)  # nothing streamed twice


def test_since_skips_the_initial_tail(graph: Path) -> None:
    total = len(tail_bytes(graph).splitlines())
    stream = follow(graph, total, poll=0.01, stop=lambda: True)
    assert list(stream) == []


def test_ctrl_c_exits_130_cleanly(graph: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "migrate", "--store", str(graph), "tail", "--follow",
         "--poll", "0.05"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    first = proc.stdout.readline()
    schemas.validate(json.loads(first), "event")
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    # Read through the same buffered pipe as readline() did (communicate() would skip
    # what that buffer already holds).
    out = proc.stdout.read()
    assert proc.stderr is not None
    err = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    assert proc.wait(timeout=30) == 130, err
    assert b"Traceback" not in err
    check_event_lines(first + out)
