"""``detect`` and ``inspect``: read-only looks at a source or a store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from bbg_core.errors import ValidationFailed
from migrate import api
from migrate.cli import app
from migrate.cli._help import AnyKind, ContentCheck
from migrate.cli._progress import watch
from migrate.cli._render import emit_json, err, facts, print_table, say, show, size, table

PATH_ARG = typer.Argument(
    ..., help="The file or store directory (read-only).", show_default=False, readable=False
)
JSON_OPT = typer.Option(False, "--json", help="One JSON document on stdout.")
KIND_OPT = typer.Option(
    None,
    "--kind",
    help="How to read PATH (default: judged by its content).",
)

CONTENT_CHECK_OPT = typer.Option(
    "codec",
    "--content-check",
    help="cell.redb / BBG store: codec = decode every Blob and Data row and verify its id; "
    "none = structural and link rules only (bbg's raw converter).",
)

_SUMMARY_KEYS = (
    "size_bytes", "valid", "content_check", "data_id_scheme", "event_count", "per_sigil",
    "signal_suffixes", "blocks", "link_count", "box_move_count", "last_height",
    "valid_prefix_events", "valid_prefix_end", "line_count", "distinct_texts", "sha256",
    "archive_digest_sha256", "archive_digest_hemera", "hemera_source_digest", "hemera_file",
)  # fmt: skip


@app.command("detect")
def detect_cmd(path: Path = PATH_ARG, as_json: bool = JSON_OPT) -> None:
    """Say what PATH holds, judged by its content (redb facts include the lock state)."""
    doc = api.detect(path)
    if as_json:
        emit_json(doc, "detect")
        return
    redb = doc.get("redb") or {}
    extra = ", ".join(f"{k.replace('_', ' ')} {show(v)}" for k, v in redb.items())
    if doc["kind"] == "bbg" and "engine" in doc:
        real = ": the real BBG database" if doc["engine"] == "fjall" else ""
        locked = doc.get("locked")
        lock = "" if locked is None else "; locked by a writer" if locked else "; not locked"
        extra = f"{doc['engine']} engine{real}{lock}"
    line = f"{doc['path']}: {doc['kind']}" + (f" ({extra})" if extra else "")
    say(line)


def _render(doc: dict[str, Any]) -> None:
    rows = [(key.replace("_", " "), size(doc[key]) if key == "size_bytes" else doc[key])
            for key in _SUMMARY_KEYS if key in doc]  # fmt: skip
    facts(f"{doc['kind']}: {doc['path']}", rows)
    if "tables" in doc:
        grid = table("table", "kind", "rows", "key bytes", "value bytes", title="tables")
        for name, t in doc["tables"].items():
            grid.add_row(name, t["kind"], show(t["rows"]), show(t["key_bytes"]),
                         show(t["value_bytes"]))  # fmt: skip
        print_table(grid)
        err.print(f"namespaces: {show(len(doc['namespaces']))}")
        refused = doc.get("semantic_errors", [])
        if refused:
            err.print(
                f"{len(refused)} namespace(s) could not be mapped origins "
                "(neuron's semantic import); a plain conversion is not affected:"
            )
            for e in refused[:20]:
                err.print(f"  {e['code']}: {e['detail']}", markup=False)
    for prepared in doc.get("neuron_imports", []):
        err.print(
            f"mapped import {prepared['import_id']}: {prepared['state']}; complete with "
            f"`{prepared['complete_with']}`",
            markup=False,
        )
    for e in doc.get("errors", [])[:20]:
        where = e.get("detail") or e.get("message") or ""
        err.print(f"  {e['code']}: {where}", markup=False)


@app.command("inspect")
def inspect_cmd(
    path: Path = PATH_ARG,
    kind: AnyKind = KIND_OPT,
    content_check: ContentCheck = CONTENT_CHECK_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Read-only report: tables, namespaces, digests, errors (exit 3 when invalid)."""
    with watch(as_json) as progress:
        doc = api.inspect(path, kind=kind, progress=progress, content_check=content_check)
    if as_json:
        emit_json(doc, f"{doc['kind']}-inspect")
    else:
        _render(doc)
    _fail_if_invalid(path, doc)


def _fail_if_invalid(path: Path, doc: dict[str, Any]) -> None:
    """Exit 3 naming the first error (and how many more) when the input breaks a rule."""
    if doc["valid"]:
        return
    first = doc["errors"][0]
    text = first.get("message") or f"{first['code']}: {first.get('detail', '')}"
    more = doc.get("error_count", len(doc["errors"])) - 1
    raise ValidationFailed(
        f"{path}: invalid: {text}" + (f" (and {more} more)" if more > 0 else ""),
        path=str(path),
        errors=doc["errors"],
    )
