"""The rules of bbg's own database layer that every engine of the store keeps.

These are facts of cyberia-to/bbg's ``rs/src/storage/database/`` (``mod.rs``: the table names,
``change_id``, ``migration_guard``, ``validate_open``; ``backend_fjall.rs``: the directory, the
lock file and the partitions it opens; ``generation.rs``: the status marker), restated here
as plain functions so the Fjall and SQLite engines, the pipeline and ``doctor`` agree on them:

* **Partitions.** bbg's Fjall engine opens (and creates when missing) 33 partitions by name:
  14 shard tables, ``bbg_storage_v1`` (metadata), ``bbg_import_v1`` (migration markers), the
  five application tables, five content-storage tables and seven native-record tables.  bbg's
  archive reader refuses a name it does not know, so nothing else may live in the keyspace.
* **Change id.** Every non-empty bbg transaction writes ``bbg_storage_v1["last_transaction"]``
  = hemera over ``bbg/database-batch/v1\\0`` and the transaction's changes sorted by (table
  name, key), each as ``u64 LE len(name) ‖ name ‖ u64 LE len(key) ‖ key ‖ present byte`` and,
  for a put, ``u64 LE len(value) ‖ value``; the marker rows themselves are not part of it.
  ``last_commit`` gets the same id when the transaction touched a shard table.
* **Guard.** A conversion owns ``<destination>.bbg-importing`` (the destination's canonical
  path plus that suffix) from before the destination exists until it is complete; bbg's open
  refuses a store whose guard exists.
* **Open checks.** bbg opens a store only if the guard is absent, the status marker is absent,
  ``complete``, ``neuron-v1`` or ``auth-v1``, and the ``last_transaction`` / ``last_commit``
  markers, when present, are 32 bytes.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from bbg_core.errors import SourceError
from bbg_core.files import real_path
from hashing import hemera

SHARD_TABLES: tuple[str, ...] = (
    "particles", "axons_out", "axons_in", "neurons", "locations", "coins", "cards", "files",
    "time", "signals", "commitments", "nullifiers", "intents", "ephemeral",
)  # fmt: skip
METADATA = "bbg_storage_v1"
MIGRATION = "bbg_import_v1"
APPLICATION_TABLES: tuple[str, ...] = (
    "application_content", "application_heads", "application_history",
    "application_requests", "application_unique_claims",
)  # fmt: skip
CONTENT_TABLES: tuple[str, ...] = (
    "content_uploads", "content_parts", "content_part_checks", "content_files",
    "content_retention",
)  # fmt: skip
NATIVE_TABLES: tuple[str, ...] = (
    "native_state_v1", "native_history_v1", "native_requests_v1", "native_metadata_v1",
    "native_balances_v1", "native_blocks_v1", "native_export_v1",
)  # fmt: skip
#: Every partition bbg opens, in the order its engine opens them.
PARTITIONS: tuple[str, ...] = (
    SHARD_TABLES + (METADATA, MIGRATION) + APPLICATION_TABLES + CONTENT_TABLES + NATIVE_TABLES
)

STATUS = b"status"
LAST_TRANSACTION = b"last_transaction"
LAST_COMMIT = b"last_commit"
MARKER_LEN = 32
#: Status markers bbg's open accepts (absent is accepted too).
OPENABLE_STATUS: frozenset[bytes] = frozenset({b"complete", b"neuron-v1", b"auth-v1"})

LOCK_NAME = "bbg.lock"
GUARD_SUFFIX = ".bbg-importing"
DIR_MODE = 0o700
LOCK_MODE = 0o600

_DOMAIN = b"bbg/database-batch/v1\x00"
_U64 = struct.Struct("<Q")

#: One change of a transaction: ``(table, key) -> value`` (None removes the key).
Changes = Mapping[tuple[str, bytes], bytes | None]


def change_id(changes: Changes) -> bytes:
    """bbg's id of a transaction with these ``changes`` (see the module docstring)."""
    ident = change_id_of_sorted((t, k, v) for (t, k), v in sorted(changes.items(),
                                                                   key=lambda item: item[0]))
    return ident if ident is not None else _empty_id()


def change_id_of_sorted(changes: Iterable[tuple[str, bytes, bytes | None]]) -> bytes | None:
    """bbg's id of the changes ``(table, key, value or None)``, given once each in (table
    name bytes, key) order (a stream: a SQLite store's changes are read from a table); None
    when there are none (bbg commits nothing then)."""
    hasher = hemera.Hasher()
    buf = bytearray(_DOMAIN)  # hashed in pieces of about 1 MiB: one update per change is slow
    seen = False
    pack = _U64.pack
    names: dict[str, bytes] = {}  # each table's encoded name, once
    for table, key, value in changes:
        seen = True
        name = names.get(table)
        if name is None:
            name = names[table] = pack(len(table.encode())) + table.encode()
        buf += name + pack(len(key)) + key
        if value is None:
            buf += b"\x00"
        else:
            buf += b"\x01" + pack(len(value))
            buf += value
        if len(buf) >= 1 << 20:
            hasher.update(bytes(buf))
            buf.clear()
    hasher.update(bytes(buf))
    return hasher.digest() if seen else None


def _empty_id() -> bytes:
    hasher = hemera.Hasher()
    hasher.update(_DOMAIN)
    return hasher.digest()


def with_markers(changes: Changes) -> dict[tuple[str, bytes], bytes | None]:
    """``changes`` plus the marker rows bbg adds to the same batch (``last_transaction``,
    and ``last_commit`` when a shard table is touched); empty changes stay empty."""
    out = dict(changes)
    if not out:
        return out
    ident = change_id(changes)
    if any(table in SHARD_TABLES for table, _ in changes):
        out[(METADATA, LAST_COMMIT)] = ident
    out[(METADATA, LAST_TRANSACTION)] = ident
    return out


def guard_path(destination: str | os.PathLike[str]) -> Path:
    """``<canonical destination>.bbg-importing``: one guard per physical destination, for a
    path with a trailing slash, ``.``/``..`` parts or a symlink alias alike."""
    path = Path(destination)
    try:
        normal = real_path(path, strict=True)
    except SourceError as exc:
        if not isinstance(exc.__cause__, FileNotFoundError):
            raise
        parent = path.parent if str(path.parent) else Path(".")
        try:
            normal = real_path(parent, strict=True) / path.name
        except SourceError as again:  # no parent yet (a store being created makes it)
            if not isinstance(again.__cause__, FileNotFoundError):
                raise
            normal = real_path(path)
    return normal.with_name(normal.name + GUARD_SUFFIX)


Getter = Callable[[str, bytes], bytes | None]


def open_problems(destination: Path, get: Getter) -> list[str]:
    """Why bbg's open would refuse the store at ``destination`` (empty: it opens it).

    ``get(table, key)`` reads the store's rows."""
    problems: list[str] = []
    try:
        guarded = guard_path(destination).exists()
    except OSError:
        guarded = False
    if guarded:
        problems.append(f"{guard_path(destination)} exists: incomplete application migration")
    status = get(MIGRATION, STATUS)
    if status is not None and status not in OPENABLE_STATUS:
        problems.append(
            f"{MIGRATION}.status = {status!r}: unsupported reader generation or incomplete "
            "migration"
        )
    for key in (LAST_TRANSACTION, LAST_COMMIT):
        value = get(METADATA, key)
        if value is not None and len(value) != MARKER_LEN:
            problems.append(f"{METADATA}.{key.decode()} is {len(value)} bytes, not {MARKER_LEN}")
    return problems


def unknown_partitions(names: Iterable[str]) -> list[str]:
    """The partition names bbg does not know (its archive reader refuses them)."""
    known = set(PARTITIONS)
    return sorted(n for n in names if n not in known)
