"""Fjall's write-ahead journals (``journals/<id>``): markers, batches, recovery rules.

Layout (fjall 2.11.2 ``src/journal/{marker,writer,reader,batch_reader,recovery}.rs``, our
own words)::

    Start  01 | item count u32 BE | seqno u64 BE | compression 00 00
    Item   02 | value type u8 | partition name length u8, name (UTF-8) | key length u16 BE,
           key | value length u32 BE, value            (a tombstone has an empty value)
    End    03 | checksum u64 BE | "FJL" 02

A batch is a Start, exactly ``count`` Items, an End whose checksum is XXH3-64 of the Items'
bytes (each whole marker, tag included) in order.  All items of a batch share its seqno;
for one key in one batch the later item wins (the memtable replaces an equal key).

Recovery (``JournalReader``/``JournalBatchReader``): markers are decoded until one cannot
be (an unknown tag -- the zeros of pre-allocation read as tag 0 --, an unknown value type, a
name that is not UTF-8, an End without ``FJL 02``, or the end of the file); a batch that has
not reached its End by then is dropped.  A Start inside a batch, or an Item or End outside
one, also ends the journal there.  An End before ``count`` items, an Item beyond it, or a
checksum mismatch make fjall refuse to open the keyspace.  fjall also truncates the file
after its last complete batch; this reader never writes and never truncates.

The highest id is the active journal, the others are sealed (``recover_journals``); a
``.sealed`` suffix (older versions) is ignored, and names starting with ``._`` or
``.DS_Store`` are skipped.  A journal the writer creates is pre-allocated to 32 MiB of
zeros (``Writer::create_new``), which a later writer's recovery cuts back to its data.

What this reader accepts as the end of a journal (stricter than fjall, never looser): only
a *torn tail* -- the file ends, or only zeros follow, where decoding stopped, and no End
marker follows (which would mean a complete batch that no longer decodes: a damaged length
field can make a marker look cut) -- ends a journal quietly (with the torn batch, if any,
reported by :func:`scan`).  The one false alarm this allows: a batch cut inside an item
whose own bytes hold an End marker's 13 bytes.  Anything else
where fjall would silently stop (bytes that are not zeros after the stop, a structural stop)
and everything fjall itself refuses is :class:`FjallCorrupt` naming the journal, the offset
and the structure: a damaged journal is never read as shorter than it is.

Memory: a journal is read through a window (1 MiB, or one marker if larger); its items are
kept as (partition, key, seqno, type) plus the value itself when it is at most
:data:`INLINE` bytes, else its offset and length in the file (read again when a row is
returned).  So what a journal costs in memory is bounded by its number of items, not its
size; fjall holds all of it in its memtables.
"""

from __future__ import annotations

import errno
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import xxhash

from migrate.store.fjall._api import Twin
from migrate.store.fjall.layout import FJL_MAGIC, corrupt

START, ITEM, END = 1, 2, 3
PRE_ALLOCATED = 32 << 20
WINDOW = 1 << 20
#: Values up to this many bytes are kept in memory; longer ones are re-read by offset.
INLINE = 256

# Stop codes of the marker decoder (both twins).
NEED, BAD_TAG, BAD_TYPE, BAD_NAME, BAD_TRAILER, BAD_COMPRESSION = 0, 1, 2, 3, 4, 5
STOP_TEXT = {
    BAD_TAG: "unknown marker tag",
    BAD_TYPE: "unknown value type",
    BAD_NAME: "a partition name that is not UTF-8",
    BAD_TRAILER: "an End marker without FJL 02",
    BAD_COMPRESSION: "a batch compression fjall cannot read",
}

#: An item as kept: (key, seqno, type, value or None, value offset, value length).
Ref = tuple[bytes, int, int, bytes | None, int, int]


@dataclass
class Torn:
    """The batch a journal's torn tail dropped."""

    batch_start: int
    seqno: int | None  # None: the cut fell inside the batch's Start marker
    items_declared: int | None
    items_complete: int
    cut_at: int
    where: str  # "before-end": every item is there, the End is not; "inside-batch"


@dataclass
class JournalInfo:
    """What :func:`scan` found in one journal."""

    id: int
    name: str
    role: str
    bytes: int
    data_bytes: int = 0
    batches: int = 0
    items: int = 0
    seqno_min: int | None = None
    seqno_max: int | None = None
    torn: Torn | None = None
    after_data: str = "none"
    after_data_bytes: int = 0
    #: per partition name: highest seqno of its items in this journal
    lsn: dict[str, int] = field(default_factory=dict)
    #: the first batch whose seqno is not above the one before it: (offset, seqno, before)
    disorder: tuple[int, int, int] | None = None

    def doc(self) -> dict[str, Any]:
        return {
            "name": self.name, "role": self.role, "bytes": self.bytes,
            "data_bytes": self.data_bytes, "batches": self.batches, "items": self.items,
            "seqnos": None if self.seqno_min is None else [self.seqno_min, self.seqno_max],
            "torn_batch": self.torn is not None, "after_data": self.after_data,
            "after_data_bytes": self.after_data_bytes,
            "torn": None if self.torn is None else {
                "batch_start": self.torn.batch_start, "batch_seqno": self.torn.seqno,
                "batch_items": self.torn.items_declared,
                "items_complete": self.torn.items_complete, "cut_at": self.torn.cut_at,
                "where": self.torn.where,
            },
        }  # fmt: skip


def journal_id(name: str) -> int | None:
    """The id a journal file name stands for (None for names fjall skips)."""
    if name == ".DS_Store" or name.startswith("._"):
        return None
    base = name.removesuffix(".sealed")
    if not base.isascii() or not base.isdigit() or int(base) >= 1 << 64:
        return -1
    return int(base)


# -- the marker decoder (pure-Python twin) --------------------------------------------------

_START = struct.Struct(">IQBB")


def markers(buf: bytes, pos: int) -> tuple[list[tuple[Any, ...]], int, int]:
    """Decode the markers of ``buf`` from ``pos``: ``(markers, stop_pos, stop_code)``.

    Each marker is ``(START, start, end, count, seqno)``, ``(ITEM, start, end, type,
    partition bytes, key, value start, value length)`` or ``(END, start, end, checksum)``;
    decoding stops at ``stop_pos`` with ``NEED`` (the buffer ends inside a marker) or the
    code of the undecodable marker that starts there.
    """
    out: list[tuple[Any, ...]] = []
    end = len(buf)
    while pos < end:
        tag = buf[pos]
        if tag == ITEM:
            if pos + 3 > end:
                return out, pos, NEED
            vtype = buf[pos + 1]
            if vtype > 2:
                return out, pos, BAD_TYPE
            plen = buf[pos + 2]
            q = pos + 3 + plen
            if q + 2 > end:
                return out, pos, NEED
            name = buf[pos + 3 : q]
            (klen,) = struct.unpack_from(">H", buf, q)
            q += 2
            if q + klen + 4 > end:
                return out, pos, NEED
            key = buf[q : q + klen]
            (vlen,) = struct.unpack_from(">I", buf, q + klen)
            vstart = q + klen + 4
            if vstart + vlen > end:
                return out, pos, NEED
            try:
                name.decode("utf-8")
            except UnicodeDecodeError:
                return out, pos, BAD_NAME
            out.append((ITEM, pos, vstart + vlen, vtype, name, key, vstart, vlen))
            pos = vstart + vlen
        elif tag == START:
            if pos + 15 > end:
                return out, pos, NEED
            count, seqno, ctag, level = _START.unpack_from(buf, pos + 1)
            if ctag != 0 or level != 0:
                return out, pos, BAD_COMPRESSION
            out.append((START, pos, pos + 15, count, seqno))
            pos += 15
        elif tag == END:
            if pos + 13 > end:
                return out, pos, NEED
            if buf[pos + 9 : pos + 13] != FJL_MAGIC:
                return out, pos, BAD_TRAILER
            (checksum,) = struct.unpack_from(">Q", buf, pos + 1)
            out.append((END, pos, pos + 13, checksum))
            pos += 13
        else:
            return out, pos, BAD_TAG
    return out, pos, NEED


def _compression_is_fatal(buf: bytes, pos: int) -> bool:
    """fjall panics on a Start whose compression tag is 00 or 01 with anything but 00 00
    (a non-zero pad byte, or LZ4, which journals never use); any other tag is an
    undecodable marker to it (a quiet stop)."""
    return buf[pos + 13] in (0, 1)


# -- scanning a journal ---------------------------------------------------------------------

Sink = Callable[[int, list[tuple[str, bytes, int, bytes | None, int, int]]], None]


class _Window:
    """Reads a file through a window that starts at a given offset."""

    def __init__(self, fd: int, size: int, path: str) -> None:
        self.fd, self.size, self.path = fd, size, path
        self.buf, self.at = b"", 0

    def load(self, pos: int, need: int = 0) -> None:
        n = min(max(WINDOW, need), self.size - pos)
        try:
            self.buf = os.pread(self.fd, n, pos)
        except OSError as exc:
            corrupt(self.path, pos, "journal", f"cannot be read ({exc.strerror})")
        self.at = pos


_ZEROS = bytes(WINDOW)


def _zeros_from(fd: int, pos: int, size: int) -> int | None:
    """None if every byte of ``[pos, size)`` is zero, else the offset of the first that is
    not.  Holes (a pre-allocated journal is sparse) are skipped without reading them."""
    while pos < size:
        try:
            data_at = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                return None
            data_at = pos  # no SEEK_DATA here: read everything
        if data_at >= size:
            return None
        try:
            hole_at = min(os.lseek(fd, data_at, os.SEEK_HOLE), size)
        except OSError:
            hole_at = size
        pos = data_at
        while pos < hole_at:
            chunk = os.pread(fd, min(WINDOW, hole_at - pos), pos)
            if not chunk:
                return None
            if chunk != _ZEROS[: len(chunk)]:
                return pos + len(chunk) - len(chunk.lstrip(b"\x00"))
            pos += len(chunk)
    return None


def _end_marker_after(fd: int, pos: int, size: int) -> int | None:
    """The offset of the first End marker (03, 8 bytes, ``FJL 02``) in ``[pos, size)``,
    looking no further than where only zeros remain; None if there is none."""
    overlap = 12
    while pos < size:
        chunk = os.pread(fd, min(WINDOW, size - pos), pos)
        if not chunk:
            return None
        at = chunk.find(FJL_MAGIC)
        while at >= 0:
            if at >= 9 and chunk[at - 9] == END:
                return pos + at - 9
            at = chunk.find(FJL_MAGIC, at + 1)
        if chunk == _ZEROS[: len(chunk)] and _zeros_from(fd, pos + len(chunk), size) is None:
            return None
        if pos + len(chunk) >= size:
            return None
        pos += len(chunk) - overlap
    return None


def _appended_meanwhile(fd: int, start: int, twin: Twin) -> bool:
    """Whether a complete, valid batch starts at ``start`` now: then what looked damaged
    after it was a batch its owner was still writing, and the snapshot ends at ``start``."""
    size = os.fstat(fd).st_size
    buf = b""
    want = WINDOW
    while True:
        buf = os.pread(fd, min(want, size - start), start)
        found, _stop, code = twin.journal_markers(buf, 0)
        if found or code != NEED or len(buf) >= size - start:
            break
        want *= 4
    if len(found) < 2 or found[0][0] != START:
        return False
    count, hasher = found[0][3], xxhash.xxh3_64()
    for n, m in enumerate(found[1:]):
        if m[0] == END:
            return bool(n == count and hasher.intdigest() == m[3])
        if m[0] != ITEM:
            return False
        hasher.update(memoryview(buf)[m[1] : m[2]])
    return False


def scan(
    fd: int, info: JournalInfo, path: str, twin: Twin, sink: Sink | None = None,
    *, size: int | None = None,
) -> JournalInfo:  # fmt: skip
    """Read one journal by fjall's rules; ``sink(seqno, items)`` gets each complete batch
    (items: partition, key, type, value or None, value offset, value length)."""
    size = os.fstat(fd).st_size if size is None else size
    info.bytes = size
    win = _Window(fd, size, path)
    decode = twin.journal_markers
    names: dict[bytes, str] = {}
    pos = 0  # the next byte to decode
    valid = 0  # the end of the last complete batch
    in_batch = False
    batch_start = count = seqno = 0
    hasher = xxhash.xxh3_64()
    items: list[tuple[str, bytes, int, bytes | None, int, int]] = []
    stop, code = size, NEED
    win.load(0)
    while True:
        found, rel_stop, code = decode(win.buf, pos - win.at)
        for m in found:
            kind = m[0]
            start = win.at + m[1]
            if kind == ITEM:
                hasher.update(memoryview(win.buf)[m[1] : m[2]])
                if not in_batch:
                    corrupt(path, start, "journal", "an Item marker outside a batch")
                if len(items) == count:
                    corrupt(path, start, "journal batch",
                            f"more items than the {count} its Start declares")  # fmt: skip
                raw_name = m[4]
                name = names.get(raw_name)
                if name is None:
                    name = names[raw_name] = raw_name.decode("utf-8")
                vlen = m[7]
                value = win.buf[m[6] : m[6] + vlen] if vlen <= INLINE else None
                items.append((name, m[5], m[3], value, win.at + m[6], vlen))
            elif kind == START:
                if in_batch:
                    corrupt(path, start, "journal", "a Start marker inside a batch")
                in_batch, batch_start, count, seqno = True, start, m[3], m[4]
                hasher.reset()
                items = []
            else:
                if not in_batch:
                    corrupt(path, start, "journal", "an End marker outside a batch")
                if len(items) < count:
                    corrupt(path, start, "journal batch",
                            f"{len(items)} items where its Start declares {count}")  # fmt: skip
                if hasher.intdigest() != m[3]:
                    corrupt(path, batch_start, "journal batch", "batch checksum mismatch")
                in_batch = False
                valid = win.at + m[2]
                if info.seqno_max is not None and seqno <= info.seqno_max and not info.disorder:
                    info.disorder = (batch_start, seqno, info.seqno_max)
                info.batches += 1
                info.items += len(items)
                if info.seqno_min is None or seqno < info.seqno_min:
                    info.seqno_min = seqno
                if info.seqno_max is None or seqno > info.seqno_max:
                    info.seqno_max = seqno
                for item in items:
                    if info.lsn.get(item[0], -1) < seqno:
                        info.lsn[item[0]] = seqno
                if sink is not None:
                    sink(seqno, items)
                items = []
        pos = win.at + rel_stop
        if code != NEED:
            stop = pos
            break
        if win.at + len(win.buf) >= size:  # the file ends inside a marker (or right here)
            stop = pos
            break
        win.load(pos, need=2 * (win.at + len(win.buf) - pos) + WINDOW)
    if code == BAD_COMPRESSION and _compression_is_fatal(win.buf, stop - win.at):
        corrupt(path, stop, "journal", "a batch Start with a compression fjall refuses")
    info.data_bytes = valid
    later = None
    if code != NEED:
        # An End marker cut short reads as one without FJL 02: what the cut left of it (up to
        # its 13 bytes) may be followed by zeros only.  Any other undecodable marker is where
        # the zeros start (writes are in order: a marker's first byte is written first).
        later = _zeros_from(fd, stop + 13 if code == BAD_TRAILER else stop, size)
        if later is not None and not _appended_meanwhile(fd, valid, twin):
            corrupt(path, stop, "journal", f"{STOP_TEXT[code]}, and data follows at "
                    f"offset {later}: not a torn tail")  # fmt: skip
    if in_batch or stop < size:
        # What follows the stop is a torn tail only if it is part of one cut batch: an End
        # marker there means a batch that was complete and no longer decodes (fjall would
        # drop it, and everything after it, without a word).
        end_at = _end_marker_after(fd, stop, size)
        if end_at is not None and not _appended_meanwhile(fd, valid, twin):
            corrupt(path, batch_start if in_batch else stop, "journal batch",
                    f"decoding stops at offset {stop}, but an End marker follows at {end_at}: "
                    "a damaged batch, not a torn tail")  # fmt: skip
    if in_batch:
        where = "before-end" if len(items) == count else "inside-batch"
        info.torn = Torn(batch_start, seqno, count, len(items), stop, where)
    elif code == NEED and stop < size:  # the file ends inside a batch's Start marker
        info.torn = Torn(stop, None, None, 0, stop, "inside-start")
    info.after_data_bytes = size - valid
    zeros = later is None if code != NEED else _zeros_from(fd, stop, size) is None
    if valid < stop:
        zeros = zeros and _zeros_from(fd, valid, stop) is None
    info.after_data = "zeros" if zeros else "other bytes"
    return info


# -- writing --------------------------------------------------------------------------------


def encode_item(partition: str, key: bytes, value: bytes, vtype: int) -> bytes:
    name = partition.encode("utf-8")
    return b"".join((bytes((ITEM, vtype, len(name))), name, struct.pack(">H", len(key)), key,
                     struct.pack(">I", len(value)), value))  # fmt: skip


def encode_batch(items: list[tuple[str, bytes, bytes, int]], seqno: int) -> bytes:
    """A whole batch (Start, Items, End) as fjall's ``Writer::write_batch`` writes it."""
    body = [encode_item(p, k, v, t) for p, k, v, t in items]
    hasher = xxhash.xxh3_64()
    for part in body:
        hasher.update(part)
    start = bytes((START,)) + struct.pack(">IQ", len(items), seqno) + b"\x00\x00"
    end = bytes((END,)) + struct.pack(">Q", hasher.intdigest()) + FJL_MAGIC
    return start + b"".join(body) + end
