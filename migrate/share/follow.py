"""``tail --follow``: the committed history, then each new commit as it lands.

See :func:`follow`.  Events are exactly those of :mod:`migrate.share.events`; only the order in
which new ones arrive is the order in which the polls discover them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

from migrate.share.common import damaged_reads, open_readonly, require_sound
from migrate.share.events import Event, iter_events, namespace_events, namespaces, rows_events
from migrate.store.connection import Connection


def follow(
    store_dir: Path,
    since: int = 0,
    *,
    poll: float = 0.5,
    stop: Callable[[], bool] = lambda: False,
) -> Iterator[Event]:
    """:func:`tail`, then every new commit as it is committed, until ``stop()`` or Ctrl-C.

    After the initial tail, each poll that sees a new ``last_transaction`` emits, for each
    namespace in byte order, the commit events past the head already streamed, then the rows
    events whose group changed (an event id not streamed before for that group).  Memory holds
    one head per namespace and the event ids of the current rows groups — not the history.
    The connection is read-only and holds no read transaction between polls, so the writer
    can checkpoint (even ``TRUNCATE``) the WAL at any time.
    """
    with open_readonly(store_dir, live=True) as conn, damaged_reads(conn.path):
        with conn.read():
            require_sound(conn, "exported")
            heads = dict(namespaces(conn))
            yield from iter_events(conn, since)
            groups = _group_ids(conn)
            seen = _last_transaction(conn)
        while not stop():
            time.sleep(poll)
            with conn.read():
                now = _last_transaction(conn)
                if now == seen:
                    continue
                seen = now
                for namespace, head in list(namespaces(conn)):
                    known = heads.get(namespace)
                    if known is None or head.index > known.index:
                        start = 0 if known is None else known.index + 1
                        yield from namespace_events(conn, namespace, start)
                        heads[namespace] = head
                fresh = _group_ids(conn)
                if fresh != groups:
                    for group, event in rows_events(conn):
                        if event["event"] not in groups.get(group, ()):
                            yield event
                    groups = fresh


def _group_ids(conn: Connection) -> dict[tuple[str, int], tuple[str, ...]]:
    """The event ids of every rows group (what follow remembers instead of the rows)."""
    out: dict[tuple[str, int], tuple[str, ...]] = {}
    for group, event in rows_events(conn):
        out[group] = out.get(group, ()) + (event["event"],)
    return out


def _last_transaction(conn: Connection) -> int:
    row = conn.one("SELECT last_transaction FROM bbg_storage_v1 WHERE id = 1")
    return int(row[0]) if row else 0
