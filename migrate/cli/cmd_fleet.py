"""``bbg-migrate fleet plan|run|report``: many migrations from one manifest."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from migrate import api
from migrate.cli import app
from migrate.cli._confirm import confirm_fleet_seals
from migrate.cli._fleet_view import FleetView
from migrate.cli._render import emit_json, err, stderr_console

fleet_app = typer.Typer(
    help="Many migrations from one manifest (fleet.toml): plan, run (a process pool, "
    "resumable, shardable across machines) and merged reports.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(fleet_app, name="fleet")

MANIFEST = typer.Argument(
    ...,
    help="The fleet manifest (TOML, or JSON by its .json suffix).",
    show_default=False,
    readable=False,
)
JSON = typer.Option(False, "--json", help="One JSON document on stdout.")
WORKERS = typer.Option(None, "--workers", min=1, help="Worker processes (default: the cores).")
SHARD = typer.Option(
    None, "--shard", help="I/N: only the jobs of shard I (0-based) of N, chosen by a stable hash."
)
REPORT_DIR = typer.Option(
    None, "--report-dir", help="Write each job's result (and the run report) here.", readable=False
)
SKIP_DONE = typer.Option(
    False, "--skip-done", help="Trust successful results already in --report-dir: no rerun."
)
DIRS = typer.Argument(
    ..., help="Report directories (--report-dir of fleet runs) or fleet report files.",
    show_default=False, readable=False,
)  # fmt: skip
REPORT_MANIFEST = typer.Option(
    None, "--manifest", help="Also name every job of this manifest that has no result.",
    readable=False,
)  # fmt: skip
YES = typer.Option(
    False, "--yes", "-y", help="Confirm the seal of the BBG store sources the jobs transfer "
    "(asked on a terminal; needed in a script).",
)  # fmt: skip
HTML = typer.Option(None, "--html", help="Also write a self-contained HTML page.", readable=False)


@contextmanager
def _view(jobs: list[Any], label: str, as_json: bool) -> Iterator[FleetView | None]:
    if as_json or not err.is_terminal:
        yield None
        return
    with FleetView(stderr_console(), jobs, label) as view:
        yield view


def _short(path: str, manifest: str | None) -> str:
    """``path`` relative to the manifest's directory when it lies inside it (display only)."""
    if manifest:
        base = os.path.dirname(manifest)
        if os.path.commonpath([base, path]) == base:
            return os.path.relpath(path, base)
    return path


def _job_lines(j: dict[str, Any], manifest: str | None) -> Text:
    """Two lines per job; ids and messages are printed whole (soft-wrapped, never cut)."""
    where = f"{j['name']} -> {_short(j['store'], manifest)}"
    if j["exit_code"] == 0:
        line = Text.assemble(
            ("ok    ", "green"), where,
            f"  {j.get('kind') or ''}, {j.get('rows', 0):,} rows, {j['seconds']:.2f} s",
            f" ({j['status']})",
            f"\n      import {j['receipt']['import_id']}",
        )  # fmt: skip
        torn = api.fleet_torn_tail(j)
        if torn is not None:
            line.append(
                f"\n      torn tail accepted: {torn['discarded_bytes']:,} bytes after "
                f"byte {torn['valid_prefix_end']:,} left out",
                style="yellow",
            )
    else:
        line = Text.assemble(
            ("FAIL  ", "bold red"), where, f"  exit {j['exit_code']} {j['error']['code']}",
            f"\n      {j['error']['message']}",
        )  # fmt: skip
    return line


def _report_human(doc: dict[str, Any], title: str) -> None:
    err.print(title, style="bold", markup=False)
    for j in doc["jobs"]:
        err.print(_job_lines(j, doc.get("manifest")), soft_wrap=True)
    for a in doc["anomalies"]:
        err.print(f"ANOMALY {a['code']}: {a['detail']}", markup=False, soft_wrap=True)
    t = doc["totals"]
    codes = ", ".join(f"exit {c}: {n}" for c, n in t["by_exit_code"].items())
    codes = f" ({codes})" if codes else ""
    torn = ""
    if t.get("torn_tails"):
        torn = (f"; {t['torn_tails']} torn tail{'s' if t['torn_tails'] != 1 else ''} accepted "
                f"({t['torn_bytes_dropped']:,} bytes dropped)")  # fmt: skip
    err.print(
        f"{t['jobs']} jobs: {t['ok']} ok, {t['failed']} failed{codes}; "
        f"{t['rows']:,} rows{torn}; exit status {doc['exit_code']}",
        markup=False,
    )


@fleet_app.command("plan")
def plan_cmd(
    manifest: Path = MANIFEST, workers: int = WORKERS, shard: str = SHARD, as_json: bool = JSON
) -> None:
    """Dry run of every job (`plan` per job): a table, totals, disk per filesystem; writes nothing.

    Exit status: the highest exit code `run` is predicted to give (at least 1 when a
    destination filesystem lacks the space).
    """
    fleet = api.fleet_load(manifest)
    part = api.fleet_shard(shard) if shard else None
    with _view(api.fleet_select(fleet, part), "fleet plan", as_json) as view:
        doc = api.fleet_plan(fleet, workers=workers, shard=part, watcher=view)
    if as_json:
        emit_json(doc, "fleet-plan")
    else:
        _plan_human(doc, manifest)
    raise typer.Exit(doc["exit_code"])


def _plan_human(doc: dict[str, Any], manifest: Path) -> None:
    table = Table(title=f"fleet plan: {manifest}")
    for name in ("job", "store", "kind", "rows", "bytes", "namespaces", "predicted", "problems"):
        table.add_column(name, overflow="fold")
    for r in doc["jobs"]:
        table.add_row(
            r["name"], _short(r["store"], doc["manifest"]), r["kind"] or "", f"{r['rows']:,}",
            f"{r['bytes']:,}", str(r["namespaces"]),
            f"exit {r['exit_code']} ({r['outcome']}: {r['action']})", "\n".join(r["problems"]),
        )  # fmt: skip
    t = doc["totals"]
    table.add_section()
    table.add_row(
        f"{t['jobs']} jobs ({t['failing']} failing)", "", "", f"{t['rows']:,}", f"{t['bytes']:,}",
        str(t["namespaces"]), f"exit {doc['exit_code']}", "",
    )  # fmt: skip
    err.print(table)
    disks = Table(title="disk per destination filesystem")
    for name in ("filesystem (nearest existing path)", "stores", "needed", "free", "enough"):
        disks.add_column(name, overflow="fold")
    for d in doc["filesystems"]:
        disks.add_row(
            d["path"], str(len(d["stores"])), f"{d['needed_bytes']:,}", f"{d['free_bytes']:,}",
            "yes" if d["enough"] else "NO",
        )  # fmt: skip
    err.print(disks)
    for problem in doc["problems"]:
        err.print(f"PROBLEM: {problem}", markup=False, soft_wrap=True)


@fleet_app.command("run")
def run_cmd(
    manifest: Path = MANIFEST,
    workers: int = WORKERS,
    shard: str = SHARD,
    report_dir: Path = REPORT_DIR,
    skip_done: bool = SKIP_DONE,
    yes: bool = YES,
    as_json: bool = JSON,
) -> None:
    """Run every job (the ordinary `run`) in a process pool; rerun to resume after a kill.

    A job whose source is a BBG store seals it for good (the transfer, as `run STORE`): the
    jobs that would are named and confirmed on a terminal, and need --yes in a script.

    Exit status: the highest exit code among the jobs.
    """
    fleet = api.fleet_load(manifest)
    part = api.fleet_shard(shard) if shard else None
    confirm_fleet_seals(selected := api.fleet_select(fleet, part), manifest, yes)
    api.fleet_report_dir(report_dir)
    with _view(selected, "fleet run", as_json) as view:
        doc = api.fleet_run(
            fleet, workers=workers, shard=part, report_dir=report_dir, skip_done=skip_done,
            watcher=view,
        )  # fmt: skip
    if as_json:
        emit_json(doc, "fleet-report")
    else:
        label = "" if part is None else f" (shard {part[0]}/{part[1]})"
        _report_human(doc, f"fleet run: {manifest}{label}")
    raise typer.Exit(doc["exit_code"])


@fleet_app.command("report")
def report_cmd(
    dirs: list[Path] = DIRS, manifest: Path = REPORT_MANIFEST, html: Path = HTML,
    as_json: bool = JSON,
) -> None:  # fmt: skip
    """Merge per-job results and per-shard reports: jobs, outcomes, digests, timings, anomalies.

    Exit status: the highest exit code among the jobs (at least 1 when there are anomalies).
    """
    fleet = api.fleet_load(manifest) if manifest is not None else None
    doc = api.fleet_report(dirs, fleet)
    if html is not None:
        api.fleet_html(doc, html)
    if as_json:
        emit_json(doc, "fleet-report")
    else:
        _report_human(doc, "fleet report")
        if html is not None:
            err.print(f"HTML report: {html}", markup=False)
    raise typer.Exit(doc["exit_code"])
