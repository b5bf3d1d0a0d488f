"""Confirmation of what cannot be undone (``run --retire-source``, ``excise``, ``nohistory``,
the transfer seal): shown and asked on a terminal, ``--yes`` in a script, and refused (exit 2,
nothing done) when nobody can be asked."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

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

    def show() -> None:
        for line in api.retirement_lines(plan):
            err.print(line, markup=False, soft_wrap=True)

    confirm(f"--retire-source moves {plan['file']} into a retirement directory", "the retirement",
            "Migrate, then retire the source?", source, show)


def confirm(what: str, name: str, question: str, path: Path, show: Callable[[], Any]) -> None:
    """Ask ``question`` after ``show()`` printed the plan; UsageError (exit 2, nothing done) if
    nobody can be asked (stdin/stderr not a terminal: the caller's ``--yes`` is the answer)
    or the answer is no.  ``what``: what the command does; ``name``: the operation."""
    if not (os.isatty(0) and os.isatty(2)):
        raise UsageError(
            f"{what} and needs a confirmation, but stdin/stderr are not a terminal: pass --yes "
            "to confirm it from a script; nothing was done",
            path=str(path),
        )
    show()
    if not typer.confirm(question, default=False, err=True):
        raise UsageError(f"{name} was not confirmed; nothing was done", path=str(path))
