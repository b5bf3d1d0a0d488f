"""``bbg-migrate demo``: run the main job on a bundled legacy cell store."""

from __future__ import annotations

from migrate import api
from migrate.cli import app
from migrate.cli._render import err, print_table, show, table
from migrate.cli.cmd_pipeline import receipt_facts


@app.command("demo")
def demo_cmd() -> None:
    """Migrate the bundled demo cell.redb into a temporary store, check it, show the receipt
    (exit 3 if the store's digest differs from the source's)."""
    err.print("demo: migrating the bundled legacy store cell.redb into a temporary BBG store ...")
    doc = api.demo()
    grid = table("table", "rows", title="BBG store after the migration")
    for name, rows in doc["tables"].items():
        grid.add_row(name, show(rows))
    print_table(grid)
    err.print(f"archive digest {doc['store_archive_sha256']} equals the source's; links valid")
    if doc["engine"] == "fjall":
        err.print("the store is the real BBG database (a Fjall keyspace): every checksum "
                  "verified, bbg's open checks accept it")
    receipt_facts(doc["receipt"])
