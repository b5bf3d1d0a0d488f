"""``transfer``: BBG → BBG sealed transfer; and how a transfer's outcome and plan are shown
(also by ``run``, ``plan`` and the step verbs, which mean a transfer for a BBG store SOURCE)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from bbg_core.errors import NotReady
from migrate import api
from migrate.cli import app
from migrate.cli._confirm import confirm_transfer_seal
from migrate.cli._paths import store_option
from migrate.cli._progress import watch
from migrate.cli._receipt import RECEIPT, keep
from migrate.cli._render import count, emit_json, err, facts, print_table, show, size, table
from migrate.cli._state import named_store

SOURCE = typer.Argument(
    ...,
    help="The BBG store to transfer from (sealed for good: it refuses writes afterwards).",
    show_default=False,
    readable=False,
)
STORE = store_option("The target BBG store directory (default ./bbg).")
NONCE = typer.Option(
    None, "--nonce", help="Transfer nonce (64 hex); default: derived from the source store."
)
PAGES = typer.Option(None, "--pages", min=1, help="Copy at most N bounded pages in this call.")
MAX_PAGE_ROWS = api.Bounds().page_rows  # the library's default, and its largest page
PAGE_ROWS = typer.Option(
    MAX_PAGE_ROWS, "--page-rows", min=1, max=MAX_PAGE_ROWS, help="Rows per copied page."
)
JSON = typer.Option(False, "--json", help="One JSON document on stdout.")
YES = typer.Option(
    False, "--yes", "-y", help="Confirm the seal without asking (scripts): it is for good, so "
    "it is asked on a terminal and needs --yes off one (not asked once the source is sealed).",
)


def _receipt_table(receipt: dict[str, Any]) -> None:
    facts("transfer receipt", [
        ("manifest", receipt["manifest"]), ("target", receipt["target"]),
        ("nonce", receipt["nonce"]),
        ("archive digest", receipt["digests"]["source_archive_sha256"]),
        ("namespaces", receipt["counts"]["namespaces"]), ("generation", receipt["generation"]),
    ])  # fmt: skip
    grid = table("table", "rows", "new rows")
    for name, rows in receipt["counts"]["rows"].items():
        grid.add_row(name, show(rows), show(receipt["counts"]["new_rows"].get(name, 0)))
    print_table(grid)


def report(outcome: api.TransferOutcome, as_json: bool) -> None:
    """Render a transfer outcome: the receipt when activated, else how far it got."""
    if outcome.receipt is not None:
        if as_json:
            emit_json(outcome.receipt, "transfer-receipt")
        else:
            _receipt_table(outcome.receipt)
            err.print(f"complete: transfer {outcome.manifest}; the source stays sealed")
        return
    doc = outcome.to_json()
    if as_json:
        emit_json(doc, "transfer-report")
    else:
        p = doc["progress"]
        err.print(
            f"{doc['status']}: transfer {doc['manifest']}, {show(p['rows'])} of "
            f"{count(doc['rows_total'], 'row')} copied ({size(p['bytes'])})"
        )
    if outcome.status == "staging":  # exit 5: a script's `&&` chain stops here, by design
        raise NotReady(
            f"transfer {doc['manifest']}: copying is not complete; run the same command "
            "again to continue (exit 5 until it is)", manifest=doc["manifest"],
        )  # fmt: skip


def plan_report(doc: dict[str, Any], as_json: bool) -> None:
    """Render a transfer plan."""
    if as_json:
        emit_json(doc, "transfer-plan")
        return
    rows: list[tuple[str, Any]] = [
        ("action", doc["action"]),
        ("nonce", doc["nonce"] or "made at the seal (the source has no store id yet; "
                                  "--nonce fixes it)"),
        ("rows", doc["rows"]),
        ("key+value bytes", size(doc["key_value_bytes"])),
        ("generation after", doc["generation_after"]), ("namespaces", len(doc["namespaces"])),
        ("source sealed", doc["source"]["sealed"]),
    ]  # fmt: skip
    if doc["progress"] is not None:
        rows.append(("copied", count(doc["progress"]["rows"], "row")))
    facts(f"transfer plan: {doc['source']['path']} -> {doc['target']['path']}", rows)


@app.command("transfer")
def transfer_cmd(
    source: Path = SOURCE, store: Path = STORE, nonce: str = NONCE, pages: int = PAGES,
    page_rows: int = PAGE_ROWS, receipt: Path = RECEIPT, as_json: bool = JSON, yes: bool = YES,
) -> None:  # fmt: skip
    """Seal a BBG store and move its history into another store; prints the receipt."""
    job = api.transfer_job(source, named_store(store), nonce=nonce, page_rows=page_rows)
    confirm_transfer_seal(job, yes)
    with watch(as_json) as observer:
        progress = api.progress_phase(observer, "transfer")
        outcome = api.transfer(job, max_pages=pages, progress=progress)
        keep(outcome, receipt)
        report(outcome, as_json)
