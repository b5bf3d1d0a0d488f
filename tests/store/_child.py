"""Child processes for the multi-process tests (run as ``python -m tests.store._child``).

``race STORE NS TAG ROUNDS DIR``: for each round, read the head, touch DIR/ready-R-TAG, wait
for DIR/go-R, then commit the next write from that head; print one JSON line per round.
``writer STORE``: commit one write after another forever, printing each returned head.
``once STORE TAG ROUNDS DIR``: like ``race``, but every round both processes send the *same*
request with ``commit_once``; print whether it won or got Conflict.
``hold STORE READY``: stage many rows inside one transaction, touch READY, then sleep in it.
``turn STORE TIMEOUT``: open the store for writing, waiting up to TIMEOUT seconds for it,
then send the one request every ``turn`` sends (``commit_once`` of the next write after the
head of the ``race`` namespace); print ``{"locked": true}`` or whether it won.
``create STORE N``: create the store (``open_store(create=True)``) with a SIGKILL just before
the N-th file-system change of the store's creation code (the Fjall engine's keyspace
creation and writer, and the records' creation); N = 0 kills nothing and prints how many
such changes it made.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from bbg_core.errors import Conflict, HeadMismatch
from migrate.store import open_store
from tests.store.helpers import birth, follow


def _wait(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"timeout waiting for {path}")
        time.sleep(0.001)


def race(store: str, tag: str, rounds: int, sync: Path) -> None:
    ns = birth("race").namespace
    with open_store(store) as st:
        for r in range(rounds):
            head = st.head(ns)
            assert head is not None
            (sync / f"ready-{r}-{tag}").touch()
            _wait(sync / f"go-{r}")
            w = follow(head, ns, f"{tag}-{r}")
            try:
                got = w.apply(st)
                print(json.dumps({"round": r, "won": True, "index": got.index}), flush=True)
            except HeadMismatch:
                print(json.dumps({"round": r, "won": False, "index": head.index}), flush=True)


def once(store: str, tag: str, rounds: int, sync: Path) -> None:
    ns = birth("once").namespace
    with open_store(store) as st:
        for r in range(rounds):
            head = st.head(ns)
            assert head is not None and head.index == r
            (sync / f"ready-{r}-{tag}").touch()
            _wait(sync / f"go-{r}")
            w = follow(head, ns, f"shared-{r}")  # the same request in both processes
            try:
                got = w.apply_once(st)
                print(json.dumps({"round": r, "won": True, "index": got.index}), flush=True)
            except Conflict:
                print(json.dumps({"round": r, "won": False, "index": head.index}), flush=True)
            # Both leave the round only when its commit is visible to both.
            (sync / f"done-{r}-{tag}").touch()
            _wait(sync / f"next-{r}")


def writer(store: str) -> None:
    with open_store(store) as st:
        w = birth("writer")
        while True:
            got = w.apply(st)
            print(got.index, got.commit.hex(), flush=True)
            w = follow(w, w.namespace, got.index)


def hold(store: str, ready: Path) -> None:
    with open_store(store) as st, st.transaction() as tx:
        tx.put_many(
            "application_content", [(i.to_bytes(32, "big"), b"\x01x" * 100) for i in range(20000)]
        )
        w = follow(st.head(birth("base").namespace), birth("base").namespace, "uncommitted")  # type: ignore[arg-type]
        tx.put("application_history", w.namespace + (1).to_bytes(8, "big"), w.new_head.commit)
        ready.touch()
        time.sleep(600)


def turn(store: str, timeout: float) -> None:
    from bbg_core.errors import Locked

    ns = birth("race").namespace
    try:
        st = open_store(store, busy_timeout=timeout)
    except Locked as exc:
        print(json.dumps({"locked": True, "message": exc.message}), flush=True)
        return
    with st:
        w = follow(birth("race"), ns, "turn")  # the same request in every process
        try:
            got = w.apply_once(st)
            print(json.dumps({"won": True, "index": got.index}), flush=True)
        except Conflict:
            print(json.dumps({"won": False, "index": st.head(ns).index}), flush=True)  # type: ignore[union-attr]


def create(store: str, target: int) -> None:
    from migrate.store import creation, keyspace_store
    from migrate.store.fjall import writer as fjall_writer
    from tests.fjall.crash_runner import _KillingOs

    killing = _KillingOs(target)
    for module in (keyspace_store, fjall_writer, creation):
        module.os = killing  # type: ignore[attr-defined]
    open_store(store, create=True).close()
    print(killing.seen, flush=True)


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "race":
        race(args[0], args[1], int(args[2]), Path(args[3]))
    elif cmd == "once":
        once(args[0], args[1], int(args[2]), Path(args[3]))
    elif cmd == "writer":
        writer(args[0])
    elif cmd == "hold":
        hold(args[0], Path(args[1]))
    elif cmd == "turn":
        turn(args[0], float(args[1]))
    elif cmd == "create":
        create(args[0], int(args[1]))
    else:
        raise SystemExit(f"unknown command {cmd}")
