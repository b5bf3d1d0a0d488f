"""``bbg-migrate schema [NAME]``: the JSON Schemas of every document bbg-migrate reads or
writes (shipped in the package, so they are there after ``pip install``)."""

from __future__ import annotations

import sys

import typer

from migrate import api
from migrate.cli import app
from migrate.cli._render import err

NAME = typer.Argument(
    None, metavar="NAME", help="A schema name (e.g. receipt, error); none: list them all.",
    show_default=False,
)  # fmt: skip


@app.command("schema")
def schema_cmd(name: str | None = NAME) -> None:
    """Print the JSON Schema NAME on stdout, or list every schema with its title."""
    if name is None:
        for found, title in api.schema_titles().items():
            err.print(f"{found}  {title}", markup=False)
        return
    sys.stdout.write(api.schema_text(name))
    sys.stdout.flush()
