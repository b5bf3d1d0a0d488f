"""The archive-wide limits of cybergraph's TextArchive import, checked line by line.

cybergraph's ``TextArchive::import_jsonl`` (``src/text_archive/legacy.rs``) refuses a source
of more than ``MAX_SOURCE_BYTES`` before reading it, then preflights every line into a fresh
namespace (``src/text_archive.rs`` ``prepare`` and ``extend_projection``):

* the line's observation gets head index ``line - 1``; index ``MAX_OBSERVATIONS`` or more is
  refused ("text observation count limit");
* one line is one atomic commit of three Blobs -- the text, the raw line and the canonical
  observation record -- and their bytes plus one codec byte each must not exceed
  ``MAX_CONTENT_BYTES`` ("text observation transaction byte limit");
* the texts of distinct ids must not exceed ``MAX_PROJECTION_BYTES`` in total ("text
  projection byte limit").

Each exceeded limit is ``limit-exceeded`` naming the line (the source cap names the line that
holds the first byte past the cap).

The observation record is serde_json of ``{schema, previous, request, text, created,
provenance: {source, line, raw}}`` with every id a JSON array of 32 integers, so its length
depends on the ids' digits: between a lower bound (every byte 0-9) and an upper bound (every
byte 100-255).  Only a line whose budget lies between the two needs the exact record, which
needs the chain of earlier commits and the source's hash; that is computed then, by re-reading
the archive (:class:`Rereader`).  Text and raw line are never the same bytes (the text is
strictly shorter than its line) and the record embeds the text's id, so the three Blobs are
distinct and each counts once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, Final, Protocol

from bbg_core.errors import TextArchiveError
from hashing.hemera import HasherFactory, HashFn
from importers.text_archive.model import Limits, TextRecord

OBSERVATION_SCHEMA: Final = "cybergraph/text-observation/1"
REQUEST_DOMAIN: Final = b"cybergraph/text-import-request/1\x00"
_ARRAY_SPREAD: Final = 64  # "[255,...]" is 64 characters longer than "[0,...]"
_CHUNK: Final = 1 << 20

ErrorFactory = Callable[[str, int, str], TextArchiveError]


def id_json(particle: bytes) -> str:
    """A 32-byte id as serde serialises ``[u8; 32]``: a JSON array of integers."""
    return "[" + ",".join(map(str, particle)) + "]"


def request_id(hash_fn: HashFn, source: bytes, line: int) -> bytes:
    """The import request of ``line``: hemera(domain ‖ source id ‖ line u64 LE)."""
    return hash_fn(REQUEST_DOMAIN + source + line.to_bytes(8, "little"))


def observation_record(
    previous: bytes | None,
    request: bytes,
    text: bytes,
    created: int | None,
    source: bytes,
    line: int,
    raw: bytes,
) -> bytes:
    """The canonical observation record of one imported line (its commit's Blob)."""
    return (
        f'{{"schema":"{OBSERVATION_SCHEMA}",'
        f'"previous":{"null" if previous is None else id_json(previous)},'
        f'"request":{id_json(request)},"text":{id_json(text)},'
        f'"created":{"null" if created is None else created},'
        f'"provenance":{{"source":{id_json(source)},"line":{line},"raw":{id_json(raw)}}}}}'
    ).encode()


_FF: Final = b"\xff" * 32
# The longest record without its line number: every id "[255,...]", created u64::MAX.
_RECORD_CEILING: Final = len(observation_record(_FF, _FF, _FF, (1 << 64) - 1, _FF, 0, _FF)) - 1


def source_cap_line(handle: BinaryIO, cap: int) -> int:
    """The 1-based line holding byte ``cap`` (the first byte past the cap) of ``handle``."""
    handle.seek(0)
    newlines = 0
    left = cap
    while left > 0:
        chunk = handle.read(min(_CHUNK, left))
        if not chunk:
            break
        newlines += chunk.count(b"\n")
        left -= len(chunk)
    return newlines + 1


class ChainSource(Protocol):
    """What the exact budget needs: the source's id and its records from line 1 on."""

    def source_digest(self) -> bytes: ...

    def records(self) -> Iterator[TextRecord]: ...


@dataclass
class Rereader:
    """A :class:`ChainSource` over a seekable archive handle that another reader is using.

    Every access saves and restores the handle's position, so the main reader goes on where
    it was.  ``records`` decodes lines with the per-line rules only (those lines were checked
    already).
    """

    handle: BinaryIO
    hash_fn: HashFn
    hasher: HasherFactory | None
    decode: Callable[[bytes, int, int], TextRecord]
    _digest: bytes | None = None

    def source_digest(self) -> bytes:
        if self._digest is None:
            here = self.handle.tell()
            try:
                self.handle.seek(0)
                if self.hasher is not None:
                    hasher = self.hasher()
                    while chunk := self.handle.read(_CHUNK):
                        hasher.update(chunk)
                    self._digest = hasher.digest()
                else:
                    self._digest = self.hash_fn(self.handle.read())
            finally:
                self.handle.seek(here)
        return self._digest

    def records(self) -> Iterator[TextRecord]:
        offset, line = 0, 0
        while True:
            here = self.handle.tell()
            try:
                self.handle.seek(offset)
                raw = self.handle.readline()
            finally:
                self.handle.seek(here)
            if not raw:
                return
            line += 1
            yield self.decode(raw, line, offset)
            offset += len(raw)


@dataclass
class _Chain:
    """The commits of the lines before ``line + 1``, computed on demand."""

    source: ChainSource
    hash_fn: HashFn
    digest: bytes = b""
    line: int = 0
    previous: bytes | None = None
    pending: Iterator[TextRecord] | None = None

    def record(self, rec: TextRecord) -> bytes:
        """The exact observation record of ``rec`` (the lines before it are replayed once)."""
        if self.pending is None:
            self.digest = self.source.source_digest()
            self.pending = self.source.records()
        while self.line < rec.line - 1:
            earlier = next(self.pending)
            self.previous = self.hash_fn(self._record_of(earlier))
            self.line = earlier.line
        return self._record_of(rec)

    def _record_of(self, rec: TextRecord) -> bytes:
        return observation_record(
            self.previous, request_id(self.hash_fn, self.digest, rec.line), rec.particle_bytes,
            rec.created, self.digest, rec.line, self.hash_fn(rec.raw),
        )  # fmt: skip


@dataclass
class ArchiveBudget:
    """The count, transaction and projection limits, fed every valid line in order.

    ``chain`` resolves a line whose transaction budget the bounds cannot decide; without one
    (or after ``exact`` is cleared, e.g. past an invalid line) such a line is judged by the
    lower bound only, i.e. it passes.
    """

    limits: Limits
    hash_fn: HashFn
    fail: ErrorFactory
    chain: ChainSource | None = None
    exact: bool = True
    projected: int = 0
    texts: set[bytes] = field(default_factory=set)
    _chain: _Chain | None = None

    @property
    def distinct_texts(self) -> int:
        return len(self.texts)

    def check(self, rec: TextRecord) -> None:
        """Raise ``limit-exceeded`` if ``rec`` (the next valid line) breaks a limit."""
        limits = self.limits
        if rec.line > limits.max_lines:
            raise self.fail(
                "limit-exceeded", rec.line,
                f"observation {rec.line - 1} is past the count limit of {limits.max_lines}",
            )  # fmt: skip
        self._check_transaction(rec)
        pid = rec.particle_bytes
        if pid not in self.texts:
            total = self.projected + rec.text_size
            if total > limits.max_projection_bytes:
                raise self.fail(
                    "limit-exceeded", rec.line,
                    f"distinct texts would hold {total} bytes (projection limit "
                    f"{limits.max_projection_bytes})",
                )  # fmt: skip
            self.texts.add(pid)
            self.projected = total

    def _check_transaction(self, rec: TextRecord) -> None:
        cap = self.limits.max_transaction_bytes
        base = rec.text_size + len(rec.raw) + 3  # three Blobs, one codec byte each
        if base + _RECORD_CEILING + len(str(rec.line)) <= cap:
            return  # no record can be long enough (nearly every line)
        low_record = len(
            observation_record(
                None if rec.line == 1 else bytes(32), bytes(32), rec.particle_bytes,
                rec.created, bytes(32), rec.line, bytes(32),
            )
        )  # fmt: skip
        unknown_ids = 3 if rec.line == 1 else 4  # request, source, raw (and previous)
        if base + low_record + unknown_ids * _ARRAY_SPREAD <= cap:
            return
        if base + low_record > cap:
            need = base + low_record
        elif self.exact and self.chain is not None:
            if self._chain is None:
                self._chain = _Chain(self.chain, self.hash_fn)
            need = base + len(self._chain.record(rec))
            if need <= cap:
                return
        else:
            return
        raise self.fail(
            "limit-exceeded", rec.line,
            f"the line's commit needs at least {need} bytes (text {rec.text_size}, raw line "
            f"{len(rec.raw)}, observation record and codec bytes; transaction limit {cap})",
        )  # fmt: skip
