"""One namespace's links (:mod:`migrate.rules.links`): its history, head and receipts.

:class:`NamespaceCheck` holds what the check keeps of one namespace (one 9-byte slot per
history entry, and its 32-byte commit for the first ``max_kept`` entries) and says
each finding two ways that agree exactly: a row at a time (``history_row``,
``request_row``: the rules as written), and a list of rows at a time (``history_list``,
``request_list``), which works a list of well-formed rows with a few calls over all of it
where the list is the usual kind -- contiguous history, receipts that agree -- and hands
every other row to the row-at-a-time method, in its place.  ``tests/store/
test_links_lists.py`` compares the two on generated stores.
"""

from __future__ import annotations

import bisect
import struct
from array import array
from collections.abc import Callable, Iterator, Sequence
from operator import itemgetter

from migrate.store.codec import HISTORY, ID_LEN, Head, history_key

LinkError = dict[str, str]
Lookup = Callable[[str, bytes], bytes | None]
#: Positions of the commits of a list that ``application_content`` does not hold (in order).
Absent = Callable[[Sequence[bytes]], list[int]]
_BE = struct.Struct(">Q")  # a history key's index (codec.history_key)
_LE = struct.Struct("<Q")  # a head's index (codec.Head)
_INDEX = struct.Struct(">32xQ")  # a history key: namespace ‖ index (u64 BE)
_RECEIPT = struct.Struct("<32xQ32s")  # a request value: fingerprint ‖ head (u64 LE ‖ commit)
_first = itemgetter(0)
_second = itemgetter(1)


def err(code: str, detail: str) -> LinkError:
    return {"code": code, "detail": detail}


class NamespaceCheck:
    """The links of one namespace, fed its history rows, then its head, then its receipts
    (each history and request row well-formed: the stream reports the others)."""

    def __init__(
        self,
        ns: bytes,
        get: Lookup,
        semantic: list[LinkError],
        bound: tuple[int, Head] | None,
        excised: Callable[[bytes], bool] | None,
        has_content: Callable[[bytes], bool],
        absent: Absent,
        max_kept: int,
    ) -> None:
        self.ns, self.nsx = ns, ns.hex()
        self._get, self._semantic, self._bound = get, semantic, bound
        self._excised, self._has_content, self._absent = excised, has_content, absent
        self._max_kept = max_kept
        self.present = array("Q")  # history indices of this namespace, in the order met
        # Their commits, in the same order, while the namespace is small enough to keep them
        # (a request's head is then compared without a lookup); past the bound, looked up.
        self.commits: bytearray | None = bytearray()
        # Whether ``present`` is one run present[0], present[0] + 1, ... (receipts are then
        # placed by subtraction, as bisect would place them).
        self.contiguous = True
        self.expect = 0 if bound is None else bound[0]
        self.last: Head | None = None if bound is None else bound[1]
        self._index = -1
        self._commit = b""
        self.head: Head | None = None
        self.counts = bytearray()  # receipts per history entry, saturating at 255

    # -- history ------------------------------------------------------------------------

    def history_row(self, key: bytes, commit: bytes) -> list[LinkError]:
        """One history row (its key's length checked by the stream)."""
        out: list[LinkError] = []
        nsx = self.nsx
        index = _BE.unpack_from(key, ID_LEN)[0]
        if index != self.expect:
            out.append(err(
                "history-gap",
                f"namespace {nsx}: history index {self.expect} missing (next present {index})",
            ))  # fmt: skip
        if index == 0 and commit != self.ns:
            self._birth(commit)
        if not self._has_content(commit) and not (
            self._excised is not None and self._excised(commit)
        ):
            out.append(self._missing(index, commit))
        present = self.present
        if present and present[-1] + 1 != index:
            self.contiguous = False
        present.append(index)
        self._keep(commit)
        self.expect = index + 1
        self._index, self._commit = index, commit
        return out

    def history_list(self, rows: list[tuple[bytes, bytes]]) -> list[LinkError]:
        """History rows of this namespace in stream order: :meth:`history_row` of each,
        worked a list at a time when their indices continue the history without a gap."""
        expect, n = self.expect, len(rows)
        keys = list(map(_first, rows))
        indices = list(map(_first, _INDEX.iter_unpack(b"".join(keys))))
        if indices != list(range(expect, expect + n)):
            out: list[LinkError] = []
            for key, commit in rows:
                out += self.history_row(key, commit)
            return out
        commits = list(map(_second, rows))
        if expect == 0 and commits[0] != self.ns:
            self._birth(commits[0])
        out = []
        excised = self._excised
        for pos in self._absent(commits):
            commit = commits[pos]
            if excised is None or not excised(commit):
                out.append(self._missing(expect + pos, commit))
        self.present.extend(range(expect, expect + n))
        self._keep(b"".join(commits))
        self.expect = expect + n
        self._index, self._commit = expect + n - 1, commits[-1]
        return out

    def _birth(self, commit: bytes) -> None:
        # neuron's semantic import only (engine/src/legacy.rs): not a conversion error.
        nsx = self.nsx
        self._semantic.append(
            {
                "code": "birth-mismatch",
                "namespace": nsx,
                "detail": f"namespace {nsx}: index-0 commit {commit.hex()} != namespace",
            }
        )

    def _missing(self, index: int, commit: bytes) -> LinkError:
        return err(
            "missing-content",
            f"namespace {self.nsx} index {index}: commit {commit.hex()} not in application_content",
        )

    def _keep(self, commit: bytes) -> None:
        if self.commits is not None:
            self.commits += commit
            if len(self.present) > self._max_kept:
                self.commits = None

    # -- head -----------------------------------------------------------------------------

    def head_errors(self, head_value: bytes | None) -> list[LinkError]:
        """The namespace's head (None: it has none) against its history."""
        if self._index >= 0:
            self.last = Head(self._index, self._commit)
        last, bound, nsx = self.last, self._bound, self.nsx
        self.counts = bytearray(len(self.present))
        head = self.head = None if head_value is None else Head.decode(head_value)
        if head is None and last is not None:
            return [err("head-mismatch", f"namespace {nsx}: history without head")]
        if head is None and bound is not None:
            return [err("head-mismatch", f"namespace {nsx}: a retained boundary but no head")]
        if head is not None and head != last:
            # bbg: the head must equal history[ns‖head.index] and no entry may lie past it.
            top = "no history" if last is None else f"the last history index is {last.index}"
            return [err(
                "head-mismatch",
                f"namespace {nsx}: head {head.describe()} disagrees with history ({top})",
            )]  # fmt: skip
        return []

    # -- receipts -------------------------------------------------------------------------

    def request_row(self, key: bytes, value: bytes) -> list[LinkError]:
        """One request row: fingerprint ‖ head (index u64 LE ‖ commit), its length checked
        by the stream."""
        present, counts, head, bound = self.present, self.counts, self.head, self._bound
        rindex = _LE.unpack_from(value, ID_LEN)[0]
        if bound is not None and rindex < bound[0]:
            return []  # a receipt of a dropped entry: kept resolvable, its history is gone
        rcommit = bytes(value[ID_LEN + 8 :])
        pos = bisect.bisect_left(present, rindex)
        found = pos < len(present) and present[pos] == rindex
        actual: bytes | bytearray | None
        if not found:
            actual = None
        elif self.commits is not None:
            actual = self.commits[ID_LEN * pos : ID_LEN * (pos + 1)]
        else:
            actual = self._get(HISTORY, history_key(self.ns, rindex))
        out: list[LinkError] = []
        if actual == rcommit and head is not None and rindex <= head.index:
            if found and counts[pos] < 255:
                counts[pos] += 1
            return out
        request = key[ID_LEN:].hex()
        rhead = Head(rindex, rcommit)
        # bbg also requires the namespace to have a head (the request's head is compared
        # with it); without one, the receipt cannot agree with the namespace's history.
        if actual != rcommit or head is None:
            shown = "absent" if actual is None else bytes(actual).hex()
            out.append(err(
                "request-head-mismatch",
                f"request {request}: head {rhead.describe()} disagrees with "
                f"history[ns‖{rhead.index}] = {shown}",
            ))  # fmt: skip
        elif head is not None and rhead.index > head.index:
            out.append(err(
                "request-head-mismatch",
                f"request {request}: head {rhead.describe()} is past the namespace head "
                f"{head.describe()}",
            ))  # fmt: skip
        if found and counts[pos] < 255:
            counts[pos] += 1
        return out

    def request_list(self, rows: list[tuple[bytes, bytes]]) -> list[LinkError]:
        """Request rows of this namespace in stream order: :meth:`request_row` of each; a
        receipt whose head is a kept commit of a one-run history, at or below the head (and
        not below a retained boundary), is counted here without it."""
        present, commits, head = self.present, self.commits, self.head
        out: list[LinkError] = []
        if head is None or commits is None or not self.contiguous or not present:
            for key, value in rows:
                out += self.request_row(key, value)
            return out
        first = present[0]
        low = first if self._bound is None else max(first, self._bound[0])
        high = min(head.index, first + len(present) - 1)
        counts = self.counts
        receipts = _RECEIPT.iter_unpack(b"".join(map(_second, rows)))
        for row, (rindex, rcommit) in zip(rows, receipts, strict=True):
            pos = rindex - first
            if low <= rindex <= high and commits[ID_LEN * pos : ID_LEN * (pos + 1)] == rcommit:
                if counts[pos] < 255:
                    counts[pos] += 1
            else:
                out += self.request_row(*row)
        return out

    def receipt_errors(self) -> Iterator[LinkError]:
        """Each history entry with no receipt or more than one."""
        counts, present, nsx = self.counts, self.present, self.nsx
        if counts.count(1) == len(counts):
            return
        for pos, n in enumerate(counts):
            if n == 0:
                yield err(
                    "missing-receipt", f"namespace {nsx} index {present[pos]}: no request receipt"
                )
            elif n > 1:
                more = "+" if n == 255 else ""
                yield err(
                    "duplicate-receipt",
                    f"namespace {nsx} index {present[pos]}: {n}{more} receipts",
                )


def absent_by_rows(has_content: Callable[[bytes], bool]) -> Absent:
    """:data:`Absent` asked a commit at a time."""

    def absent(commits: Sequence[bytes]) -> list[int]:
        return [pos for pos, commit in enumerate(commits) if not has_content(commit)]

    return absent
