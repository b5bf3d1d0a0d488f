"""Confirmation of ``run --retire-source``: shown and asked on a terminal, ``--yes`` in a
script, and refused (exit 2, nothing done) when nobody can be asked."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from bbg_core.errors import UsageError
from migrate import api
from migrate.cli._render import err


def confirm_retirement(source: Path, retire_source: bool, yes: bool) -> None:
    """Return when the retirement may go ahead; UsageError (exit 2) before anything is done
    when it is not confirmed."""
    if not retire_source or yes:
        return
    plan = api.retirement_preview(source)
    if plan is None:  # already retired, or a retirement a rerun finishes: nothing moves
        return
    if not (os.isatty(0) and os.isatty(2)):
        raise UsageError(
            f"--retire-source moves {plan['file']} into a retirement directory and needs a "
            "confirmation, but stdin/stderr are not a terminal: pass --yes to confirm it "
            "from a script; nothing was done",
            path=str(source),
        )
    for line in api.retirement_lines(plan):
        err.print(line, markup=False, soft_wrap=True)
    if not typer.confirm("Migrate, then retire the source?", default=False, err=True):
        raise UsageError("the retirement was not confirmed; nothing was done", path=str(source))
