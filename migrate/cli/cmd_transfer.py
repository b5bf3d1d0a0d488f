"""``transfer``: BBG → BBG sealed transfer; and the step verbs when SOURCE is a BBG store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from bbg_core.errors import UsageError
from migrate import api
from migrate.cli import app
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
PAGE_ROWS = typer.Option(512, "--page-rows", min=1, max=512, help="Rows per copied page.")
JSON = typer.Option(False, "--json", help="One JSON document on stdout.")


def _job(source: Path, store: Path | None, nonce: str | None, page_rows: int) -> api.TransferJob:
    named = named_store(store)
    return api.TransferJob(source=source, store=named, nonce=nonce, page_rows=page_rows)


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
        return
    p = doc["progress"]
    err.print(
        f"{doc['status']}: transfer {doc['manifest']}, {show(p['rows'])} of "
        f"{count(doc['rows_total'], 'row')} copied ({size(p['bytes'])})"
    )
    if outcome.status == "staging":
        err.print("copying is not complete: run the same command again to continue")


def plan_report(doc: dict[str, Any], as_json: bool) -> None:
    """Render a transfer plan."""
    if as_json:
        emit_json(doc, "transfer-plan")
        return
    rows: list[tuple[str, Any]] = [
        ("action", doc["action"]), ("nonce", doc["nonce"]), ("rows", doc["rows"]),
        ("key+value bytes", size(doc["key_value_bytes"])),
        ("generation after", doc["generation_after"]), ("namespaces", len(doc["namespaces"])),
        ("source sealed", doc["source"]["sealed"]),
    ]  # fmt: skip
    if doc["progress"] is not None:
        rows.append(("copied", count(doc["progress"]["rows"], "row")))
    facts(f"transfer plan: {doc['source']['path']} -> {doc['target']['path']}", rows)


def step(verb: str, source: Path, store: Path | None, nonce: str | None, as_json: bool,
         legacy: dict[str, Any] | None = None, *, pages: int | None = None,
         page_rows: int = 512, receipt: Path | None = None) -> bool:  # fmt: skip
    """Run step ``verb`` as a transfer when SOURCE is a BBG store; False when it is not.

    ``legacy``: the options that only apply to a legacy source (refused for a store);
    ``receipt``: ``--receipt FILE``, written with the transfer receipt (or, for ``validate``,
    the transfer report) under the same write-once rules as a migration's.
    """
    if not api.is_store(source):
        return False
    given = sorted(name for name, value in (legacy or {}).items() if value)
    if given:
        raise UsageError(
            f"{source} is a BBG store (a transfer source): "
            f"{', '.join('--' + g.replace('_', '-') for g in given)} "
            "apply to legacy sources only",
            path=str(source),
        )
    job = _job(source, store, nonce, page_rows)
    with watch(as_json) as observer:
        progress = api.progress_phase(observer, "transfer" if verb == "run" else verb)
        if verb == "plan":
            plan_report(api.transfer_plan(job, progress), as_json)
            return True
        if verb in ("run", "transfer"):
            outcome = api.transfer(job, max_pages=pages, progress=progress)
        elif verb == "stage":
            outcome = api.transfer_stage(job, max_pages=pages, progress=progress)
        else:
            verbs = {
                "seal": api.transfer_seal,
                "validate": api.transfer_validate,
                "activate": api.transfer_activate,
            }
            outcome = verbs[verb](job, progress)
    keep(outcome, receipt)
    report(outcome, as_json)
    return True


@app.command("transfer")
def transfer_cmd(
    source: Path = SOURCE, store: Path = STORE, nonce: str = NONCE, pages: int = PAGES,
    page_rows: int = PAGE_ROWS, receipt: Path = RECEIPT, as_json: bool = JSON,
) -> None:  # fmt: skip
    """Seal a BBG store and move its history into another store; prints the receipt."""
    if not step("transfer", source, store, nonce, as_json, pages=pages, page_rows=page_rows,
                receipt=receipt):  # fmt: skip
        api.detect(source)  # a path that cannot be read: exit 1, naming the OS's reason
        raise UsageError(
            f"{source} is not a BBG store; migrate a legacy file with `bbg-migrate run`",
            path=str(source),
        )
