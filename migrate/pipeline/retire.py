"""Retiring a migrated source (after activation): keep its bytes, stop the old binary.

The source path becomes a directory holding ``retirement.json`` and the untouched ``source``
file, so the old binary can no longer open it as its store.  A symbolic link is followed:
the file it names is retired (the link then names the retirement directory), never the link.

The retirement is a journaled step (``retiring`` then ``retired`` in the import's journal in
the destination store) whose file operations are each safe to repeat, in this order:

1. ``mkdir .<name>.retiring`` beside the source;
2. hard-link the source into it as ``source`` (same inode: nothing is rewritten);
3. write ``retirement.json`` (to a temporary name, fsynced, renamed) and fsync the directory;
4. re-read the kept bytes and compare them with the seal's SHA-256: a source that changed is
   kept as it is and reported, never called migrated;
5. unlink the source's name; 6. rename the directory into its place; 7. fsync the parent.

A crash anywhere leaves a state the next ``run`` finishes: before step 5 the source is still
there and the steps are repeated; after it, the complete directory beside it is renamed into
place (:func:`resume`) before anything else happens.

A retired path answers only for the import it retired: ``retirement.json`` records the
store, the import, its nonce and mapping (:func:`require_same_import`); anything else is a
named refusal (exit 4) saying where the source's bytes now live.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import schemas
from bbg_core import documents
from bbg_core.canonical import canonical_json
from bbg_core.errors import Conflict, SourceError, ValidationFailed
from bbg_core.files import atomic_write, file_sha256, fsync_dir, real_path
from migrate.store import imports
from migrate.store.store import Store

RETIREMENT = "retirement.json"
FORMAT = "bbg-migrate/retirement/1"


def target(source: Path) -> Path:
    """The file a retirement of ``source`` acts on: the file a symbolic link names."""
    return real_path(source)


def aside(source: Path) -> Path:
    """Where the retirement directory of ``source`` is built."""
    real = target(source)
    return real.with_name(f".{real.name}.retiring")


def _read_record(directory: Path) -> dict[str, Any] | None:
    record = directory / RETIREMENT
    if not record.is_file():
        return None
    doc: dict[str, Any] = documents.read(
        record, error=SourceError, hint="not a readable retirement record; inspect it by hand"
    )
    import jsonschema  # here: a run that retires nothing need not import it (start-up time)

    try:
        schemas.validate(doc, "retirement")
    except jsonschema.ValidationError as exc:
        raise SourceError(
            f"{record}: not a readable retirement record ({exc}); inspect it by hand",
            path=str(record),
        ) from exc
    return doc


def retired_record(source: Path) -> dict[str, Any] | None:
    """The retirement record if ``source`` was already retired, else None."""
    real = target(source)
    if real.is_dir():
        return _read_record(real)
    return None


def resume(source: Path) -> dict[str, Any] | None:
    """Finish a retirement a crash interrupted after the source's name was unlinked (the
    complete directory is beside it); returns the record of a retired source, else None."""
    done = retired_record(source)
    if done is not None:
        return done
    real, built = target(source), aside(source)
    if real.exists() or not built.is_dir():
        return None
    doc = _read_record(built)
    if doc is None or not (built / "source").is_file():
        raise SourceError(
            f"{source}: the source is gone and {built} holds no complete retirement; its "
            "bytes are not where a retirement keeps them: inspect it by hand",
            path=str(source),
        )
    try:
        os.rename(built, real)
        fsync_dir(real.parent)
    except OSError as exc:
        raise SourceError(f"{source}: cannot finish the retirement: {exc.strerror}",
                          path=str(source)) from exc  # fmt: skip
    return doc


def preview(source: Path) -> dict[str, str] | None:
    """What ``--retire-source`` will do to ``source`` (paths), or None when nothing will move
    (already retired, or a retirement under way that a rerun finishes)."""
    real = target(source)
    if not real.is_file():  # retired already, under way, or not a file: the run says which
        return None
    return {
        "source": str(source),
        "file": str(real),
        "built_in": str(aside(source)),
        "directory": str(real),
        "kept_as": str(real / "source"),
        "record": str(real / RETIREMENT),
    }


def preview_lines(plan: dict[str, str]) -> list[str]:
    """The retirement plan in words, one step a line."""
    link = "" if plan["source"] == plan["file"] else f" (the file {plan['source']} names)"
    return [
        f"After the migration, --retire-source retires {plan['file']}{link}:",
        f"  1. the file is hard-linked (same inode, nothing rewritten) as {plan['built_in']}"
        "/source, beside retirement.json (the receipt and this store);",
        f"  2. {plan['file']} is unlinked and that directory is renamed into its place;",
        f"  3. the bytes stay, unchanged, in {plan['kept_as']}; the old binary can no longer "
        f"open {plan['directory']} as its store.",
    ]


def binding(
    store_dir: Path, store_id: str, receipt: dict[str, Any], mapping: dict[str, Any] | None
) -> dict[str, Any]:
    """What a retired path answers for: this store, this import, its nonce and mapping."""
    return {
        "store": str(real_path(store_dir)),
        "store_id": store_id,
        "import_id": receipt["import_id"],
        "nonce": receipt["nonce"],
        "mapping": mapping,
    }


def require_same_import(
    source: Path,
    record: dict[str, Any],
    store_dir: Path,
    nonce: str | None,
    mapping: dict[str, Any] | None,
) -> None:
    """Conflict (exit 4) unless this job is the import that retired ``source``."""
    bound = record.get("import")
    real = target(source)
    where = (
        f"{source} was retired (its bytes are kept, unchanged, in {real / 'source'})"
    )
    want_store = str(real_path(store_dir))
    differences: list[str] = []
    if bound is None:
        differences.append("the retirement record names no store (an older tool wrote it)")
    else:
        if bound["store"] != want_store:
            differences.append(f"it was migrated into store {bound['store']}, not {want_store}")
        if nonce is not None and nonce != bound["nonce"]:
            differences.append(f"its nonce was {bound['nonce']}, not {nonce}")
        if nonce is None and record["receipt"]["nonce"] != _default_nonce(record):
            differences.append(f"its nonce was {bound['nonce']} (give --nonce to name it)")
        if mapping != bound["mapping"]:
            differences.append("its mapping differs from this call's")
    if differences:
        raise Conflict(
            f"{where} by import {record['receipt']['import_id']}: "
            + "; ".join(differences)
            + ". A retired path answers only for the import that retired it; to migrate "
            f"these bytes elsewhere, name the kept file: bbg-migrate run {real / 'source'} "
            "--store ...",
            path=str(source),
            retired_into=bound["store"] if bound else None,
            kept_as=str(real / "source"),
        )


def _default_nonce(record: dict[str, Any]) -> str:
    from migrate.pipeline.identity import default_nonce

    return default_nonce(record["source_sha256"])


def record_for(receipt: dict[str, Any], bound: dict[str, Any]) -> dict[str, Any]:
    """The ``retirement.json`` of an import's retirement."""
    doc = {
        "format": FORMAT,
        "kind": receipt["source"]["kind"],
        "source_sha256": receipt["source"]["sha256"],
        "source_size_bytes": receipt["source"]["size_bytes"],
        "kept_as": "source",
        "receipt": receipt,
        "import": bound,
    }
    schemas.validate(doc, "retirement")
    return doc


def retire(source: Path, doc: dict[str, Any]) -> dict[str, Any]:
    """Turn ``source`` into its retirement directory holding ``doc`` (every step idempotent;
    see the module docstring)."""
    done = resume(source)
    if done is not None:
        return done
    real, built = target(source), aside(source)
    want = doc["source_sha256"]
    try:
        if real.is_file():
            if not built.is_dir():
                os.mkdir(built)
            kept = built / "source"
            if kept.exists() and not os.path.samefile(kept, real):
                os.unlink(kept)  # a stale link from an earlier attempt at other bytes
            if not kept.exists():
                os.link(real, kept)
            # Durable, and the name in ``built`` too: a crash after it finds a whole record.
            text = canonical_json(doc, ascii=True, indent=2) + "\n"
            atomic_write(built / RETIREMENT, text.encode())
        elif not real.exists():
            raise SourceError(
                f"{source}: the source is gone and no retirement is under way",
                path=str(source),
            )
        else:
            raise SourceError(f"{source}: not a regular file; nothing to retire",
                              path=str(source))  # fmt: skip
        if file_sha256(built / "source") != want:
            raise ValidationFailed(
                f"{source}: the source changed after migration; it was kept as it is and NOT "
                "retired. Inspect it before doing anything else",
                path=str(source),
                errors=[{"code": "source-changed", "detail": str(source)}],
            )
        os.unlink(real)
        os.rename(built, real)
        fsync_dir(real.parent)
    except OSError as exc:
        raise SourceError(
            f"{source}: cannot retire the source: {exc.strerror}", path=str(source)
        ) from exc
    return doc


def retire_import(
    store: Store, source: Path, receipt: dict[str, Any], mapping: dict[str, Any] | None,
    *, asked: bool,
) -> bool:  # fmt: skip
    """The journaled retirement step of ``run``: retire ``source`` if ``asked`` or if an
    earlier run of this import asked and was interrupted; True when the source is retired.

    ``retiring`` is journaled before the first file operation and ``retired`` after the
    last, so a rerun knows a retirement is under way even without ``--retire-source``.
    """
    iid = receipt["import_id"]
    if not asked and imports.journal_of(store, iid, "retiring") is None:
        return False
    bound = binding(store.directory, str(store.info()["store_id"]), receipt, mapping)
    doc = record_for(receipt, bound)
    if imports.journal_of(store, iid, "retiring") is None:
        with store.transaction(import_id=iid) as tx:
            imports.journal(tx, iid, "retiring", {"source": str(target(source))})
    retire(source, doc)
    if imports.journal_of(store, iid, "retired") is None:
        with store.transaction(import_id=iid) as tx:
            imports.journal(tx, iid, "retired", {"source": str(target(source))})
    return True
