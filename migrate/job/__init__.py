"""What every verb of a migration takes: the :class:`Job`, its :class:`Bounds` and its
:class:`~migrate.job.mapping.Mapping`.

A job names a source, a store, an optional mapping and nonce, and the operator's choices
(torn tail, kind, content check); the bounds are the explicit limits it runs under.  Kept in
a package of its own, below the pipeline, the transfer, the fleet and the CLI, so that each
of them (and a library caller) can build one without importing the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bbg_core.errors import UsageError
from migrate.job.mapping import Mapping

#: A staged or copied page holds at most this many rows and key+value bytes.
MAX_PAGE_ROWS = 512
MAX_PAGE_BYTES = 32 * 1024 * 1024

#: The content-check modes of a cell.redb, by name: ``codec`` (cybergraph's codec-checked
#: import: every Blob and Data row decoded and its id verified; the default) or ``none``
#: (bbg's raw converter: rows copied as bytes with the structural and link rules only).
CODEC = "codec"
NONE = "none"
MODES = (CODEC, NONE)


@dataclass(frozen=True)
class Bounds:
    """Explicit limits; exceeding one is an error (exit 3), never a silent pass."""

    max_rows: int = 100_000_000
    max_bytes: int = 256 * 1024**3
    max_namespaces: int = 1_000_000
    page_rows: int = MAX_PAGE_ROWS
    page_bytes: int = MAX_PAGE_BYTES

    def __post_init__(self) -> None:
        if not 1 <= self.page_rows <= MAX_PAGE_ROWS:
            raise UsageError(f"page rows must be 1..{MAX_PAGE_ROWS}")
        if not 1 <= self.page_bytes <= MAX_PAGE_BYTES:
            raise UsageError(f"page bytes must be 1..{MAX_PAGE_BYTES}")
        if min(self.max_rows, self.max_bytes, self.max_namespaces) < 0:
            raise UsageError("bounds must not be negative")


@dataclass(frozen=True)
class Job:
    """What the operator asked for: a source, a store, an optional mapping and nonce."""

    source: Path
    store: Path | None
    mapping: Mapping | None = None
    nonce: str | None = None
    bounds: Bounds = field(default_factory=Bounds)
    # Import a torn Signal log's valid prefix (an explicit operator choice, in the receipt).
    accept_torn_tail: bool = False
    # The source's kind when the content cannot tell (an empty file); checked against detect.
    kind: str | None = None
    # cell.redb only: one of MODES; recorded in the receipt.
    content_check: str = CODEC
    # bbg frame logs only: refuse what the strict decoder refuses instead of reading the log as
    # bbg's own reader does (part of the import's identity when set).
    strict: bool = False
    # TextArchives only: the caller's namespace (cybergraph ``TextArchive::from_database``);
    # None: hemera of the import record.  Part of the import's identity when set.
    namespace: bytes | None = None
    # The engine of a store this job creates (None: the default, the real BBG database).
    engine: str | None = None
