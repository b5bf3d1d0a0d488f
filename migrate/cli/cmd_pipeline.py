"""``plan``, ``run`` and the step commands ``seal``, ``stage``, ``validate``, ``activate``.

Whether they mean a migration or, for a BBG store SOURCE, a transfer is the library's
decision (:func:`migrate.api.make_job`); this module shows whichever outcome comes back."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from bbg_core.errors import NotReady
from migrate import api
from migrate.cli import app
from migrate.cli._confirm import confirm_retirement, confirm_transfer_seal
from migrate.cli._help import ContentCheck, LegacyKind
from migrate.cli._paths import path_arg, store_option
from migrate.cli._progress import watch
from migrate.cli._receipt import RECEIPT, keep
from migrate.cli._render import count, emit_json, err, facts, print_table, show, size, table
from migrate.cli._sizes import parse_size, show_size
from migrate.cli._state import named_store
from migrate.cli.cmd_transfer import plan_report as transfer_plan_report
from migrate.cli.cmd_transfer import report as transfer_report

SOURCE = typer.Argument(
    ...,
    help="The legacy cell.redb, Signal log, bbg frame log or TextArchive (never written).",
    show_default=False,
    readable=False,  # an unreadable input is our exit 1 naming the reason, not a usage error
)
STORE = store_option("Destination BBG store directory (default ./bbg).")
JSON = typer.Option(False, "--json", help="One JSON document on stdout.")
NONCE = typer.Option(None, "--nonce", help="Run nonce (hex); default: derived from the source.")
SUBJECT = typer.Option(
    None, "--subject",
    help="Prepare neuron's import of the origins into this subject (64 hex; it must be "
    "activated in the store; neuron completes the import).",
)  # fmt: skip
MAP = typer.Option(
    None, "--map", help="ORIGIN=INSTALL_NONCE (64 hex each: 32 bytes), repeatable; needs --subject."
)
IMPORT_NONCE = typer.Option(
    None, "--import-nonce",
    help="The nonce you will give `neuron import --nonce` (64 hex); its request must not be "
    "in the subject's request index (checked; needs --subject).",
)  # fmt: skip
MAPPING = typer.Option(
    None,
    "--mapping",
    help="Mapping file (JSON, schemas/mapping.schema.json).",
    parser=path_arg,
)
PAGES = typer.Option(None, "--pages", min=1, help="Stage at most N bounded pages in this call.")
DEFAULT = api.Bounds()  # the options' defaults are the library's
MAX_ROWS = typer.Option(
    DEFAULT.max_rows, "--max-rows", min=0, help="Refuse sources with more rows."
)
MAX_BYTES = typer.Option(
    show_size(DEFAULT.max_bytes), "--max-bytes", parser=parse_size,
    help="Refuse sources whose rows hold more bytes: the sum of every row's key and value "
    "bytes, not the file's size (a size: 4096, 512MiB, 1.5TB, 256GiB).",
)  # fmt: skip
MAX_NS = typer.Option(
    DEFAULT.max_namespaces, "--max-namespaces", min=0, help="Refuse more namespaces."
)
PAGE_ROWS = typer.Option(
    DEFAULT.page_rows, "--page-rows", min=1, max=DEFAULT.page_rows, help="Rows per staged page."
)
RETIRE = typer.Option(
    False,
    "--retire-source",
    help="After activation, retire the source (moved, unchanged, into a directory of that name, "
    "so the old binary cannot open it): shows which file moves where and asks on "
    "a terminal; needs --yes in a script.",
)
YES = typer.Option(
    False, "--yes", "-y", help="Confirm --retire-source, or the seal of a BBG store SOURCE "
    "(a transfer: for good), without asking (scripts)."
)
TORN = typer.Option(
    False,
    "--accept-torn-tail",
    help="Frame log with a torn last frame: import the valid prefix; the receipt records the cut.",
)
KIND = typer.Option(
    None,
    "--kind",
    help="How to read SOURCE where its content cannot tell (an empty file).",
)
STRICT = typer.Option(
    False,
    "--strict",
    help="bbg frame log: refuse every frame bbg's own reader would skip, drop or read "
    "leniently (the default imports what bbg's reader returns and lists those frames).",
)
NAMESPACE = typer.Option(
    None,
    "--namespace",
    help="TextArchive: the namespace (64 hex digits) its lines go to, at indices 0..n-1, as "
    "cybergraph's TextArchive::from_database(db, namespace) takes it (default: hemera of the "
    "import record the receipt keeps).",
    show_default=False,
)
CONTENT_CHECK = typer.Option(
    "codec",
    "--content-check",
    help="cell.redb: codec = decode every Blob and Data row and verify its id (cybergraph's "
    "codec-checked import); none = copy rows as bytes, structural and link rules only (bbg's "
    "raw converter). Recorded in the receipt.",
)


def _job(
    source: Path,
    store: Path | None,
    nonce: str | None,
    subject: str | None,
    maps: list[str] | None,
    mapping_file: Path | None,
    bounds: api.Bounds | None = None,
    accept_torn_tail: bool = False,
    kind: str | None = None,
    content_check: str = "codec",
    retire_source: bool = False,
    strict: bool = False,
    namespace: str | None = None,
    import_nonce: str | None = None,
) -> api.Job | api.TransferJob:
    return api.make_job(
        source, named_store(store), nonce=nonce, subject=subject, maps=maps,
        mapping_file=mapping_file, import_nonce=import_nonce, bounds=bounds,
        accept_torn_tail=accept_torn_tail, kind=kind,
        content_check=content_check, retire_source=retire_source, strict=strict,
        namespace=namespace,
    )  # fmt: skip


def _bounds(max_rows: int, max_bytes: int, max_namespaces: int, page_rows: int) -> api.Bounds:
    return api.Bounds(
        max_rows=max_rows, max_bytes=max_bytes, max_namespaces=max_namespaces, page_rows=page_rows
    )


def receipt_facts(receipt: dict[str, Any]) -> None:
    """A migration receipt for humans: its facts, then rows per table."""
    rows: list[tuple[str, Any]] = [
        ("import", receipt["import_id"]),
        ("source", f"{receipt['source']['kind']}, {size(receipt['source']['size_bytes'])}"),
        ("source sha256", receipt["source"]["sha256"]),
        ("archive digest", receipt["digests"]["source_archive_sha256"]),
        ("content check", receipt.get("content_check", "codec")),
        ("namespaces", receipt["counts"]["namespaces"]),
        ("generation", receipt["generation"]),
    ]
    legacy = receipt.get("legacy")
    if legacy is not None:
        rows += [("namespace", legacy["namespace"]), ("items imported", legacy["items"])]
        torn = legacy["torn_tail"]
        if torn is not None:
            rows.append(("torn tail", f"{count(torn['discarded_bytes'], 'byte')} after byte "
                                      f"{torn['valid_prefix_end']:,} left out"))  # fmt: skip
    if receipt["head"]:
        rows.append(("subject head", f"{receipt['head']['index']} {receipt['head']['commit']}"))
        rows.append(("fenced origins", len(receipt["fences"])))
    rows += _neuron_rows(receipt.get("neuron_import"))
    facts("receipt", rows)
    grid = table("table", "rows", "new rows")
    for name, n in receipt["counts"]["rows"].items():
        grid.add_row(name, show(n), show(receipt["counts"]["new_rows"].get(name, 0)))
    print_table(grid)


def _totals(receipt: dict[str, Any]) -> tuple[int, int, int]:
    counts = receipt["counts"]
    return sum(counts["rows"].values()), len(counts["rows"]), sum(counts["new_rows"].values())


def _shown(
    call: Callable[[Any], api.Outcome | api.TransferOutcome], as_json: bool,
    receipt: Path | None = None,
) -> None:  # fmt: skip
    """Run ``call(observer)`` under the progress display and show its outcome.  A transfer's
    is shown inside the display's block (before the progress's last line), a migration's
    after it, as each always has been."""
    with watch(as_json) as progress:
        outcome = call(progress)
        # a migration's Outcome: the transfer's module is loaded only by a transfer
        if not isinstance(outcome, api.Outcome):
            keep(outcome, receipt)
            transfer_report(outcome, as_json)
            return
    _report(outcome, as_json, receipt)


def _report(outcome: api.Outcome, as_json: bool, receipt: Path | None = None) -> None:
    keep(outcome, receipt)
    if outcome.receipt is not None and outcome.status in ("complete", "retired"):
        if as_json:
            emit_json(outcome.receipt, "receipt")
            return
        receipt_facts(outcome.receipt)
        rows, tables, new = _totals(outcome.receipt)
        if outcome.already:
            err.print(f"already complete, nothing written: import {outcome.import_id} "
                      f"({count(rows, 'row')} in {count(tables, 'table')})")  # fmt: skip
        else:
            err.print(f"{outcome.status}: import {outcome.import_id}: {count(rows, 'row')} in "
                      f"{count(tables, 'table')}, {show(new)} new")  # fmt: skip
        return
    doc = outcome.to_json()
    if as_json:
        emit_json(doc, "stage-report")
    else:
        err.print(_stage_line(doc), markup=False)
    if outcome.status == "staging":  # exit 5: a script's `&&` chain stops here, by design
        raise NotReady(
            f"import {outcome.import_id}: staging is not complete; run the same command "
            "again to continue (exit 5 until it is)", import_id=outcome.import_id,
        )  # fmt: skip


def _stage_line(doc: dict[str, Any]) -> str:
    """One sentence for a step that did not end in a receipt."""
    line = f"{doc['status']}: import {doc['import_id']}"
    if "rows_total" in doc:
        line += (f", {show(doc['rows_staged'])} of {count(doc['rows_total'], 'row')} staged "
                 f"({count(doc['pages'], 'page')} in this call)")  # fmt: skip
    if "rows" in doc:
        line += f", {count(sum(doc['rows'].values()), 'row')} checked ({show(doc['rows'])})"
    if "archive_digest_sha256" in doc:
        line += f", archive digest {doc['archive_digest_sha256']}"
    if "fingerprint" in doc:
        fp = doc["fingerprint"]
        line += f", source {fp.get('kind')} sha256 {fp.get('sha256')}"
    return line


def _plan_report(source: Path, doc: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit_json(doc, "plan")
        return
    if "destination" not in doc:  # a retired source: nothing to plan
        err.print(f"{source}: {doc['action']}; import {doc['import_id']}", markup=False)
        return
    rows: list[tuple[str, Any]] = [
        ("action", doc["action"]), ("import", doc["import_id"]), ("rows", doc["rows"]),
        ("key+value bytes", size(doc["key_value_bytes"])), ("pages", doc["pages"]),
        ("disk needed", size(doc["disk_bytes_needed"])),
        ("generation after", doc["generation_after"]), ("namespaces", len(doc["namespaces"])),
    ]  # fmt: skip
    if "legacy" in doc:
        torn = doc["legacy"]["torn_tail"]
        rows += [("namespace", doc["legacy"]["namespace"]), ("items", doc["legacy"]["items"]),
                 ("torn tail", "none" if torn is None else show(torn))]  # fmt: skip
    rows.append(("fences", len(doc["fences"])))
    rows += _neuron_rows(doc.get("neuron_import"))
    facts(f"plan: {source} -> {doc['destination']['path']}", rows)


def _neuron_rows(prepared: dict[str, Any] | None) -> list[tuple[str, Any]]:
    """A mapped run's end state (receipt and plan): what neuron completes, and how."""
    if prepared is None:
        return []
    head = prepared["binding"]["head"]
    return [
        ("neuron import", f"{prepared['state']}; complete with `{prepared['complete_with']}`"),
        ("subject head", f"{head['index']} {head['commit']}"),
    ]


@app.command("plan")
def plan_cmd(
    source: Path = SOURCE, store: Path = STORE, nonce: str = NONCE, subject: str = SUBJECT,
    map_: list[str] = MAP, mapping: Path = MAPPING, import_nonce: str = IMPORT_NONCE,
    max_rows: int = MAX_ROWS,
    max_bytes: int = MAX_BYTES, max_namespaces: int = MAX_NS, page_rows: int = PAGE_ROWS,
    accept_torn_tail: bool = TORN, kind: LegacyKind = KIND,
    content_check: ContentCheck = CONTENT_CHECK,
    strict: bool = STRICT, namespace: str = NAMESPACE, as_json: bool = JSON,
) -> None:  # fmt: skip
    """Dry run of `run` (same options): what it would do, or the exit code and message it
    would fail with (3, 4, 11, 1); writes nothing."""
    bounds = _bounds(max_rows, max_bytes, max_namespaces, page_rows)
    job = _job(source, store, nonce, subject, map_, mapping, bounds, accept_torn_tail, kind,
               content_check, strict=strict, namespace=namespace,
               import_nonce=import_nonce)  # fmt: skip
    with watch(as_json) as progress:
        doc = api.plan(job, progress)
        if api.is_transfer(job):  # shown inside the display's block, as always
            transfer_plan_report(doc, as_json)
            return
    _plan_report(source, doc, as_json)


@app.command("run")
def run_cmd(
    source: Path = SOURCE, store: Path = STORE, nonce: str = NONCE, subject: str = SUBJECT,
    map_: list[str] = MAP, mapping: Path = MAPPING, import_nonce: str = IMPORT_NONCE,
    pages: int = PAGES, max_rows: int = MAX_ROWS,
    max_bytes: int = MAX_BYTES, max_namespaces: int = MAX_NS, page_rows: int = PAGE_ROWS,
    retire_source: bool = RETIRE, yes: bool = YES, accept_torn_tail: bool = TORN,
    kind: LegacyKind = KIND, content_check: ContentCheck = CONTENT_CHECK,
    strict: bool = STRICT, namespace: str = NAMESPACE, receipt: Path = RECEIPT,
    as_json: bool = JSON,
) -> None:  # fmt: skip
    """Migrate SOURCE into the store: seal, stage, validate, activate; prints the receipt."""
    confirm_retirement(source, retire_source, yes)  # asks nothing for a BBG store SOURCE
    bounds = _bounds(max_rows, max_bytes, max_namespaces, page_rows)
    job = _job(source, store, nonce, subject, map_, mapping, bounds, accept_torn_tail, kind,
               content_check, retire_source, strict, namespace, import_nonce)  # fmt: skip
    confirm_transfer_seal(job, yes)
    _shown(lambda progress: api.run(job, max_pages=pages, retire_source=retire_source,
                                    progress=progress), as_json, receipt)  # fmt: skip


@app.command("seal")
def seal_cmd(
    source: Path = SOURCE, store: Path = STORE, nonce: str = NONCE, subject: str = SUBJECT,
    map_: list[str] = MAP, mapping: Path = MAPPING, import_nonce: str = IMPORT_NONCE,
    accept_torn_tail: bool = TORN,
    kind: LegacyKind = KIND, content_check: ContentCheck = CONTENT_CHECK,
    strict: bool = STRICT, namespace: str = NAMESPACE, as_json: bool = JSON, yes: bool = YES,
) -> None:  # fmt: skip
    """Step 1: lock and fingerprint the source, record the seal in the store."""
    job = _job(source, store, nonce, subject, map_, mapping, None, accept_torn_tail, kind,
               content_check, strict=strict, namespace=namespace,
               import_nonce=import_nonce)  # fmt: skip
    confirm_transfer_seal(job, yes)
    _shown(lambda progress: api.seal(job, progress), as_json)


@app.command("stage")
def stage_cmd(
    source: Path = SOURCE, store: Path = STORE, nonce: str = NONCE, subject: str = SUBJECT,
    map_: list[str] = MAP, mapping: Path = MAPPING, import_nonce: str = IMPORT_NONCE,
    pages: int = PAGES,
    page_rows: int = PAGE_ROWS, accept_torn_tail: bool = TORN, kind: LegacyKind = KIND,
    content_check: ContentCheck = CONTENT_CHECK,
    strict: bool = STRICT, namespace: str = NAMESPACE, as_json: bool = JSON, yes: bool = YES,
) -> None:  # fmt: skip
    """Step 2: copy bounded pages into inert staging (--pages N per call; resumable)."""
    job = _job(source, store, nonce, subject, map_, mapping, api.Bounds(page_rows=page_rows),
               accept_torn_tail, kind, content_check, strict=strict,
               namespace=namespace, import_nonce=import_nonce)  # fmt: skip
    confirm_transfer_seal(job, yes)
    _shown(lambda progress: api.stage(job, max_pages=pages, progress=progress), as_json)


@app.command("validate")
def validate_cmd(
    source: Path = SOURCE, store: Path = STORE, nonce: str = NONCE, subject: str = SUBJECT,
    map_: list[str] = MAP, mapping: Path = MAPPING, import_nonce: str = IMPORT_NONCE,
    accept_torn_tail: bool = TORN,
    kind: LegacyKind = KIND, content_check: ContentCheck = CONTENT_CHECK,
    strict: bool = STRICT, namespace: str = NAMESPACE, receipt: Path = RECEIPT,
    as_json: bool = JSON, yes: bool = YES,
) -> None:  # fmt: skip
    """Step 3: check the staged rows against the source and the destination."""
    job = _job(source, store, nonce, subject, map_, mapping, None, accept_torn_tail, kind,
               content_check, strict=strict, namespace=namespace,
               import_nonce=import_nonce)  # fmt: skip
    confirm_transfer_seal(job, yes)
    _shown(lambda progress: api.validate(job, progress), as_json, receipt)


@app.command("activate")
def activate_cmd(
    source: Path = SOURCE, store: Path = STORE, nonce: str = NONCE, subject: str = SUBJECT,
    map_: list[str] = MAP, mapping: Path = MAPPING, import_nonce: str = IMPORT_NONCE,
    accept_torn_tail: bool = TORN,
    kind: LegacyKind = KIND, content_check: ContentCheck = CONTENT_CHECK,
    strict: bool = STRICT, namespace: str = NAMESPACE, receipt: Path = RECEIPT,
    as_json: bool = JSON, yes: bool = YES,
) -> None:  # fmt: skip
    """Step 4: publish the validated import in one transaction; prints the receipt."""
    job = _job(source, store, nonce, subject, map_, mapping, None, accept_torn_tail, kind,
               content_check, strict=strict, namespace=namespace,
               import_nonce=import_nonce)  # fmt: skip
    confirm_transfer_seal(job, yes)
    _shown(lambda progress: api.activate(job, progress), as_json, receipt)


@app.command("discard")
def discard_cmd(
    import_id: str = typer.Argument(..., help="The import in progress to give up.",
                                    show_default=False),
    store: Path = STORE,
    as_json: bool = JSON,
) -> None:  # fmt: skip
    """Give up an import in progress (its staged rows and namespaces are released), e.g. when
    its source changed since the seal; a published import cannot be discarded."""
    named = named_store(store)
    _report(api.discard(named, import_id), as_json)


@app.command("imports")
def imports_cmd(store: Path = STORE, as_json: bool = JSON) -> None:
    """Every import of the store: state (staging, active, retired, discarded), kind, stage
    reached, rows staged, source fingerprint and receipt; an import in progress names the
    exact `discard` command that gives it up.  Reads only."""
    named = named_store(store)
    doc = api.list_imports(named)
    if as_json:
        emit_json(doc, "imports")
    else:
        err.print(api.imports_summary(doc), markup=False, soft_wrap=True)
