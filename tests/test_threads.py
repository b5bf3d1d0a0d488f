"""Worker threads give way to the thread driving the work (:mod:`bbg_core.threads`): the
hemera pool's and the content-id checker's threads run at a lower priority (Linux), the
calling thread keeps its own."""

from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from bbg_core import threads

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="per-thread niceness: Linux")


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def _in_pool(initializer: object = threads.give_way) -> int:
    with ThreadPoolExecutor(max_workers=1, initializer=initializer) as pool:  # type: ignore[arg-type]
        return pool.submit(_nice).result()


def test_a_worker_gives_way_and_the_caller_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BBG_MIGRATE_WORKER_NICE", raising=False)
    mine = _nice()
    assert _in_pool() == min(19, mine + threads.WORKER_NICE) > mine or mine == 19
    assert _nice() == mine  # only the worker's own priority moved
    monkeypatch.setenv("BBG_MIGRATE_WORKER_NICE", "2")
    assert _in_pool() == min(19, mine + 2)
    for off in ("0", "-3"):
        monkeypatch.setenv("BBG_MIGRATE_WORKER_NICE", off)
        assert _in_pool() == mine
    monkeypatch.setenv("BBG_MIGRATE_WORKER_NICE", "lots")  # nonsense: the default
    assert _in_pool() == min(19, mine + threads.WORKER_NICE)


def test_the_pools_of_a_run_give_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hemera pool and the content-id checker make their threads with ``give_way``."""
    monkeypatch.delenv("BBG_MIGRATE_WORKER_NICE", raising=False)
    from hashing.hemera import _c as hemera_c
    from migrate.rules import content_ids

    mine = _nice()
    monkeypatch.setattr(hemera_c, "_pool", None)  # a pool of this test's own
    pool = hemera_c._executor(1)
    try:
        assert pool.submit(_nice).result() == min(19, mine + threads.WORKER_NICE)
    finally:
        pool.shutdown()
    checker = content_ids.ContentIds(lambda code, detail, pos: None, content_ids.DataStats(),
                                     lookup=None, content_rows=list)
    try:
        assert checker._pool.submit(_nice).result() == min(19, mine + threads.WORKER_NICE)
    finally:
        checker._pool.shutdown()
