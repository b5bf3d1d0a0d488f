"""The keyspace directory: names, the ``version`` marker, and a partition's ``config`` and
``manifest`` files.

Facts (read in fjall 2.11.2 and lsm-tree 2.10.4, written here in our own words):

* ``version`` holds ``FJL`` and the format byte 2 (fjall ``src/version.rs``,
  ``Keyspace::check_version`` in ``src/keyspace.rs``); 1 is the older format this reader
  does not handle.
* ``journals/<decimal id>`` are the write-ahead journals, ``partitions/<name>/`` the
  partitions (fjall ``src/file.rs``).  A partition directory holding ``.deleted`` was
  dropped, and one without ``manifest`` was never finished: fjall removes both when it
  opens the keyspace (``src/recovery.rs``), so neither is a partition here.
* ``config`` is fjall's ``PartitionCreateOptions`` as written when the partition was made
  (``src/partition/options.rs``): ``FJL 02``, level count u8, tree type u8, memtable limit,
  data and index block sizes (u32 BE each), compression (two bytes), manual-journal-persist
  u8, bloom bits per key i8, the compaction strategy (tag 0 leveled: L0 threshold u8, level
  ratio u8, target size u32 BE; 1 size-tiered: ratio u8, base size u32; 2 FIFO: limit u64,
  TTL flag u8 and u64), then the key-value separation flag and its options.
* ``manifest`` is lsm-tree's tree manifest (``src/manifest.rs``): ``LSM`` plus the version
  byte 2, tree type (0 standard, 1 blob), table type (0 block), level count.  A blob tree
  (key-value separation, also recognised by a ``blobs`` folder) is refused by name.

Both files are parsed strictly: fjall writes exactly these bytes, so a short file, an unknown
tag or bytes left over is damage, reported as :class:`FjallCorrupt` with the file and offset.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NoReturn

from bbg_core.errors import FjallCorrupt, FjallUnsupported

VERSION_FILE = "version"
JOURNALS = "journals"
PARTITIONS = "partitions"
CONFIG = "config"
MANIFEST = "manifest"
LEVELS = "levels"
SEGMENTS = "segments"
DELETED = ".deleted"
BLOBS = "blobs"

FJL_MAGIC = b"FJL\x02"
LSM_MAGIC = b"LSM\x02"

#: Characters fjall allows in a partition name (``src/partition/name.rs``), 1 to 255 of them.
NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.#$")

COMPRESSION_NONE = 0
COMPRESSION_LZ4 = 1
COMPRESSION_MINIZ = 2


def is_valid_partition_name(name: str) -> bool:
    """fjall's rule: 1 to 255 bytes of ``A-Z a-z 0-9 _ - . # $``."""
    return 0 < len(name.encode("utf-8")) < 256 and all(c in NAME_CHARS for c in name)


def corrupt(path: str, offset: int, what: str, detail: str) -> NoReturn:
    """Raise the one error of a damaged file: ``path: what at offset N: detail``."""
    raise FjallCorrupt(
        f"{path}: damaged {what} at offset {offset}: {detail}", path=path, offset=offset, what=what
    )


def check_version(data: bytes, path: str) -> None:
    """``version`` must be ``FJL`` and format 2 (four bytes, nothing else)."""
    if data[:3] != b"FJL":
        corrupt(path, 0, "version marker", f"expected FJL, found {data[:3].hex() or 'nothing'}")
    if len(data) < 4:
        corrupt(path, len(data), "version marker", "the format byte is missing")
    if data[3] == 1:
        raise FjallUnsupported(
            f"{path}: a Fjall version 1 keyspace; this reader handles format 2 (fjall 2.x)",
            path=path,
        )
    if data[3] != 2:
        corrupt(path, 3, "version marker", f"unknown format {data[3]}")
    if len(data) != 4:
        corrupt(path, 4, "version marker", f"{len(data) - 4} bytes after the marker")


@dataclass(frozen=True)
class PartitionConfig:
    """fjall's ``PartitionCreateOptions`` as stored in ``config``."""

    level_count: int = 7
    tree_type: int = 0
    max_memtable_size: int = 16 << 20
    data_block_size: int = 4096
    index_block_size: int = 4096
    compression: tuple[int, int] = (COMPRESSION_LZ4, 0)
    manual_journal_persist: bool = False
    bloom_bits_per_key: int = 10
    #: (0, l0_threshold, level_ratio, target_size) | (1, ratio, base_size) |
    #: (2, limit, has_ttl, ttl_seconds)
    compaction: tuple[int, ...] = (0, 4, 10, 64 << 20)
    #: None, or (compression pair, file_target_size, separation_threshold)
    kv_separation: tuple[tuple[int, int], int, int] | None = None

    def encode(self) -> bytes:
        """The bytes fjall writes for these options."""
        out = bytearray(FJL_MAGIC)
        out += struct.pack(">BB", self.level_count, self.tree_type)
        out += struct.pack(">III", self.max_memtable_size, self.data_block_size,
                           self.index_block_size)  # fmt: skip
        out += bytes(self.compression)
        out += struct.pack(">Bb", int(self.manual_journal_persist), self.bloom_bits_per_key)
        tag = self.compaction[0]
        if tag == 0:
            out += struct.pack(">BBBI", 0, self.compaction[1], self.compaction[2],
                               self.compaction[3])  # fmt: skip
        elif tag == 1:
            out += struct.pack(">BBI", 1, self.compaction[1], self.compaction[2])
        else:
            out += struct.pack(">BQ", 2, self.compaction[1])
            out += struct.pack(">BQ", 1, self.compaction[3]) if self.compaction[2] else b"\x00"
        if self.kv_separation is None:
            out += b"\x00"
        else:
            comp, target, threshold = self.kv_separation
            out += b"\x01" + bytes(comp) + struct.pack(">QI", target, threshold)
        return bytes(out)

    @property
    def compaction_target_size(self) -> int:
        """The leveled strategy's target segment size (64 MiB by default); 64 MiB else."""
        return self.compaction[3] if self.compaction[0] == 0 else 64 << 20


DEFAULT_CONFIG = PartitionConfig()


class _Cursor:
    """Bounds-checked reads over a small file held in memory."""

    def __init__(self, data: bytes, path: str, what: str) -> None:
        self.data, self.path, self.what, self.pos = data, path, what, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            corrupt(self.path, len(self.data), self.what,
                    f"the file ends {self.pos + n - len(self.data)} bytes early")  # fmt: skip
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> tuple[int, ...]:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))

    def u8(self) -> int:
        return self.take(1)[0]

    def tag(self, allowed: tuple[int, ...], field: str) -> int:
        at = self.pos
        value = self.u8()
        if value not in allowed:
            corrupt(self.path, at, self.what, f"unknown {field} {value}")
        return value

    def compression(self) -> tuple[int, int]:
        at = self.pos
        tag, level = self.take(2)
        if tag in (COMPRESSION_NONE, COMPRESSION_LZ4) and level == 0:
            return tag, level
        if tag == COMPRESSION_MINIZ and level <= 10:
            return tag, level
        corrupt(self.path, at, self.what, f"unknown compression {tag:02x} {level:02x}")

    def end(self) -> None:
        if self.pos != len(self.data):
            corrupt(self.path, self.pos, self.what,
                    f"{len(self.data) - self.pos} bytes after its end")  # fmt: skip


def decode_config(data: bytes, path: str) -> PartitionConfig:
    """Parse a partition's ``config`` (strict: FjallCorrupt names the first bad byte)."""
    c = _Cursor(data, path, "partition config")
    if c.take(4) != FJL_MAGIC:
        corrupt(path, 0, "partition config", "expected FJL 02")
    level_count = c.u8()
    tree_type = c.tag((0, 1), "tree type")
    max_memtable, data_block, index_block = c.unpack(">III")
    compression = c.compression()
    manual = c.tag((0, 1), "journal persist flag")
    (bloom,) = struct.unpack(">b", c.take(1))
    tag = c.tag((0, 1, 2), "compaction strategy")
    compaction: tuple[int, ...]
    if tag == 0:
        compaction = (0, *c.unpack(">BBI"))
    elif tag == 1:
        compaction = (1, *c.unpack(">BI"))
    else:
        (limit,) = c.unpack(">Q")
        ttl_flag = c.tag((0, 1), "TTL flag")
        compaction = (2, limit, ttl_flag, c.unpack(">Q")[0] if ttl_flag else 0)
    kv: tuple[tuple[int, int], int, int] | None = None
    if c.tag((0, 1), "key-value separation flag"):
        comp = c.compression()
        target, threshold = c.unpack(">QI")
        kv = (comp, target, threshold)
    c.end()
    if level_count == 0:
        corrupt(path, 4, "partition config", "zero levels")
    return PartitionConfig(level_count, tree_type, max_memtable, data_block, index_block,
                           compression, bool(manual), bloom, compaction, kv)  # fmt: skip


@dataclass(frozen=True)
class Manifest:
    """lsm-tree's tree manifest."""

    tree_type: int = 0
    table_type: int = 0
    level_count: int = 7

    def encode(self) -> bytes:
        return LSM_MAGIC + bytes((self.tree_type, self.table_type, self.level_count))


def decode_manifest(data: bytes, path: str) -> Manifest:
    """Parse a partition's ``manifest`` (strict)."""
    c = _Cursor(data, path, "tree manifest")
    magic = c.take(4)
    if magic[:3] != b"LSM":
        corrupt(path, 0, "tree manifest", "expected LSM")
    if magic[3] == 1:
        raise FjallUnsupported(f"{path}: an lsm-tree version 1 tree; this reader handles 2",
                               path=path)  # fmt: skip
    if magic[3] != 2:
        corrupt(path, 3, "tree manifest", f"unknown version {magic[3]}")
    tree_type = c.tag((0, 1), "tree type")
    table_type = c.tag((0,), "table type")
    level_count = c.u8()
    c.end()
    if level_count == 0:
        corrupt(path, 6, "tree manifest", "zero levels")
    return Manifest(tree_type, table_type, level_count)
