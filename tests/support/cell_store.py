"""Generate a valid legacy cell store (redb) of any size, for tests and benchmarks.

The rows follow the write semantics of the reference generator's ``cells-large`` set
(``../shared/tools/cell-fixtures cells-large``; rules in ``fixtures/legacy/README.md``,
"Write semantics used by the generator"), so a generated store has the same tables, row
shapes, mix of rows and value sizes, and passes the same conversion rules:

* five ``&[u8] -> &[u8]`` tables: content (codec byte ‖ payload, keyed by the content id),
  heads, history, requests, unique claims;
* a birth per namespace (birth record and a shared artifact; namespace = the birth's Blob
  id, history[ns‖0] = ns, head (0, ns)), then writes to random namespaces (the last of three
  or more stays birth-only): 0–2 event Blobs of 200 B–4 KB, most of them small (about 1 in
  4,000 of 64 KiB),
  text or random bytes; a nox Data event in about 8% (an atom, or a pair whose children are
  existing Data rows or fresh atoms of the same write); sometimes a shared artifact (the same
  bytes in every namespace, stored once); then the commit record (Blob), history, head and
  one request receipt (fingerprint ‖ head) per history entry; about 12% add a unique claim
  (claim key -> commit);
* Blob id = hemera(payload); Data ids are nox "Model B" (``hash_leaf(v LE, 0, false)`` for
  an atom, ``hash_node(left, right, false)`` for a pair) with canonical values.

The rows are not byte-identical to the reference generator's (its PRNG and payload texts
are its own); the file is written by :mod:`tests.support.redb_writer` (redb file format 3)
in one pass, so it is smaller than a store the legacy application grew through thousands of
copy-on-write transactions, with the same rows.  Content values are spooled to a temporary
file beside the output while the writes run, so memory holds only the keys.

Uses the C hemera core when it is built (the pure-Python twin works, slowly).
"""

from __future__ import annotations

import functools
import os
import random
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hashing import hemera
from tests.support.redb_writer import RedbWriter

P = 0xFFFF_FFFF_0000_0001  # Goldilocks
BLOB, DATA = b"\x01", b"\x00"
CONTENT = "application_content"
HEADS = "application_heads"
HISTORY = "application_history"
REQUESTS = "application_requests"
CLAIMS = "application_unique_claims"
TABLES = (CONTENT, HEADS, HISTORY, REQUESTS, CLAIMS)

OWNER = b"cell/local-private-database-owner/1"
WORDS = (
    "particle neuron charge budget link epoch karma focus outcome attempt invoke cell "
    "resource signal token axon cyberlink rank weight will energy"
).split()
DEFINITIONS = ("timer", "counter", "relay", "oracle", "registry", "mailbox")
SHARED_ARTIFACTS = 48
DATA_RATE = 0.08
SHARED_RATE = 0.03
CLAIM_RATE = 0.12
HUGE_RATE = 1 / 4000
HUGE_EVENT = 64 * 1024
CHUNK_WRITES = 1024  # writes whose events are hashed in one batch


@dataclass
class _Namespace:
    ns: bytes
    index: int
    commit: bytes
    tag: bytes  # short hex used in event payloads


@dataclass
class Summary:
    """What :func:`generate` wrote."""

    path: Path
    writes: int
    namespaces: int
    rows: dict[str, int] = field(default_factory=dict)
    data_rows: int = 0
    seconds: float = 0.0
    file_size: int = 0

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "writes": self.writes,
            "namespaces": self.namespaces,
            "rows": self.rows,
            "total_rows": self.total_rows,
            "data_rows": self.data_rows,
            "seconds": round(self.seconds, 3),
            "rows_per_s": round(self.total_rows / self.seconds) if self.seconds else None,
            "file_size": self.file_size,
        }


class _Content:
    """Content rows by id; values spooled to a file, so memory holds keys and offsets."""

    def __init__(self, spool: Path) -> None:
        self.spool_path = spool
        self.fh = open(spool, "wb")  # closed in rows()/close()
        self.at: dict[bytes, tuple[int, int]] = {}
        self.offset = 0

    def put(self, key: bytes, value: bytes) -> None:
        if key in self.at:
            return  # an immutable put of identical bytes
        self.fh.write(value)
        self.at[key] = (self.offset, len(value))
        self.offset += len(value)

    def __contains__(self, key: bytes) -> bool:
        return key in self.at

    def rows(self) -> Iterator[tuple[bytes, bytes]]:
        self.fh.close()
        fd = os.open(self.spool_path, os.O_RDONLY)
        try:
            at = self.at
            pread = os.pread
            for key in sorted(at):
                offset, length = at[key]
                yield key, pread(fd, length, offset)
        finally:
            os.close(fd)

    def close(self) -> None:
        self.fh.close()
        self.spool_path.unlink(missing_ok=True)


@functools.lru_cache(maxsize=4)
def _seeded_pool(seed: int) -> tuple[bytes, Any]:
    """The text pool :func:`generate` draws from with ``seed``, and the generator's state
    after drawing it: made once per process and seed (most of a small store's cost)."""
    rng = random.Random(seed)
    return _text_pool(rng, 1 << 20), rng.getstate()


def _text_pool(rng: random.Random, size: int) -> bytes:
    words = []
    total = 0
    while total < size:
        word = rng.choice(WORDS)
        sep = "\n" if rng.random() < 0.15 else " "
        words.append(word + sep)
        total += len(word) + 1
    return "".join(words).encode("ascii")


def generate(
    path: str | os.PathLike[str],
    *,
    rows: int | None = None,
    writes: int | None = None,
    namespaces: int = 50,
    seed: int = 239000,
    progress: Callable[[int, int], None] | None = None,
) -> Summary:
    """Write a valid legacy cell store at ``path``: ``writes`` application writes (births
    included), or as many as make ``rows`` rows in all; returns a :class:`Summary`."""
    if (rows is None) == (writes is None):
        raise ValueError("give exactly one of rows= and writes=")
    if namespaces < 1:
        raise ValueError("at least one namespace")
    start = time.perf_counter()
    out = Path(path)
    pool, state = _seeded_pool(seed)
    rng = random.Random()
    rng.setstate(state)
    h = hemera.hash
    content = _Content(out.with_name(out.name + ".spool"))
    history: list[tuple[bytes, bytes]] = []
    requests: list[tuple[bytes, bytes]] = []
    claims: list[tuple[bytes, bytes]] = []
    data_ids: list[bytes] = []
    spaces: list[_Namespace] = []
    shared: list[tuple[bytes, bytes]] = []
    for j in range(SHARED_ARTIFACTS):
        at = rng.randrange(len(pool) - 512)
        payload = b"cell/shared-artifact/%d\x00" % j + pool[at : at + rng.randint(250, 420)]
        shared.append((h(payload), BLOB + payload))
    owner_id = h(OWNER)

    def receipt(
        space: _Namespace, expected: tuple[int, bytes] | None, ids: list[bytes],
        claim: tuple[bytes, bytes] | None,
    ) -> None:
        counter = struct.pack("<Q", space.index)
        request = h(b"cell/request-id/1\x00" + OWNER + space.ns + counter)
        head = struct.pack("<Q", space.index) + space.commit
        exp = b"\x00"
        if expected is not None:
            exp = b"\x01" + struct.pack("<Q", expected[0]) + expected[1]
        unique = sorted(set(ids))
        fingerprint = h(
            b"cybergraph/application-transaction/1\x00" + space.ns + request + exp + head
            + struct.pack("<Q", len(unique)) + b"".join(unique) + struct.pack("<Q", 0)
            + struct.pack("<Q", 1 if claim else 0) + (claim[0] + claim[1] if claim else b"")
        )
        history.append((space.ns + struct.pack(">Q", space.index), space.commit))
        requests.append((space.ns + request, fingerprint + head))

    def count_rows() -> int:
        return len(content.at) + len(spaces) + len(history) + len(requests) + len(claims)

    def event_payload(space: _Namespace, index: int, k: int) -> bytes:
        # Sizes fall off linearly from 200 B to 4 KB (the minimum of two uniform draws),
        # as the reference store's events do.
        size = (HUGE_EVENT if rng.random() < HUGE_RATE
                else min(rng.randint(200, 4000), rng.randint(200, 4000)))
        head = b"cell/event/1\x00" + space.tag + b":%d:%d\x00" % (index, k)
        body = size - len(head)
        if rng.random() < 0.5:
            if body <= len(pool) - 1:
                at = rng.randrange(len(pool) - body)
                return head + pool[at : at + body]
        return head + rng.randbytes(body)

    def atom() -> tuple[bytes, bytes]:
        value = rng.randrange(256) if rng.random() < 0.3 else rng.randrange(P)
        payload = struct.pack("<Q", value)
        return hemera.hash_leaf(payload, 0, False), payload

    done = 0
    target_writes = writes
    try:
        while target_writes is None or done < target_writes:
            # Births first, one per namespace; then writes in chunks whose events are
            # hashed in one batch.
            if len(spaces) < namespaces:
                ordinal = len(spaces)
                definition = DEFINITIONS[ordinal % len(DEFINITIONS)].encode()
                birth = (
                    b"cell/birth/1\x00" + struct.pack("<I", ordinal) + rng.randbytes(32)
                    + owner_id + b"definition=" + definition + b";profile=local"
                )
                ns = h(birth)
                content.put(ns, BLOB + birth)
                art_id, art = shared[rng.randrange(len(shared))]
                content.put(art_id, art)
                space = _Namespace(ns, 0, ns, ns[:4].hex().encode())
                spaces.append(space)
                receipt(space, None, [ns, art_id], None)
                done += 1
                continue
            if rows is not None and count_rows() >= rows:
                break
            chunk = CHUNK_WRITES
            if target_writes is not None:
                chunk = min(chunk, target_writes - done)
            live = spaces[:-1] if len(spaces) >= 3 else spaces
            plan: list[tuple[_Namespace, int, list[bytes]]] = []
            events: list[bytes] = []
            next_index: dict[int, int] = {}
            for _ in range(chunk):
                space = live[rng.randrange(len(live))]
                index = next_index.get(id(space), space.index) + 1
                next_index[id(space)] = index
                mine = [event_payload(space, index, k) for k in range(rng.randint(0, 2))]
                plan.append((space, len(events), mine))
                events.extend(mine)
            event_ids = hemera.hash_many(events)
            for space, first, mine in plan:
                ids: list[bytes] = []
                for k, payload in enumerate(mine):
                    content.put(event_ids[first + k], BLOB + payload)
                    ids.append(event_ids[first + k])
                if rng.random() < DATA_RATE:
                    if rng.random() < 0.5:
                        node, payload = atom()
                    else:
                        children = []
                        for _ in range(2):
                            if data_ids and rng.random() < 0.6:
                                children.append(data_ids[rng.randrange(len(data_ids))])
                            else:
                                child, child_payload = atom()
                                if child not in content:
                                    data_ids.append(child)
                                content.put(child, DATA + child_payload)
                                ids.append(child)
                                children.append(child)
                        payload = children[0] + children[1]
                        node = hemera.hash_node(children[0], children[1], False)
                    if node not in content:
                        data_ids.append(node)
                    content.put(node, DATA + payload)
                    ids.append(node)
                if rng.random() < SHARED_RATE:
                    art_id, art = shared[rng.randrange(len(shared))]
                    content.put(art_id, art)
                    ids.append(art_id)
                previous = (space.index, space.commit)
                space.index += 1
                commit = (
                    b"cell/commit/1\x00" + space.ns + struct.pack("<Q", space.index)
                    + space.commit + struct.pack("<I", len(ids)) + b"".join(ids)
                    + rng.randbytes(8)
                )
                space.commit = h(commit)
                content.put(space.commit, BLOB + commit)
                ids.append(space.commit)
                claim = None
                if rng.random() < CLAIM_RATE:
                    claim = (h(b"cell/system-nonce/1\x00" + space.ns + rng.randbytes(32)),
                             space.commit)
                    claims.append(claim)
                receipt(space, previous, ids, claim)
                done += 1
                if rows is not None and count_rows() >= rows:
                    break
            if progress is not None:
                progress(done, count_rows())
        summary = Summary(out, done, len(spaces))
        summary.data_rows = len(data_ids)
        tmp = out.with_name(out.name + ".tmp")
        with RedbWriter(tmp) as writer:
            summary.rows[CONTENT] = writer.add_table(CONTENT, content.rows())
            heads = sorted(
                (s.ns, struct.pack("<Q", s.index) + s.commit) for s in spaces
            )
            summary.rows[HEADS] = writer.add_table(HEADS, heads)
            history.sort()
            summary.rows[HISTORY] = writer.add_table(HISTORY, history)
            requests.sort()
            summary.rows[REQUESTS] = writer.add_table(REQUESTS, requests)
            claims.sort()
            summary.rows[CLAIMS] = writer.add_table(CLAIMS, claims)
        os.replace(tmp, out)
    finally:
        content.close()
    summary.seconds = time.perf_counter() - start
    summary.file_size = out.stat().st_size
    return summary
