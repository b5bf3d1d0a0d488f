"""``bbg-migrate redb tables|dump|scan``: look inside a redb file (read-only)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from rich.text import Text

from migrate import api
from migrate.cli import app
from migrate.cli._progress import watch
from migrate.cli._render import emit_json, err, print_table, table

redb_app = typer.Typer(
    help="Read a redb file (cell.redb): its tables, a canonical dump, or a verifying scan.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(redb_app, name="redb")

FILE_ARG = typer.Argument(
    ..., help="The redb file (opened read-only).", show_default=False, readable=False
)
_CHUNK = 1 << 16


@redb_app.command("tables")
def tables_cmd(
    file: Path = FILE_ARG,
    as_json: bool = typer.Option(False, "--json", help="One JSON document on stdout."),
) -> None:
    """List the tables of FILE: name, kind, key/value type, length, root page."""
    doc = api.redb_tables(file)
    if as_json:
        emit_json(doc, "redb-tables")
    else:
        _show_tables(doc)


def _show_tables(doc: dict[str, Any]) -> None:
    h = doc["header"]
    err.print(
        f"{doc['path']}: redb file format {h['format_version']}, page size {h['page_size']}, "
        f"transaction {h['transaction_id']}, commit slot {h['selected_slot']}"
        + (", recovery was required" if h["recovery_required"] else ""),
        markup=False,
        soft_wrap=True,
    )
    grid = table("table", "kind", "key type", "value type", "len", "root page")
    for t in doc["tables"]:
        # Text cells: type names such as "[u8;32]" must not be read as rich markup.
        cells = (t["name"], t["kind"], t["key_type"], t["value_type"], f"{t['len']:,}", t["root"])
        grid.add_row(*(Text(c or "-") for c in cells))
    print_table(grid)


@redb_app.command("dump")
def dump_cmd(
    file: Path = FILE_ARG,
    table: str | None = typer.Option(None, "--table", help="Dump only this table."),
) -> None:
    """Canonical JSONL dump of FILE (the oracle format), on stdout as UTF-8."""
    try:
        _write_lines(api.redb_dump(file, table))
    except BrokenPipeError:
        # The reader of our output went away (``| head``): not an error.  Point stdout at
        # /dev/null so the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


@redb_app.command("scan")
def scan_cmd(
    file: Path = FILE_ARG,
    as_json: bool = typer.Option(False, "--json", help="One JSON document on stdout."),
) -> None:
    """Read every entry of every table of FILE, verifying every page checksum; report
    entries, key+value bytes, seconds and entries/s per table and in total."""
    with watch(as_json) as progress:
        doc = api.redb_scan(file, progress=progress)
    if as_json:
        emit_json(doc, "redb-scan")
    else:
        _show_scan(file, doc)


def _show_scan(file: Path, doc: dict[str, Any]) -> None:
    grid = table("table", "kind", "entries", "key+value bytes", "seconds", "entries/s")
    rows = [*doc["tables"], {**doc, "name": "total", "kind": ""}]
    for t in rows:
        cells = (
            t["name"],
            t["kind"],
            f"{t['entries']:,}",
            f"{t['key_value_bytes']:,}",
            f"{t['seconds']:.3f}",
            f"{t['entries_per_s']:,.0f}",
        )
        grid.add_row(*(Text(c) for c in cells))
    print_table(grid)
    err.print(
        f"{file}: every page verified ({doc['pages_read']:,} pages, redb file format "
        f"{doc['format_version']}, {doc['reader']} reader); the total includes opening the file",
        markup=False,
        soft_wrap=True,
    )


def _write_lines(lines: Iterator[str]) -> None:
    """Write ``lines`` as UTF-8 to stdout, newline-terminated, in chunks of about 64 KiB."""
    stream = sys.stdout.buffer
    pending: list[str] = []
    size = 0
    for line in lines:
        pending.append(line)
        size += len(line)
        if size >= _CHUNK:
            stream.write(("\n".join(pending) + "\n").encode("utf-8"))
            pending, size = [], 0
    if pending:
        stream.write(("\n".join(pending) + "\n").encode("utf-8"))
    stream.flush()
