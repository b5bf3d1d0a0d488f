"""``bbg-migrate --store S mcp``: a read-only Model Context Protocol server on stdio.

Built on the official ``mcp`` Python SDK (the optional extra ``bbg-migrate[mcp]``; imported only
when the server starts, so the base CLI does not need it).  Every tool opens the store through
the project's one read-only handle (:func:`migrate.store.readonly.open_readonly`), answers from
one read snapshot, and closes it again: the server holds nothing open between calls and never
writes.  On SQLite that is ``mode=ro`` / ``immutable``, ``query_only`` and a write-denying
authorizer; on the Fjall engine (the real BBG database) a point-in-time snapshot of the
keyspace that takes no lock (:func:`migrate.store.keyspace_store.open_fjall_view`), so the
server reads beside bbg's live owner.  ``tail`` gives the same events as ``bbg-migrate tail``
on either engine (on Fjall one transaction per write batch).

Read tools (all bounded; every answer is at most :data:`MAX_RESPONSE` bytes of JSON):

| tool | answer |
|---|---|
| ``heads(after, limit)`` | namespaces with their heads, in byte order, a page at a time |
| ``history(namespace, after, limit)`` | history entries by committed position (index) |
| ``resolve(namespace, request)`` | the head a request produced, or null |
| ``content(id, max_bytes)`` | one content row: codec, size, the first ``max_bytes`` bytes |
| ``tail(since, skip, limit)`` | event/1 events after ledger transaction ``since`` |
| ``ledger(since, limit)`` | ledger transactions: tx, at, kind, ref, origin, events, heads |
| ``doctor()`` | the doctor report |
| ``inspect()`` | the inspect report of the store |

Mutating tools exist only with ``--write`` (off by default): ``apply_events(events)`` applies
event/1 lines as ``bbg-migrate apply`` does -- through the store API in one write transaction
(on Fjall: one fsynced journal batch under ``bbg.lock``, taken for that call only; Locked
while bbg's owner holds it).  Without ``--write`` the server does not offer it and a call to
it is refused.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bbg_core.errors import MigrateError, UsageError
from migrate.share.common import canonical
from migrate.store import graph, ledger
from migrate.store.codec import ID_LEN, Head
from migrate.store.connection import Connection
from migrate.store.readonly import ReadHandle, open_readonly

MAX_RESPONSE = 256 * 1024  # bytes of JSON per answer
MAX_PAGE = 256  # entries per page
MAX_CONTENT = 64 * 1024  # content bytes per answer (hex doubles it)
MAX_VALUE = 4096  # content bytes shown inside a tail event; longer values are elided


def _id(value: str, what: str) -> bytes:
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raw = b""
    if len(raw) != ID_LEN:
        raise UsageError(f"{what} must be 64 hex digits, not {value!r}")
    return raw


def _limit(limit: int) -> int:
    if not 1 <= limit <= MAX_PAGE:
        raise UsageError(f"limit must be 1..{MAX_PAGE} (pages are bounded), not {limit}")
    return limit


def _size(doc: Any) -> int:
    return len(canonical(doc))


def _head(head: Head | None) -> dict[str, Any] | None:
    return None if head is None else {"index": head.index, "commit": head.commit.hex()}


def _elide(event: dict[str, Any]) -> dict[str, Any]:
    """``event`` with content values longer than :data:`MAX_VALUE` bytes cut (use ``content``)."""
    facts = []
    for fact in event.get("asserted", []):
        value = fact.get("value") if fact.get("fact") == "content" else None
        if isinstance(value, str) and len(value) > 2 * MAX_VALUE:
            fact = {**fact, "value": value[: 2 * MAX_VALUE], "value_bytes": len(value) // 2,
                    "value_elided": True}  # fmt: skip
        facts.append(fact)
    return {**event, "asserted": facts}


def _records(handle: ReadHandle) -> Connection:
    """The SQLite database holding the records: the store's own file, or on the Fjall engine
    the records beside the keyspace (an empty one for a store the cyber code wrote)."""
    if isinstance(handle, Connection):
        return handle
    records = getattr(handle, "records", None)
    assert isinstance(records, Connection)
    return records


class Tools:
    """The tools, as plain functions over the store (the MCP layer only wraps them)."""

    def __init__(self, store_dir: Path) -> None:
        self.store_dir = Path(store_dir)

    def heads(self, after: str | None = None, limit: int = 100) -> dict[str, Any]:
        low = b"" if after is None else _id(after, "after")
        out: list[dict[str, Any]] = []
        with open_readonly(self.store_dir) as conn, conn.read():
            for key, head in graph.heads_after(conn, low, _limit(limit) + 1):
                out.append({"namespace": key.hex(), **(_head(head) or {})})
        more = len(out) > limit
        out = out[:limit]
        return {"heads": out, "next_after": out[-1]["namespace"] if more else None}

    def history(self, namespace: str, after: int | None = None, limit: int = 100) -> dict[str, Any]:
        ns = _id(namespace, "namespace")
        with open_readonly(self.store_dir) as conn, conn.read():
            page = graph.history(conn, ns, after, _limit(limit))
            head = graph.head(conn, ns)
        entries = [{"index": h.index, "commit": h.commit.hex()} for h in page]
        more = bool(page) and head is not None and page[-1].index < head.index
        return {"namespace": namespace, "head": _head(head), "entries": entries,
                "next_after": page[-1].index if more else None}  # fmt: skip

    def resolve(self, namespace: str, request: str) -> dict[str, Any]:
        ns, req = _id(namespace, "namespace"), _id(request, "request")
        with open_readonly(self.store_dir) as conn, conn.read():
            return {"namespace": namespace, "request": request,
                    "head": _head(graph.resolve(conn, ns, req))}  # fmt: skip

    def content(self, id: str, max_bytes: int = 4096) -> dict[str, Any]:
        cid = _id(id, "id")
        if not 0 <= max_bytes <= MAX_CONTENT:
            raise UsageError(f"max_bytes must be 0..{MAX_CONTENT}, not {max_bytes}")
        with open_readonly(self.store_dir) as conn, conn.read():
            row = graph.content_prefix(conn, cid, max_bytes + 1)
            excised = row is None and ledger.is_excised(_records(conn), "content",
                                                        cid) is not None  # fmt: skip
        if row is None:
            return {"id": id, "found": False, "excised": excised}
        head, size = row
        payload = head[1:]
        return {"id": id, "found": True, "codec": head[0], "size": size - 1,
                "payload": payload.hex(), "truncated": size - 1 > len(payload)}  # fmt: skip

    def tail(self, since: int = 0, skip: int = 0, limit: int = 100) -> dict[str, Any]:
        from migrate.share.events import iter_events
        from migrate.share.events_fjall import view_events
        from migrate.store.keyspace import FjallView

        events: list[dict[str, Any]] = []
        used = 0
        at, done = since, skip  # the cursor: after transaction `at`, `done` events of the next
        with open_readonly(self.store_dir) as conn, conn.read():
            found = (view_events(conn, since, skip) if isinstance(conn, FjallView)
                     else iter_events(_records(conn), since, skip))  # fmt: skip
            for event in found:
                tx = int(event["tx"])
                if tx != at + 1:
                    at, done = tx - 1, 0
                doc = _elide(event)
                size = _size(doc)
                if len(events) >= _limit(limit) or (events and used + size > MAX_RESPONSE - 4096):
                    return {"events": events, "next": {"since": at, "skip": done}}
                events.append(doc)
                used += size
                done += 1
        return {"events": events, "next": None}

    def ledger(self, since: int = 0, limit: int = 50) -> dict[str, Any]:
        out: list[dict[str, Any]] = []
        with open_readonly(self.store_dir) as conn, conn.read():
            records = _records(conn)
            for entry in ledger.entries(records, since, since + _limit(limit)):
                moved = [
                    {"namespace": ns.hex(), "before": _head(b), "after": _head(a)}
                    for ns, b, a, _ in ledger.heads_of(records, entry.tx)
                ]
                origin = entry.origin
                out.append({
                    "tx": entry.tx, "at": entry.at, "kind": entry.kind, "ref": entry.ref,
                    "imported_at": None if origin is None else {"tx": origin[0], "at": origin[1]},
                    "events": entry.events, "heads": moved[:MAX_PAGE],
                    "heads_total": len(moved),
                })  # fmt: skip
            last = ledger.last_tx(records)
        more = bool(out) and out[-1]["tx"] < last
        return {"transactions": out, "next_since": out[-1]["tx"] if more else None}

    def doctor(self) -> dict[str, Any]:
        from migrate.share.doctor import doctor

        return doctor(self.store_dir)

    def inspect(self) -> dict[str, Any]:
        from migrate.probe.inspect import inspect_path
        from migrate.transfer.report import STORE_SECTIONS

        return inspect_path(self.store_dir, sections=STORE_SECTIONS)

    def apply_events(self, events: str) -> dict[str, Any]:
        from migrate.share.apply import apply

        return apply(self.store_dir, io.BytesIO(events.encode("utf-8")))


READ_TOOLS: dict[str, str] = {
    "heads": "Namespaces with their heads, in byte order; a page of at most `limit` (<= 256) "
    "after namespace `after`; `next_after` continues.",
    "history": "History entries of a namespace by committed position (index > `after`), at "
    "most `limit` (<= 256); `next_after` continues.",
    "resolve": "The head a request originally produced in a namespace, or null.",
    "content": "One content row by id: codec, size and at most `max_bytes` (<= 65536) bytes of "
    "payload (hex); `truncated` says if more exists.",
    "tail": "event/1 events after ledger transaction `since` (skipping `skip` events of the "
    "next one), at most `limit` (<= 256) and 256 KiB; long content values are elided; `next` "
    "continues.",
    "ledger": "Ledger transactions after `since`: tx, at, kind, ref, imported_at, events, heads "
    "moved; at most `limit` (<= 256).",
    "doctor": "The read-only health report of the store.",
    "inspect": "The inspect report of the store (tables, namespaces, digests, links).",
}
WRITE_TOOLS: dict[str, str] = {
    "apply_events": "Apply event/1 lines (NDJSON text) in one transaction, as `bbg-migrate "
    "apply` does. Offered only when the server runs with --write.",
}


def _bounded(result: dict[str, Any]) -> dict[str, Any]:
    if _size(result) > MAX_RESPONSE:
        raise UsageError(f"the answer exceeds {MAX_RESPONSE} bytes; ask for a smaller page")
    return result


def build_server(store_dir: Path, *, write: bool = False) -> Any:
    """The MCP server for ``store_dir`` (requires the ``mcp`` extra)."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp.types import ToolAnnotations
    except ImportError as exc:  # the optional extra is not installed
        raise UsageError(
            "the MCP server needs the optional `mcp` package: pip install 'bbg-migrate[mcp]'"
        ) from exc
    tools = Tools(store_dir)
    server = MCPServer(
        "bbg-migrate",
        instructions="A BBG store, read-only: heads, history pages, request receipts, content "
        "(size-capped), the event/1 stream and the transaction ledger from a tx, doctor and "
        "inspect." + (" apply_events writes (started with --write)." if write else
                      " The server was started without --write: it offers no mutating tool."),
    )  # fmt: skip
    read = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                           open_world_hint=False)  # fmt: skip
    writing = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                              open_world_hint=False)  # fmt: skip

    def wrap(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        import functools

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
            try:
                return _bounded(fn(*args, **kwargs))
            except MigrateError as exc:
                raise ToolError(exc.message) from exc

        return call

    for name, text in READ_TOOLS.items():
        server.tool(name=name, description=text, annotations=read,
                    structured_output=True)(wrap(getattr(tools, name)))  # fmt: skip
    if write:
        for name, text in WRITE_TOOLS.items():
            server.tool(name=name, description=text, annotations=writing,
                        structured_output=True)(wrap(getattr(tools, name)))  # fmt: skip
    return server


def serve(store_dir: Path, *, write: bool = False) -> None:
    """Run the server on stdio until the client closes it."""
    with open_readonly(Path(store_dir)):
        pass  # refuse a path that is not a store before speaking the protocol
    build_server(store_dir, write=write).run("stdio")


__all__ = ["MAX_PAGE", "MAX_RESPONSE", "Tools", "build_server", "serve"]
