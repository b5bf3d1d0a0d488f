"""Per-job results: the error document, the result document, and the report directory.

A job's result (``schemas/fleet-job.schema.json``) holds its ``source``, ``store``,
``exit_code`` and either ``receipt`` (the exact document ``run --json`` prints) or ``error``
(one error document: ``code``, ``exit_code``, ``message``, ``context``).  The exit code of an
error comes from the error class itself (``MigrateError.exit_code``), the project's single
exception-to-exit-code mapping that ``migrate.cli.main`` also uses; anything else is an
internal error, exit 1, as there.

In a report directory each result is ``jobs/<job key>.json``, written atomically (temporary
file, fsync, rename, fsync of the directory), so shards and resumed runs merge by key and a
kill never leaves half a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema

import schemas
from bbg_core import documents
from bbg_core.canonical import canonical_json
from bbg_core.errors import UsageError
from bbg_core.files import atomic_write

JOB_FORMAT = "bbg-migrate/fleet-job/1"
JOBS_DIR = "jobs"


def atomic_write_json(path: Path, doc: Any) -> None:
    """Write ``doc`` to ``path`` so that a reader sees the old file or the whole new one."""
    atomic_write_text(path, canonical_json(doc, ascii=True) + "\n")


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (its directory made as needed) so that a reader sees the old
    file or the whole new one (:func:`bbg_core.files.atomic_write`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text.encode("utf-8"))


def write_job(report_dir: Path, result: dict[str, Any]) -> Path:
    """Validate and atomically write one job result into ``report_dir/jobs/``."""
    schemas.validate(result, "fleet-job")
    path = report_dir / JOBS_DIR / f"{result['job']}.json"
    atomic_write_json(path, result)
    return path


def read_json(path: Path, schema: str) -> dict[str, Any]:
    """A report file, validated; UsageError naming the file when it is not one."""
    doc = documents.read(path, hint=f"not a {schema} report; name the report directory a "
                         "fleet run wrote")  # fmt: skip
    try:
        schemas.validate(doc, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top)"
        raise UsageError(
            f"{path}: not a valid {schema} document at {where}: {exc.message}", path=str(path)
        ) from exc
    result: dict[str, Any] = doc
    return result


def read_jobs(report_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every job result in ``report_dir/jobs/`` (temporary files of a killed write skipped)."""
    folder = report_dir / JOBS_DIR
    if not folder.is_dir():
        return []
    return [
        (p, read_json(p, "fleet-job"))
        for p in sorted(folder.glob("*.json"))
        if not p.name.startswith(".")
    ]
