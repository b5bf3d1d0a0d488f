"""``tail``, ``apply``, ``snapshot``, ``restore``, ``backup``, ``doctor``: sharing and auditing.

Each command resolves the store (``--store`` before or after the command name, else ``./bbg``
behind the default-store guard), calls one function of :mod:`migrate.api`, and renders.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import typer

from bbg_core.errors import UsageError, ValidationFailed
from bbg_core.files import cannot_read
from migrate import api
from migrate.cli import app
from migrate.cli._confirm import confirm
from migrate.cli._paths import store_option
from migrate.cli._progress import watch
from migrate.cli._render import count, emit_json, err, show, size
from migrate.cli._sizes import parse_size, show_size
from migrate.cli._state import named_store

STORE = store_option("The BBG store directory (default ./bbg).")
JSON = typer.Option(False, "--json", help="One JSON document on stdout.")
STREAM = typer.Argument(..., help="A file, or - for standard input.", show_default=False)
OUTPUT = typer.Option(
    None, "--output", "-o",
    help="Append to this file and resume from what it holds (with --follow: a restarted "
    "follower neither skips nor repeats an event; FILE is bound to its store and another "
    "store's file is refused).",
)  # fmt: skip
DEST = typer.Argument(
    ..., help="A new directory for the copy.", show_default=False, readable=False
)


def _store(option: Path | None, *, create: bool = False) -> Path:
    named = named_store(option)
    return api.resolve_store_dir(named, create=create)


def _open_input(name: str) -> BinaryIO:
    if name == "-":
        return sys.stdin.buffer
    try:
        return open(name, "rb")  # closed by the caller
    except OSError as exc:
        raise cannot_read(name, exc) from exc


@contextmanager
def _stdout_reader_may_leave() -> Iterator[None]:
    """``tail | head``: the reader going away is not an error (exit 0, no noise)."""
    try:
        yield
    except BrokenPipeError:
        # Point stdout at /dev/null so the interpreter's final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _write_whole(out: BinaryIO, data: bytes, *, flush: bool = False) -> None:
    """Write ``data`` with Ctrl-C held back, so an interrupt never tears a line in two.

    (A KeyboardInterrupt raised inside a buffered write can leave half a line behind.)
    """
    if not hasattr(signal, "pthread_sigmask"):
        out.write(data)
        if flush:
            out.flush()
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        out.write(data)
        if flush:
            out.flush()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _summary(doc: dict[str, Any], as_json: bool, schema: str | None = None) -> None:
    """The report of apply, restore, backup or upgrade: its JSON document, or one sentence."""
    if as_json:
        emit_json(doc, schema or doc["kind"].removeprefix("bbg-"))
        return
    if doc["kind"] == "bbg-apply" and doc["events"] and not doc["applied"]:
        line = f"already applied, nothing written: {count(doc['events'], 'event')}"
    elif doc["kind"] == "bbg-apply":
        deltas = ", ".join(f"{show(n)} {name}" for name, n in doc["deltas"].items() if n)
        line = (f"applied {count(doc['events'], 'event')} in one transaction "
                f"({show(doc['applied'])} new, {show(doc['replayed'])} already applied); "
                f"rows added: {deltas or 'none'}")  # fmt: skip
    if doc["kind"] == "bbg-apply":
        proof = doc["verified"]
        line += (f"; stream verified ({count(proof['transactions'], 'transaction')}, closing "
                 f"digest {proof['digest']})" if proof["verifiable"] else
                 "; a plain stream (no check lines: not verified as a whole)")
    elif doc["kind"] not in ("bbg-restore", "bbg-backup"):
        line = "; ".join(f"{k.replace('_', ' ')} {show(v)}" for k, v in doc.items() if k != "kind")
    elif doc["kind"] == "bbg-restore" and doc.get("already_restored"):
        line = (f"already restored, nothing written: {doc['dest']} holds this snapshot's store "
                f"({count(doc['records'], 'record')}, store {doc['store_id']}); archive digest "
                f"{doc['archive_digest_sha256']}")  # fmt: skip
    elif doc["kind"] == "bbg-restore":
        line = (f"restored {count(doc['records'], 'record')} into {doc['dest']} (ledger "
                f"transaction {doc['basis_tx']:,}, store {doc['store_id']}); "
                f"archive digest {doc['archive_digest_sha256']}")  # fmt: skip
    else:
        line = (f"backed up {doc['source']} into {doc['dest']} ({size(doc['bytes'])}, "
                f"{show(doc['seconds'])} s, verified); archive digest "
                f"{doc['archive_digest_sha256']}")  # fmt: skip
    err.print(f"{line}; basis {doc['basis']}" if "basis" in doc else line, markup=False)


@app.command("tail")
def tail_cmd(
    since: int = typer.Option(
        0, "--since", min=0, help="Only the transactions after transaction TX (a Fjall "
        "store: its write batches with seqno >= TX)."
    ),
    follow: bool = typer.Option(False, "--follow", help="Keep streaming new commits (Ctrl-C)."),
    output: Path = OUTPUT,
    poll: float = typer.Option(0.5, "--poll", min=0.01, help="Seconds between polls (--follow)."),
    verifiable: bool = typer.Option(
        False, "--verifiable", help="Add a check line after each transaction and a closing "
        "digest line, so apply refuses a changed, dropped or reordered line (docs/event1.md)."
    ),
    store: Path = STORE,
) -> None:
    """History as canonical event/1 NDJSON in ledger (transaction) order, each event with its
    `tx` and `at`; --since TX is stable forever (appending never renumbers).  On a Fjall store
    one transaction per write batch: `tx` = seqno + 1, `at` = 0 (docs/event1.md)."""
    directory = _store(store)
    if verifiable and follow:  # with --output too: never a follow file silently plain
        raise UsageError("--verifiable is not available with --follow yet: a follower's "
                         "stream has no end to close; take tail --since TX --verifiable "
                         "for the part to hand over (docs/event1.md)")  # fmt: skip
    if output is not None:
        if not follow:
            raise UsageError("--output resumes a follower: use it with --follow")
        api.follow_into(directory, output, since, poll=poll)
        return
    _stream_to_stdout(directory, since, follow=follow, poll=poll, verifiable=verifiable)


def _stream_to_stdout(
    directory: Path, since: int, *, follow: bool, poll: float, verifiable: bool
) -> None:
    out = sys.stdout.buffer
    with _stdout_reader_may_leave():
        if verifiable:
            for line in api.verifiable_lines(api.tail(directory, since), since):
                _write_whole(out, line)
            out.flush()
            return
        if follow:
            for event in api.follow(directory, since, poll=poll):
                # flush: an audit collector must see each commit as it lands
                _write_whole(out, api.event_line(event), flush=True)
            return
        for event in api.tail(directory, since):
            _write_whole(out, api.event_line(event))
        out.flush()


@app.command("upgrade")
def upgrade_cmd(store: Path = STORE, as_json: bool = JSON) -> None:
    """Upgrade a store of schema version 1 to version 2 (adds the transaction ledger), in
    place, once: its current history becomes one ledger transaction. Older builds then
    refuse the store; running it again changes nothing."""
    doc = api.upgrade(_store(store))
    if as_json:
        emit_json(doc, "upgrade")
    else:
        err.print(upgrade_line(doc), markup=False, soft_wrap=True)


def upgrade_line(doc: dict[str, Any]) -> str:
    """``upgrade`` for a human: what was upgraded, from what to what, and what changed."""
    if doc.get("engine") == "fjall":
        return (f"nothing to do: {doc['path']} is a Fjall store (the real BBG database); "
                "upgrade brings SQLite stores of schema version 1 to version 2, and a Fjall "
                "store has no version 1 (its records are made with the transaction ledger); "
                "nothing written")  # fmt: skip
    if not doc["upgraded"]:
        return (f"nothing to do: {doc['path']} is already at store schema version {doc['to']} "
                "(it has the transaction ledger); nothing written")  # fmt: skip
    when = datetime.fromtimestamp(doc["at"] / 1e6, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    got = doc["recorded"]
    return (f"upgraded {doc['path']}: store schema version {doc['from']} -> {doc['to']}. Added "
            f"the transaction ledger; the history so far became ledger transaction "
            f"{doc['tx']:,} ({when}): {count(got['heads'], 'head')}, "
            f"{count(got['rows'], 'row')} and {count(got['events'], 'event')} (imports, fences, "
            "generation). Builds older than the ledger now refuse this store; running upgrade "
            "again changes nothing")  # fmt: skip


@app.command("apply")
def apply_cmd(
    source: str = STREAM,
    max_line: int = typer.Option(show_size(api.MAX_LINE), "--max-line", parser=parse_size,
                                 help="Byte cap per line (a size: 65536, 64MiB)."),
    require_verified: bool = typer.Option(
        False, "--require-verified", help="Refuse a plain stream: only one written by tail "
        "--verifiable, whose check lines and closing digest all agree."
    ),
    store: Path = STORE,
    as_json: bool = JSON,
) -> None:
    """Apply an event/1 stream in ONE transaction: every line is checked first; any bad,
    conflicting, oversized or truncated line rolls back all of it (exit 3 or 4, naming the
    line). Re-applied events return their original receipt with empty deltas. This is an
    ordered logical merge, not a CRDT: events apply in stream order, each commit needs its
    namespace at the head it retracts, so review the order of independent streams. The store
    is created if absent (and removed again if the stream is refused)."""
    stream = _open_input(source)
    try:
        with watch(as_json) as progress:
            doc = api.apply(_store(store, create=True), stream, max_line=max_line,
                            progress=progress, require_verified=require_verified)  # fmt: skip
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    _summary(doc, as_json, "apply")


DRY_RUN = typer.Option(False, "--dry-run", help="Show exactly what would go; change nothing.")
NAMESPACES = typer.Argument(..., help="Namespace ids (64 hex digits).", show_default=False)
CONTENTS = typer.Option([], "--content", help="A content id to excise (repeatable).")
EXCISE_NS = typer.Option([], "--namespace", help="A namespace to excise (repeatable).")
YES = typer.Option(False, "--yes", "-y", help="Confirm without asking (scripts); on a "
                   "terminal the plan is shown and asked about.")  # fmt: skip


def _confirmed(verb: str, store: Path, yes: bool, dry_run: bool, plan: Any) -> None:
    """Irreversible: the plan (``plan()``: the dry run) is made first, so a store it cannot
    read is refused as such; then a terminal is shown it and asked, and a script passes
    --yes (else exit 2, nothing done)."""
    if yes or dry_run:
        return
    shown = plan()  # first: a store that cannot be read is named before any question
    confirm(f"{verb} removes rows from {store} for good", verb, f"{verb.capitalize()} this "
            "for good?", store, lambda: _retention(shown, False))  # fmt: skip


def _retention(doc: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit_json(doc, doc["kind"].removeprefix("bbg-"))
        return
    verb = "would remove" if doc["dry_run"] else "removed"
    if doc["kind"] == "bbg-nohistory":
        for ns in doc["namespaces"]:
            err.print(f"{ns['namespace']}: {verb} {ns['dropped']} history entries below "
                      f"index {ns['index']} (head, receipts and claims kept)", markup=False)
    else:
        for cid in doc["contents"]:
            err.print(f"content {cid}: {verb}", markup=False)
        for ns in doc["namespaces"]:
            err.print(f"namespace {ns['namespace']}: {verb} ({ns['history']} history entries, "
                      f"{ns['requests']} receipts; fenced for good)", markup=False)
        err.print(f"events of ledger transactions {show(doc['redacted_transactions'])} "
                  f"{'would be' if doc['dry_run'] else 'are'} redacted", markup=False)
    if not doc["dry_run"]:
        err.print(f"ledger transaction {doc['tx']}" if doc["tx"] is not None
                  else "nothing left to do (already done)", markup=False)  # fmt: skip
    err.print("cannot reach: " + "; ".join(doc["cannot_reach"]), markup=False)


@app.command("nohistory")
def nohistory_cmd(
    namespaces: list[str] = NAMESPACES,
    dry_run: bool = DRY_RUN,
    yes: bool = YES,
    store: Path = STORE,
    as_json: bool = JSON,
) -> None:
    """Drop the superseded history rows of NAMESPACE... (one sealed transaction): each keeps
    its head, every request receipt and every claim; the event stream marks the retained
    boundary. Copies written before (backups, snapshots, collectors) are not reached. Asks on a
    terminal (showing the plan); needs --yes in a script."""
    _confirmed("nohistory", _store(store), yes, dry_run,
               lambda: api.nohistory(_store(store), namespaces, dry_run=True))
    _retention(api.nohistory(_store(store), namespaces, dry_run=dry_run), as_json)


@app.command("excise")
def excise_cmd(
    content: list[str] = CONTENTS,
    namespace: list[str] = EXCISE_NS,
    dry_run: bool = DRY_RUN,
    yes: bool = YES,
    store: Path = STORE,
    as_json: bool = JSON,
) -> None:
    """Remove content rows (--content ID) or whole namespaces (--namespace NS) for good, and
    redact every event that carried them (one sealed transaction; the ledger records the ids,
    never the bytes). A redacted tail cannot rebuild the store: apply refuses it. Copies
    written before (backups, snapshots, collectors) are not reached. Asks on a terminal
    (showing the plan); needs --yes in a script."""
    _confirmed("excise", _store(store), yes, dry_run,
               lambda: api.excise(_store(store), content, namespace, dry_run=True))
    _retention(api.excise(_store(store), content, namespace, dry_run=dry_run), as_json)


@app.command("snapshot")
def snapshot_cmd(store: Path = STORE) -> None:
    """Every retained row as bbg-snapshot/1 NDJSON on stdout (header, records, footer)."""
    with _stdout_reader_may_leave():
        with watch() as progress:
            api.write_snapshot(_store(store), sys.stdout.buffer, progress=progress)


@app.command("restore")
def restore_cmd(source: str = STREAM, store: Path = STORE, as_json: bool = JSON) -> None:
    """Restore a snapshot into a pristine store (absent or empty directory); nothing is
    published unless the whole stream validates."""
    stream = _open_input(source)
    try:
        with watch(as_json) as progress:
            doc = api.restore(stream, _store(store, create=True), progress=progress)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    _summary(doc, as_json)


@app.command("backup")
def backup_cmd(
    dest: Path = DEST,
    store: Path = STORE,
    as_json: bool = JSON,
) -> None:
    """Online backup into the new store directory DEST: verified, fsynced, atomically
    published; never overwrites."""
    with watch(as_json) as progress:
        doc = api.backup(_store(store), dest, progress=progress)
    _summary(doc, as_json)


@app.command("doctor")
def doctor_cmd(store: Path = STORE, as_json: bool = JSON) -> None:
    """Read-only health report (SQLite integrity, links, digest, generation, fences,
    leftovers, orphan content); exit 0 healthy, 3 not."""
    with watch(as_json) as progress:
        report = api.doctor(_store(store), progress=progress)
    if as_json:
        emit_json(report, "doctor")
    else:
        _show_doctor(report)
    if not report["healthy"]:
        raise ValidationFailed(
            f"{report['path']}: not healthy ({report['problems'][0]['code']})",
            path=report["path"],
            errors=report["problems"],
        )


def _show_doctor(report: dict[str, Any]) -> None:
    verdict = "healthy" if report["healthy"] else "NOT healthy"
    err.print(f"{report['path']}: {verdict}", markup=False)
    gen = report["generation"]
    keyspace = report.get("keyspace")
    if keyspace is not None:  # a Fjall store: the real BBG database
        checked = keyspace["checked"]
        err.print(
            f"  keyspace {'ok' if keyspace['ok'] else 'DAMAGED'} "
            f"({count(checked['blocks'], 'block')} and {checked['journal_batches']:,} journal "
            f"batches checked), bbg opens it: {'no' if keyspace['bbg_open'] else 'yes'}, records "
            f"{keyspace['records']}, digest {report['tables']['archive_digest_sha256']}, status "
            f"{_status(gen)}, {count(len(report['fences']), 'fence')}",
            markup=False,
        )
        for note in keyspace["notes"]:
            err.print(f"  note: {note}", markup=False)
    else:
        _show_sqlite_doctor(report)
    for kind in ("problems", "warnings"):
        for f in report[kind][:20]:
            err.print(f"  {kind[:-1]}: {f['code']}: {f['detail']}", markup=False)


def _status(gen: dict[str, Any]) -> str:
    """``complete (original)``; a part that is not known is left out, never shown as None."""
    status = "none" if gen.get("status") is None else str(gen["status"])
    return status if gen.get("generation") is None else f"{status} ({gen['generation']})"


def _show_sqlite_doctor(report: dict[str, Any]) -> None:
    gen = report["generation"]
    err.print(
        f"  integrity {report['sqlite']['integrity'][0]}, digest "
        f"{report['tables']['archive_digest_sha256']}, status {_status(gen)}, "
        f"{count(len(report['fences']), 'fence')}, "
        f"{count(report['orphan_content']['count'], 'orphan content row')}",
        markup=False,
    )
