"""Retiring a migrated source (BRIEF §4, step 9): keep its bytes, stop the old binary.

The source path becomes a directory holding ``retirement.json`` and the untouched ``source``
file, so the old binary can no longer open it as its store.  Steps, each safe to repeat:

1. build ``.<name>.retiring`` beside the source: a hard link ``source`` to the same bytes
   (same inode: nothing is rewritten) and ``retirement.json``, both fsynced;
2. re-read the kept bytes and compare them with the seal's SHA-256; a source that changed is
   kept as it is and reported, never called migrated;
3. unlink the old name and rename the directory into its place; fsync the parent.

A crash after step 3's unlink leaves only the complete aside directory, which a rerun renames.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import schemas
from bbg_core.errors import SourceError, ValidationFailed
from bbg_core.files import file_sha256

RETIREMENT = "retirement.json"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps(doc, sort_keys=True, indent=2) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def retired_record(source: Path) -> dict[str, Any] | None:
    """The retirement record if ``source`` was already retired, else None."""
    record = source / RETIREMENT
    if source.is_dir() and record.is_file():
        doc: dict[str, Any] = json.loads(record.read_text("utf-8"))
        return doc
    return None


def retire(source: Path, receipt: dict[str, Any]) -> dict[str, Any]:
    """Turn ``source`` into its retirement directory (idempotent; see module docstring)."""
    done = retired_record(source)
    if done is not None:
        return done
    want = receipt["source"]["sha256"]
    aside = source.with_name(f".{source.name}.retiring")
    doc = {
        "format": "bbg-migrate/retirement/1",
        "kind": receipt["source"]["kind"],
        "source_sha256": want,
        "source_size_bytes": receipt["source"]["size_bytes"],
        "kept_as": "source",
        "receipt": receipt,
    }
    schemas.validate(doc, "retirement")
    try:
        if source.is_file():
            aside.mkdir(exist_ok=True)
            kept = aside / "source"
            if not kept.exists():
                os.link(source, kept)
            _write_json(aside / RETIREMENT, doc)
            _fsync_dir(aside)
        elif not (aside / RETIREMENT).is_file():
            raise SourceError(
                f"{source}: the source is gone and no retirement is under way", path=str(source)
            )
        if file_sha256(aside / "source") != want:
            raise ValidationFailed(
                f"{source}: the source changed after migration; it was kept as it is and NOT "
                "retired. Inspect it before doing anything else",
                path=str(source),
                errors=[{"code": "source-changed", "detail": str(source)}],
            )
        if source.is_file():
            os.unlink(source)
        os.rename(aside, source)
        _fsync_dir(source.parent)
    except OSError as exc:
        raise SourceError(
            f"{source}: cannot retire the source: {exc.strerror}", path=str(source)
        ) from exc
    return doc
