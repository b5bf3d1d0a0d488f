"""``bbg-migrate fixtures check DIR``: replay legacy fixtures against golden results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from bbg_core.errors import ValidationFailed
from migrate import api
from migrate.cli import app
from migrate.cli._progress import watch
from migrate.cli._render import emit_json, err

fixtures_app = typer.Typer(
    help="Legacy fixtures with golden results, for CI.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(fixtures_app, name="fixtures")
DIR_ARG = typer.Argument(..., help="Directory of fixtures (*.expected.json).", readable=False)
BLESS_OPT = typer.Option(False, "--bless", help="Write golden receipts that are missing.")
JSON_OPT = typer.Option(False, "--json", help="One JSON document on stdout.")
KIND_OPT = typer.Option(
    None,
    "--kind",
    metavar="GLOB=KIND",
    help="GLOB=KIND, repeatable: how to read inputs whose content cannot tell (0-byte files), "
    "e.g. 'empty-*.log=bbg-frame-log'. Default: .log = signal-log, .jsonl = text-archive.",
)


@fixtures_app.command("check")
def check_cmd(
    directory: Path = DIR_ARG,
    bless: bool = BLESS_OPT,
    kind: list[str] = KIND_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Replay every fixture in DIRECTORY; exit 3 on any difference from its golden result."""
    show = None if as_json else _show
    with watch(as_json) as progress:
        report = api.fixtures_check(directory, bless=bless, kinds=kind, on_result=show,
                                    progress=progress)  # fmt: skip
    if as_json:
        emit_json(report, "fixtures-check")
    _verdict(directory, report, as_json)


def _show(result: dict[str, Any]) -> None:
    mark = "ok  " if result["ok"] else "FAIL"
    err.print(f"{mark} {result['fixture']}", markup=False)
    for diff in result["differences"]:
        err.print(f"     {diff}", markup=False)
    if result.get("unpinned"):
        err.print(f"     not pinned: {', '.join(result['unpinned'])}", markup=False)


def _verdict(directory: Path, report: dict[str, Any], as_json: bool) -> None:
    if report["failed"]:
        raise ValidationFailed(
            f"{directory}: {report['failed']} of {report['fixtures']} fixtures differ from their "
            "golden results",
            path=str(directory),
        )
    if not as_json:
        err.print(f"all {report['fixtures']} fixtures match their golden results")
