"""A step continues the import its source was sealed for -- or refuses.

Every step (``seal``, ``stage``, ``validate``, ``activate``, ``run``, ``plan``) derives the
import id from the source's bytes; a source changed since it was sealed would therefore
derive another id and silently start a *new* import, leaving the sealed one ``staging``
forever.  So the seal also journals the source's path (stage ``source`` of the import's
journal), and before a step reads the source it looks up the import in progress for that
path: when its sealed size and SHA-256 no longer match the file, the step is refused (exit 3)
naming the import, the sealed and the current fingerprint, and what to do -- put the sealed
bytes back, or discard the import (``bbg-migrate discard``) and start again.

Appends, rewrites and flips that keep the size and the mtime are all caught: the check
hashes the bytes (only when an import of this path is in progress).
"""

from __future__ import annotations

from typing import Any

from bbg_core.errors import ValidationFailed
from bbg_core.files import file_sha256, real_path, require_regular
from migrate.job import Job
from migrate.store import imports
from migrate.store.engine import engine_of
from migrate.store.layout import resolve_store_dir
from migrate.store.readonly import open_readonly

SOURCE_STAGE = "source"


def source_path(job: Job) -> str:
    """The path an import records for its source: absolute, symbolic links resolved."""
    return str(real_path(job.source))


def journal_source(tx: Any, import_id: str, job: Job) -> None:
    """Record (once) which path ``import_id`` was sealed from (call in the seal's transaction)."""
    if imports.journal_of(tx, import_id, SOURCE_STAGE) is None:
        imports.journal(tx, import_id, SOURCE_STAGE, {"path": source_path(job)})


def sealed_in_progress(db: Any, path: str) -> str | None:
    """The import in progress (``staging``) that was sealed from ``path``, or None."""
    return imports.staging_journaled_from(db, SOURCE_STAGE, path)


def require_unchanged(job: Job) -> None:
    """ValidationFailed (exit 3) if an import of this source is in progress in the job's store
    and the source no longer matches its seal (see the module docstring)."""
    directory = resolve_store_dir(job.store, create=True)
    if engine_of(directory) is None:
        return
    path = source_path(job)
    with open_readonly(directory) as db:
        iid = sealed_in_progress(db, path)
        seal = imports.seal_of(db, iid) if iid is not None else None
    if iid is None or seal is None:
        return
    sealed = seal["source"]
    size = require_regular(job.source)
    if size == sealed["size_bytes"] and file_sha256(job.source) == sealed["sha256"]:
        return
    now = f"{size} bytes" + (
        "" if size != sealed["size_bytes"] else f" with SHA-256 {file_sha256(job.source)}"
    )
    raise ValidationFailed(
        f"{job.source}: the source changed since import {iid} sealed it (sealed: "
        f"{sealed['size_bytes']} bytes with SHA-256 {sealed['sha256']}; now: {now}); nothing "
        f"was done. To continue import {iid}, put the sealed bytes back; to migrate the file "
        f"as it is now, first give that import up: {imports.discard_command(directory, iid)}",
        path=str(job.source),
        import_id=iid,
        errors=[{"code": "source-changed", "detail": f"{job.source}: changed since import "
                 f"{iid} sealed it"}],  # fmt: skip
    )
