"""``mcp``: the store as a read-only Model Context Protocol server on stdio."""

from __future__ import annotations

from pathlib import Path

import typer

from migrate import api
from migrate.cli import app
from migrate.cli._paths import store_option
from migrate.cli._state import named_store

STORE = store_option("The BBG store directory (default ./bbg).")
WRITE = typer.Option(
    False, "--write", help="Also offer the mutating tool (apply_events). Off by default."
)


@app.command("mcp")
def mcp_cmd(write: bool = WRITE, store: Path = STORE) -> None:
    """Serve the store over MCP on stdio (needs the `mcp` extra: pip install
    'bbg-migrate[mcp]'). Read-only by default: SQLite opened read-only, only read tools
    (heads, history pages, resolve, content with size caps, tail from a tx, ledger, doctor,
    inspect); --write adds apply_events for a store the agent may change."""
    named = named_store(store)
    api.mcp_serve(api.resolve_store_dir(named, create=False), write=write)
