"""``tail --verifiable`` and its check in ``apply``: an event/1 stream that proves it is whole.

A plain event/1 stream proves nothing about itself: each line is checked on its own, so a
changed ``fingerprint``, a dropped ``rows`` line or two swapped lines still apply.  A
verifiable stream adds two line kinds (``schemas/event-check.schema.json``, docs/event1.md):

* after the events of each transaction, a **check line** ``{"bbg": "event/1-check", "kind":
  "tx", "tx", "after", "events", "sha256"}``: ``sha256`` is SHA-256 over the bytes of the
  previous check line (nothing for the first), then the bytes of this transaction's event
  lines, each with its LF; ``after`` is the ``tx`` of the previous check line (the stream's
  ``--since`` for the first); ``events`` how many event lines the transaction has;
* at the end, one **closing line** ``{"bbg": "event/1-check", "kind": "end", "transactions",
  "events", "sha256"}``: ``sha256`` is SHA-256 over the bytes of the last check line (nothing
  when the stream has no transaction), the counts are the stream's.

Each check line covers the one before, so a changed, dropped, added or reordered line (an
event or a check line) breaks the first check after it; the closing line says where the
stream ends.  The hashes carry no key: they prove the stream is the one whose closing digest
you hold, not who wrote it -- compare the digest with the source's over a channel you trust.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from typing import Any

from bbg_core.errors import ValidationFailed
from migrate.share.common import canonical, schema_problem

FORMAT = "event/1-check"
# How a canonical check line starts (keys sorted: "after" first in a tx line, "bbg" in the
# closing line); an event line starts with '{"asserted":'.
PREFIXES = (b'{"after":', b'{"bbg":"' + FORMAT.encode() + b'"')


def framed(events: Iterable[dict[str, Any]], since: int = 0) -> Iterator[bytes]:
    """The lines of a verifiable stream of ``events`` (a ``tail`` after ``since``): each event
    line, a check line after each transaction, and the closing line."""
    previous = b""  # the last check line
    after = since
    hasher = hashlib.sha256()
    current: int | None = None
    count = transactions = total = 0

    def check() -> bytes:
        return canonical({"bbg": FORMAT, "kind": "tx", "tx": current, "after": after,
                          "events": count, "sha256": hasher.hexdigest()})  # fmt: skip

    for event in events:
        tx = int(event["tx"])
        if current is not None and tx != current:
            previous = check()
            yield previous
            after, count, transactions = current, 0, transactions + 1
            hasher = hashlib.sha256(previous)
        current = tx
        line = canonical(event)
        hasher.update(line)
        count += 1
        total += 1
        yield line
    if current is not None:
        previous = check()
        yield previous
        transactions += 1
    yield canonical({"bbg": FORMAT, "kind": "end", "transactions": transactions,
                     "events": total, "sha256": hashlib.sha256(previous).hexdigest()})  # fmt: skip


def _refused(line: int, code: str, detail: str, why: str | None = None) -> ValidationFailed:
    why = why or ("the stream is not the one its check lines vouch for (changed, dropped, "
                  "added or reordered lines)")
    return ValidationFailed(
        f"line {line}: {detail}; {why}; nothing was applied",
        line=line,
        errors=[{"code": code, "detail": f"line {line}: {detail}"}],
    )


class Verifier:
    """Checks a stream line by line as ``apply`` reads it: :meth:`check_line` takes the
    check and closing lines, :meth:`event` every event line, :meth:`finish` the end."""

    def __init__(self) -> None:
        self.previous = b""
        self.last_tx: int | None = None  # tx of the last check line
        self.hasher = hashlib.sha256()
        self.pending: list[int] = []  # line numbers of the events since the last check
        self.pending_tx: int | None = None
        self.transactions = self.events = 0
        self.seen = False  # a check line was read: the stream is verifiable
        self.closed: str | None = None  # the closing digest, once read

    def event(self, raw: bytes, tx: int, number: int) -> None:
        """An event line (already parsed and checked as an event)."""
        if self.closed is not None:
            raise _refused(number, "verify-after-end", "an event after the closing line")
        if self.seen and self.pending_tx is not None and tx != self.pending_tx:
            raise _refused(number, "verify-missing-check", f"transaction {tx} starts but "
                           f"transaction {self.pending_tx} (from line {self.pending[0]}) has "
                           "no check line")  # fmt: skip
        self.pending_tx = tx
        self.pending.append(number)
        self.hasher.update(raw)

    def check_line(self, raw: bytes, number: int) -> bool:
        """True if ``raw`` is a check or closing line (then checked), False for an event."""
        if not raw.startswith(PREFIXES):
            return False
        try:
            doc: dict[str, Any] = json.loads(raw)
        except ValueError as exc:
            raise _refused(number, "verify-malformed", "not a JSON check line") from exc
        problem = schema_problem(doc, "event-check")
        if problem is None and canonical(doc) != raw:
            problem = "not in canonical form"
        if problem:
            raise _refused(number, "verify-malformed", f"not an event/1-check line ({problem})")
        if self.closed is not None:
            raise _refused(number, "verify-after-end", "a line after the closing line")
        if doc["kind"] == "tx":
            self._transaction(doc, raw, number)
        else:
            self._end(doc, number)
        self.seen = True
        return True

    def _span(self) -> str:
        if not self.pending:
            return "no event line"
        return f"lines {self.pending[0]}-{self.pending[-1]}"

    def _transaction(self, doc: dict[str, Any], raw: bytes, number: int) -> None:
        tx = int(doc["tx"])
        if self.last_tx is not None and doc["after"] != self.last_tx:
            raise _refused(number, "verify-order", f"check line of transaction {tx} follows "
                           f"transaction {doc['after']}, but the previous check line is "
                           f"transaction {self.last_tx}")  # fmt: skip
        if self.pending_tx != tx or len(self.pending) != doc["events"]:
            raise _refused(number, "verify-count", f"the check line of transaction {tx} "
                           f"vouches for {doc['events']} event lines of that transaction; "
                           f"the stream has {len(self.pending)} ({self._span()}, transaction "
                           f"{self.pending_tx})")  # fmt: skip
        if self.hasher.hexdigest() != doc["sha256"]:
            raise _refused(number, "verify-digest", f"{self._span()} (transaction {tx}) do "
                           "not hash to this check line's sha256")  # fmt: skip
        self.previous = raw
        self.hasher = hashlib.sha256(raw)
        self.last_tx = tx
        self.transactions += 1
        self.events += len(self.pending)
        self.pending, self.pending_tx = [], None

    def _end(self, doc: dict[str, Any], number: int) -> None:
        if self.pending:
            raise _refused(number, "verify-missing-check", f"{self._span()} (transaction "
                           f"{self.pending_tx}) have no check line")  # fmt: skip
        digest = hashlib.sha256(self.previous).hexdigest()
        counts = (self.transactions, self.events)
        if digest != doc["sha256"] or counts != (doc["transactions"], doc["events"]):
            raise _refused(number, "verify-digest", f"the closing line vouches for "
                           f"{doc['transactions']} transactions and {doc['events']} events "
                           f"ending in digest {doc['sha256']}; the stream has {counts[0]} and "
                           f"{counts[1]} ending in {digest}")  # fmt: skip
        self.closed = doc["sha256"]

    def finish(self, number: int, *, require: bool = False) -> dict[str, Any]:
        """At the end of the stream (``number``: its last line): what was verified (the
        report's ``verified``); ``require``: a plain stream is refused."""
        if require and not self.seen:
            raise _refused(number, "verify-plain", "a plain stream (no check lines) under "
                           "--require-verified", "write it with tail --verifiable")  # fmt: skip
        if self.seen and self.pending:
            raise _refused(number, "verify-missing-check", f"{self._span()} (transaction "
                           f"{self.pending_tx}) have no check line: the stream was cut")
        if self.seen and self.closed is None:
            raise _refused(number, "verify-unclosed", "the stream has check lines but no "
                           "closing line: it was cut after a transaction")  # fmt: skip
        return {"verifiable": self.seen, "transactions": self.transactions,
                "digest": self.closed}  # fmt: skip
