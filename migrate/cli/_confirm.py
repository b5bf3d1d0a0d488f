"""Confirmation of what cannot be undone (``run --retire-source``, ``excise``, ``nohistory``,
the transfer seal, also of a fleet's jobs): shown and asked on a terminal, ``--yes`` in a
script, and refused (exit 2, nothing done) when nobody can be asked."""

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

    confirm(
        f"--retire-source moves {plan['file']} into a retirement directory",
        "the retirement",
        "Migrate, then retire the source?",
        source,
        show,
    )


def confirm_transfer_seal(job: object, yes: bool) -> None:
    """Before a transfer seals its BBG source (``transfer``, and ``run``/``seal``/``stage``/
    ``validate``/``activate`` of a BBG store): the seal is for good, so it is confirmed like
    ``--retire-source``.  Asks nothing for a legacy source or a source already sealed."""
    if yes or not api.is_transfer(job) or api.transfer_sealed(Path(job.source)):
        return
    source, target = Path(job.source), job.store or Path("bbg")

    def show() -> None:
        err.print(f"The transfer seals {source} for {target}, for good: from then on the "
                  "source refuses every write (its status becomes export-v1); it is still "
                  "read (tail, snapshot, inspect, doctor), and only this transfer continues.",
                  markup=False, soft_wrap=True)  # fmt: skip

    confirm(
        f"the transfer seals {source} for good (it refuses writes afterwards)",
        "the transfer seal",
        "Seal the source and transfer?",
        source,
        show,
    )


def confirm_fleet_seals(jobs: list[Any], manifest: Path, yes: bool) -> None:
    """Before ``fleet run`` starts: every job whose source is a BBG store not yet sealed seals
    it for good, as ``run STORE`` does; those are named (job, source, target) and confirmed
    once for the fleet.  Asks nothing when no job would seal a store."""
    if yes:
        return
    sealing = api.fleet_seals(jobs)
    if not sealing:
        return
    named = "; ".join(f"job {job.name} seals {moving.source} for {moving.store}"
                      for job, moving in sealing)  # fmt: skip

    def show() -> None:
        err.print(f"{len(sealing)} job(s) of the fleet seal a BBG store source for good: from "
                  "then on each refuses every write (its status becomes export-v1); it is "
                  "still read, and only its transfer continues.",
                  markup=False, soft_wrap=True)  # fmt: skip
        for job, moving in sealing:
            err.print(f"  job {job.name}: seals {moving.source} for {moving.store}",
                      markup=False, soft_wrap=True)  # fmt: skip

    confirm(
        f"fleet run seals BBG store sources for good ({named})",
        "the transfer seal",
        "Seal these sources and run the fleet?",
        manifest,
        show,
    )


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
