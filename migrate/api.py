"""Every verb of bbg-migrate as a plain function; the CLI is a thin layer over these.

| verb | what |
|---|---|
| :func:`detect` | kind of a path by content, redb header facts, lock state |
| :func:`inspect` | read-only report of a cell.redb, BBG store, Signal log or TextArchive |
| :func:`plan` | the dry run of ``run``: same checks, writes nothing |
| :func:`run` | seal, stage, validate, activate (and optionally retire the source) |
| :func:`seal`, :func:`stage`, :func:`validate`, :func:`activate` | the stages one at a time |
| :func:`fixtures_check` | replay legacy fixtures against golden results |
| :func:`redb_scan` | read and verify every page and entry of a redb file |
| :func:`tail`, :func:`follow`, :func:`apply_stream` | event/1 history out and in |
| :func:`write_snapshot`, :func:`restore` | exact retained state out and in |
| :func:`backup`, :func:`doctor` | online backup; read-only health report |
| :func:`demo` | migrate the bundled demo store into a temporary one and check it |

Pipeline verbs take a :class:`Job` (source, store, mapping, nonce, :class:`Bounds`).
"""

from __future__ import annotations

from importers.redb.scan import scan as redb_scan
from migrate.demo import run_demo as demo
from migrate.detect import detect
from migrate.fixtures_check import check as fixtures_check
from migrate.inspect import inspect_path as inspect
from migrate.pipeline import Bounds, Job, Outcome, activate, plan, run, stage, validate
from migrate.pipeline import seal_only as seal
from migrate.share import (
    apply_stream,
    backup,
    doctor,
    follow,
    restore,
    tail,
    write_snapshot,
)

__all__ = [
    "Bounds",
    "Job",
    "Outcome",
    "activate",
    "apply_stream",
    "backup",
    "demo",
    "detect",
    "doctor",
    "fixtures_check",
    "follow",
    "inspect",
    "plan",
    "redb_scan",
    "restore",
    "run",
    "seal",
    "stage",
    "tail",
    "validate",
    "write_snapshot",
]
