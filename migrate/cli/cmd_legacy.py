"""``bbg-migrate legacy inspect``: read-only report on an old Signal log or TextArchive."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from migrate.cli import app
from migrate.cli._render import emit_json, err
from migrate.errors import SourceError, ValidationFailed

legacy_app = typer.Typer(
    help="Read old cyb Signal logs and TextArchives (read-only).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(legacy_app, name="legacy")

KINDS = ("signal-log", "text-archive")
FILE_ARG = typer.Argument(..., help="The log or archive (read-only).", show_default=False)
KIND_OPT = typer.Option(None, "--kind", help="signal-log or text-archive (default: by content).")
JSON_OPT = typer.Option(False, "--json", help="One JSON document on stdout.")
_SNIFF = 4096


def sniff(path: Path) -> str:
    """``signal-log`` or ``text-archive``, judged by the content of ``path``."""
    from importers.signal_log import looks_like_signal_log
    from importers.text_archive import looks_like_text_archive

    try:
        with path.open("rb") as handle:
            head = handle.read(_SNIFF)
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror}", path=str(path)) from exc
    if looks_like_signal_log(head):
        return "signal-log"
    if looks_like_text_archive(head):
        return "text-archive"
    what = "is empty" if not head else "is neither a Signal log nor a TextArchive"
    raise SourceError(f"{path}: {what} by its content; name the format with --kind", path=str(path))


def inspect_doc(path: Path, kind: str) -> dict[str, Any]:
    """The inspect report of ``path`` read as ``kind``."""
    if kind == "signal-log":
        from importers.signal_log import inspect_signal_log

        return inspect_signal_log(path)
    from importers.text_archive import inspect_text_archive

    return inspect_text_archive(path)


def _render(doc: dict[str, Any]) -> None:
    table = Table(title=f"{doc['kind']}: {doc['path']}", show_header=False)
    keys = ["size_bytes", "valid", "event_count", "per_sigil", "signal_suffixes",
            "valid_prefix_events", "valid_prefix_end", "line_count", "distinct_texts",
            "sha256", "hemera_source_digest", "hemera_file"]  # fmt: skip
    for key in keys:
        if key in doc:
            table.add_row(key, str(doc[key]))
    err.print(table)


@legacy_app.command("inspect")
def inspect_cmd(
    file: Path = FILE_ARG,
    kind: str = KIND_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Decode the whole file strictly and report counts, digests and errors (exit 3 if invalid)."""
    if kind is not None and kind not in KINDS:
        raise typer.BadParameter(f"must be one of {', '.join(KINDS)}", param_hint="--kind")
    doc = inspect_doc(file, kind or sniff(file))
    if as_json:
        emit_json(doc, f"{doc['kind']}-inspect")
    else:
        _render(doc)
    if not doc["valid"]:
        # Raised, not typer.Exit: exceptions are what ``main`` maps to exit codes (3 here).
        errors = doc["errors"]
        more = doc.get("error_count", len(errors)) - 1
        tail = f" (and {more} more)" if more > 0 else ""
        raise ValidationFailed(
            f"{errors[0]['message']}{tail}", path=str(file), errors=errors, kind=doc["kind"]
        )
