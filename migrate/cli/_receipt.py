"""``--receipt FILE``: the option, and how a command keeps its receipt (a migration or a
transfer alike)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import typer

from migrate import api
from migrate.cli._paths import path_arg
from migrate.cli._render import err

RECEIPT = typer.Option(
    None,
    "--receipt",
    metavar="FILE",
    help="Also write the receipt (a transfer's: its transfer receipt; validate: the "
    "validation report) to FILE as JSON: atomically (temporary file, fsync, link, fsync of "
    "the directory), never over a different one (exit 4).",
    parser=path_arg,
)


class Outcome(Protocol):
    """What a step returns: ``api.Outcome`` or ``api.TransferOutcome``."""

    @property
    def status(self) -> str: ...

    @property
    def receipt(self) -> dict[str, Any] | None: ...

    def to_json(self) -> dict[str, Any]: ...


def keep(outcome: Outcome, path: Path | None) -> None:
    """``--receipt FILE``: write the receipt (or validation report) once, atomically."""
    if path is None:
        return
    doc = outcome.receipt if outcome.receipt is not None else outcome.to_json()
    if outcome.receipt is None and outcome.status != "validated":
        err.print(f"no receipt yet ({outcome.status}): {path} not written", markup=False)
    elif api.write_receipt(path, doc):
        err.print(f"receipt written to {path}", markup=False)
    else:
        err.print(f"{path} already holds this receipt; left as it was", markup=False)
