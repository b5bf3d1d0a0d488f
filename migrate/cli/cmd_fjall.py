"""``bbg-migrate fjall dump|info|check``: look inside a Fjall keyspace (read-only).

A Fjall keyspace is the directory of the real BBG database; these commands read it the way
fjall recovers it, verifying every checksum, and never change it (they also read a keyspace
that its owner has open: a consistent snapshot, without taking its lock).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.text import Text

from bbg_core.errors import FjallCorrupt
from migrate import api
from migrate.cli import app
from migrate.cli._progress import watch
from migrate.cli._render import emit_json, err, print_table, table
from migrate.cli.cmd_redb import _write_lines

fjall_app = typer.Typer(
    help="Read a Fjall keyspace (the BBG database directory): a canonical dump, a summary, or "
    "a full verification.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(fjall_app, name="fjall")

DIR_ARG = typer.Argument(
    ..., help="The keyspace directory (opened read-only).", show_default=False,
    file_okay=False, readable=False,
)  # fmt: skip
JSON_OPT = typer.Option(False, "--json", help="One JSON document on stdout.")


@fjall_app.command("dump")
def dump_cmd(dir: Path = DIR_ARG) -> None:
    """One JSON line per live row, sorted by partition then key (the oracle format)."""
    _write_lines(api.fjall_dump(dir))


@fjall_app.command("info")
def info_cmd(dir: Path = DIR_ARG, as_json: bool = JSON_OPT) -> None:
    """Journals (batches, items, seqnos, torn tail), segments per level, rows, bytes."""
    with watch(as_json) as progress:
        doc = api.fjall_info(dir, progress=progress)
    if as_json:
        emit_json(doc, "fjall-info")
    else:
        _show_info(doc)


@fjall_app.command("check")
def check_cmd(dir: Path = DIR_ARG, as_json: bool = JSON_OPT) -> None:
    """Verify every block and batch checksum, the index, levels and key order; exit 3
    naming the first problem."""
    with watch(as_json) as progress:
        doc = api.fjall_check(dir, progress=progress)
    if as_json:
        emit_json(doc, "fjall-check")
    else:
        _show_check(doc)
    _fail_if_damaged(doc)


def _fail_if_damaged(doc: dict[str, Any]) -> None:
    if doc["ok"]:
        return
    first = doc["problems"][0]
    more = len(doc["problems"]) - 1
    raise FjallCorrupt(first["message"] + (f" (and {more} more)" if more else ""),
                       path=first["path"], offset=first["offset"], what=first["what"])  # fmt: skip


def _show_info(doc: dict[str, Any]) -> None:
    grid = table("journal", "role", "bytes", "data bytes", "batches", "items", "seqnos", "torn")
    for j in doc["journals"]:
        seqnos = "-" if j["seqnos"] is None else f"{j['seqnos'][0]}..{j['seqnos'][1]}"
        cells = (j["name"], j["role"], f"{j['bytes']:,}", f"{j['data_bytes']:,}",
                 f"{j['batches']:,}", f"{j['items']:,}", seqnos,
                 "yes" if j["torn_batch"] else "no")  # fmt: skip
        grid.add_row(*(Text(c) for c in cells))
    print_table(grid)
    grid = table("partition", "rows", "levels", "segment bytes", "journal items")
    for name, p in doc["partitions"].items():
        levels = " ".join(f"{lv}:{','.join(map(str, ids))}" for lv, ids in p["levels"].items())
        row = (name, f"{p['rows']:,}", levels or "-", f"{p['segment_bytes']:,}",
               f"{p['journal_items']:,}")  # fmt: skip
        grid.add_row(*(Text(c) for c in row))
    print_table(grid)
    err.print(f"{doc['path']}: {doc['partition_count']} partitions, {doc['rows']:,} live rows, "
              f"{doc['bytes']:,} bytes ({doc['reader']} reader)", markup=False, soft_wrap=True)


def _show_check(doc: dict[str, Any]) -> None:
    c = doc["checked"]
    for note in doc["notes"]:
        err.print(f"note: {note}", markup=False, soft_wrap=True)
    if doc["ok"]:
        err.print(f"{doc['path']}: ok -- {c['journal_batches']:,} journal batches, "
                  f"{c['segments']:,} segments, {c['blocks']:,} blocks, {c['items']:,} items "
                  "verified", markup=False, soft_wrap=True)  # fmt: skip
    for p in doc["problems"]:
        err.print(f"problem: {p['message']}", markup=False, soft_wrap=True)
