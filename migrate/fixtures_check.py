"""``fixtures check DIR``: replay legacy fixtures against their expected results (BRIEF §7).

A fixture directory holds legacy inputs, each with ``<input>.expected.json`` beside it (for a
``cell-x.redb[.gz]`` the file is ``cell-x.expected.json``), and for valid cell stores
optionally a golden receipt ``cell-x.receipt.json``.  Each input is replayed, and **every**
difference is reported:

* **the kind** of each input comes from the input and the command line only: its content
  (``detect``); for a 0-byte file, which content cannot tell, a ``--kind GLOB=KIND`` given on
  the command line, else the file name's suffix (``.log``: Signal log, ``.jsonl``:
  TextArchive).  The expected file never decides how its input is read.
* **every key of the expected file** is compared with the inspect report: a key the report
  lacks is a difference, as is any other value.  ``frames`` (Signal logs) and ``lines``
  (TextArchives) are compared with the frames and lines the readers decode.  Only the keys
  that say how a fixture was made (:data:`DESCRIPTIVE`) and the keys the expected file lists
  under ``"unpinned"`` are not compared; the result names the unpinned ones.
* **every expected error** is compared: a cell store's ``expected_errors`` and
  ``semantic_errors`` must equal the report's lists (code and detail, in order); a log's
  ``error`` / an archive's ``first_error`` must equal the report's first error in every field
  it gives (code and offset/frame or line).
* a valid cell store is also migrated into a temporary store.  Every receipt field that has a
  source independent of this program is checked against the expected file: source SHA-256
  and size, redb header facts, row counts per table, namespace count, both archive digests;
  the destination's tables, namespaces and digest must be the expected ones too.  Then the
  receipt must equal the golden ``*.receipt.json`` byte for byte: a **change detector**
  blessed from this program's own output (``bless=True`` writes missing ones), not evidence.

The source fixtures are never written (compressed ones are unpacked into a temp dir).
"""

from __future__ import annotations

import fnmatch
import gzip
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bbg_core.canonical import canonical_json

if TYPE_CHECKING:
    from migrate.progress import Observer

from bbg_core.errors import MigrateError, UsageError
from bbg_core.files import cannot_read

#: Keys of an expected file that say how the fixture was made, not what a reader must find.
DESCRIPTIVE = frozenset(
    {
        "file", "description", "set", "seed", "writer", "mutation", "nondurable_write",
        "application_writes", "note", "frames_columns", "unpinned", "source", "provenance",
    }
)  # fmt: skip
#: How a 0-byte input is read when the command line names no kind (content cannot tell).
EMPTY_BY_SUFFIX = {".log": "signal-log", ".jsonl": "text-archive"}
_ERROR_KEYS = frozenset({"expected_errors", "semantic_errors", "error", "first_error"})
_LIMIT = 200  # characters of a value shown in a difference
_ABSENT = object()


def _show(value: Any, *, whole: bool = False) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if whole or len(text) <= _LIMIT else text[:_LIMIT] + "…"


def _inputs(directory: Path) -> Iterator[tuple[Path, Path]]:
    """(input, expected file) pairs in name order."""
    for expected in sorted(directory.glob("*.expected.json")):
        stem = expected.name.removesuffix(".expected.json")
        candidates = [directory / stem, directory / f"{stem}.redb", directory / f"{stem}.redb.gz"]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            raise UsageError(f"{expected}: no input file beside it (tried {stem}[.redb[.gz]])")
        yield found, expected


def parse_kinds(items: list[str] | None) -> list[tuple[str, str]]:
    """``GLOB=KIND`` command-line items as (glob, kind) pairs, in the order given."""
    out = []
    for item in items or []:
        pattern, sep, kind = item.partition("=")
        if not sep or not pattern or not kind:
            raise UsageError(
                f"--kind {item!r}: expected GLOB=KIND (for example 'empty*.log=signal-log')"
            )
        out.append((pattern, kind))
    return out


def input_kind(path: Path, name: str, kinds: list[tuple[str, str]]) -> str:
    """The kind to read ``path`` as: its content, or for a 0-byte file the command line's
    ``GLOB=KIND`` matching ``name``, else the name's suffix (see the module docstring)."""
    from migrate.detect import detect

    for pattern, kind in kinds:
        if fnmatch.fnmatchcase(name, pattern):
            return kind
    found = str(detect(path)["kind"])
    if found != "unknown" or path.stat().st_size:
        return found
    for suffix, kind in EMPTY_BY_SUFFIX.items():
        if name.endswith(suffix):
            return kind
    raise UsageError(
        f"{name}: an empty file; name its kind on the command line with --kind GLOB=KIND",
        path=str(path),
    )


def _frames(path: Path, kind: str, columns: list[str]) -> list[list[Any]]:
    """The frames the reader of ``kind`` decodes, as the fixture's ``frames`` rows: a
    column names a frame field (start, end, sigil, payload_start, payload_len) or a body
    field (a list counts its entries; absent on this body: null)."""
    if kind == "bbg-frame-log":
        from importers.frame_log import read_frames as read_cli_frames

        frames: Iterator[Any] = read_cli_frames(path)
    else:
        from importers.signal_log import read_frames

        frames = read_frames(path)
    spans = ("start", "end", "sigil", "payload_start", "payload_len")
    rows = []
    for frame in frames:
        row = []
        for column in columns:
            value = getattr(frame if column in spans else frame.body, column, None)
            row.append(len(value) if isinstance(value, tuple) else value)
        rows.append(row)
    return rows


def _lines(path: Path) -> list[dict[str, Any]]:
    """The lines the TextArchive reader decodes, as the fixture's ``lines`` entries."""
    import hashlib

    from importers.text_archive import read_records

    return [
        {"line": r.line, "sha256": hashlib.sha256(r.raw).hexdigest(), "particle": r.particle}
        for r in read_records(path)
    ]


def _derived(key: str, path: Path, kind: str, expected: dict[str, Any]) -> Any:
    if key == "frames":
        return _frames(path, kind, list(expected.get("frames_columns") or []))
    return _lines(path)


def _compare_lists(name: str, want: list[Any], have: list[Any]) -> list[str]:
    """Every difference between two error lists (order matters for the first entry)."""
    if want == have:
        return []
    diffs = []
    if want and have and want[0] != have[0]:
        first, got = _show(want[0], whole=True), _show(have[0], whole=True)
        diffs.append(f"{name}[0]: expected {first}, got {got}")
    rest = list(have)
    for entry in want:
        if entry in rest:
            rest.remove(entry)
        else:
            shown = _show(entry, whole=True)
            diffs.append(f"{name}: expected {shown}, the report does not have it")
    diffs += [f"{name}: unexpected {_show(entry, whole=True)}" for entry in rest]
    if not diffs:
        diffs.append(f"{name}: the same entries in another order: {_show(have)}")
    return diffs


def _compare_first_error(name: str, want: dict[str, Any], errors: list[Any]) -> list[str]:
    pinned = {k: v for k, v in want.items() if k not in DESCRIPTIVE}
    if not errors:
        return [f"{name}: expected {_show(pinned)}, the report has no error"]
    got = errors[0]
    return [
        f"{name}.{k}: expected {_show(v)}, got {_show(got.get(k, '<absent>'))}"
        for k, v in pinned.items()
        if got.get(k, _ABSENT) != v
    ]


def compare(
    expected: dict[str, Any], report: dict[str, Any], path: Path | None = None
) -> tuple[list[str], list[str]]:
    """(differences, unpinned keys) between an expected file and the inspect ``report`` of
    ``path`` (needed for ``frames`` / ``lines``, which the readers decode again)."""
    unpinned = sorted(set(expected.get("unpinned") or []))
    diffs: list[str] = []
    errors = list(report.get("errors") or [])
    for key, want in expected.items():
        if key in DESCRIPTIVE or key in unpinned:
            continue
        if key in ("expected_errors", "semantic_errors"):
            field = "errors" if key == "expected_errors" else key
            diffs += _compare_lists(key, want, list(report.get(field) or []))
            continue
        if key in ("error", "first_error"):
            diffs += _compare_first_error(key, want, errors)
            continue
        if key in ("frames", "lines") and key not in report:
            if path is None:
                diffs.append(f"{key}: the report has no such field")
                continue
            try:
                have = _derived(key, path, str(report.get("kind")), expected)
            except MigrateError as exc:
                diffs.append(f"{key}: the reader stopped: {exc.message}")
                continue
        elif key not in report:
            diffs.append(f"{key}: expected {_show(want)}, the report has no such field")
            continue
        else:
            have = report[key]
        if key == "redb_header" and isinstance(want, dict) and isinstance(have, dict):
            # A record: every expected fact must match; the report may say more (txn id).
            diffs += [
                f"redb_header.{k}: expected {_show(v)}, got {_show(have.get(k, '<absent>'))}"
                for k, v in want.items()
                if have.get(k, _ABSENT) != v
            ]
            continue
        if have != want:
            diffs.append(f"{key}: expected {_show(want)}, got {_show(have)}")
    if not _ERROR_KEYS & expected.keys() and errors:
        diffs.append(f"unexpected error: {_show(errors[0])}")
    return diffs, unpinned


def _receipt_facts(expected: dict[str, Any], receipt: dict[str, Any]) -> list[str]:
    """Receipt fields checked against the expected file (sources independent of this code)."""
    tables = expected.get("tables") or {}
    digest = expected.get("archive_digest_sha256")
    checks: list[tuple[str, Any, Any]] = [
        ("source.sha256", receipt["source"].get("sha256"), expected.get("sha256")),
        ("source.size_bytes", receipt["source"].get("size_bytes"), expected.get("size_bytes")),
        ("counts.rows", receipt["counts"]["rows"],
         {name: t["rows"] for name, t in tables.items()}),
        ("counts.new_rows", receipt["counts"]["new_rows"],
         {name: t["rows"] for name, t in tables.items()}),
        ("counts.namespaces", receipt["counts"]["namespaces"],
         len(expected.get("namespaces") or {})),
        ("digests.source_archive_sha256", receipt["digests"]["source_archive_sha256"], digest),
        ("digests.staged_archive_sha256", receipt["digests"]["staged_archive_sha256"], digest),
        # A plain conversion (no mapping): nothing published beside the rows, no fences.
        ("head", receipt["head"], None),
        ("mappings", receipt["mappings"], []),
        ("fences", receipt["fences"], []),
        ("content_check", receipt.get("content_check"), "codec"),
    ]  # fmt: skip
    header = expected.get("redb_header") or {}
    for fact in ("format_version", "primary_slot", "recovery_required"):
        if fact in header:
            have = (receipt["source"].get("redb") or {}).get(fact)
            checks.append((f"source.redb.{fact}", have, header[fact]))
    return [
        f"receipt {name}: expected {_show(want)}, got {_show(have)}"
        for name, have, want in checks
        if have != want
    ]


def _replay_cell(path: Path, expected: dict[str, Any], work: Path, golden: Path,
                 bless: bool) -> tuple[list[str], list[str]]:  # fmt: skip
    from migrate import pipeline
    from migrate.inspect import inspect_bbg, inspect_path

    diffs, unpinned = compare(expected, inspect_path(path, kind="redb"), path)
    if not expected.get("valid") or diffs:
        return diffs, unpinned
    store = work / "bbg"
    outcome = pipeline.run(pipeline.Job(source=path, store=store))
    assert outcome.receipt is not None
    diffs += _receipt_facts(expected, outcome.receipt)
    after = inspect_bbg(store)
    for key in ("archive_digest_sha256", "namespaces"):
        if key in expected and key not in unpinned and after[key] != expected[key]:
            diffs.append(f"destination {key}: expected {_show(expected[key])}, "
                         f"got {_show(after[key])}")  # fmt: skip
    rows = {name: t["rows"] for name, t in after["tables"].items()}
    want_rows = {name: t["rows"] for name, t in (expected.get("tables") or {}).items()}
    if rows != want_rows:
        diffs.append(f"destination rows: expected {_show(want_rows)}, got {_show(rows)}")
    if not after["valid"]:
        diffs.append(f"destination breaks the links: {_show(after['errors'][:1])}")
    text = canonical_json(outcome.receipt, ascii=True, indent=1) + "\n"
    if golden.exists():
        if golden.read_text("utf-8") != text:
            diffs.append(
                f"receipt differs from the golden {golden.name} (a change detector: "
                "re-bless only after checking the change)"
            )
    elif bless:
        golden.write_text(text, "utf-8")
    return diffs, unpinned


def check(
    directory: Path,
    *,
    bless: bool = False,
    kinds: list[str] | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    progress: Observer | None = None,
) -> dict[str, Any]:
    """Replay every fixture in ``directory``; the report lists each with its differences.

    ``kinds``: ``GLOB=KIND`` items from the command line, for inputs content cannot tell.
    ``progress``: an observer (stage ``fixtures check``, fixtures replayed out of those found).
    """
    from migrate.inspect import inspect_path
    from migrate.progress import counter

    try:
        os.listdir(directory)  # missing, not a directory, or unreadable: one named error
    except OSError as exc:
        raise cannot_read(directory, exc) from exc
    globs = parse_kinds(kinds)
    results: list[dict[str, Any]] = []
    pairs = list(_inputs(directory))  # every input found before any is replayed
    report = counter(progress, "fixtures check", len(pairs), "fixtures")
    for source, expected_path in pairs:
        expected = json.loads(expected_path.read_text("utf-8"))
        unpinned: list[str] = []
        with tempfile.TemporaryDirectory(prefix="bbg-fixture-") as tmp:
            work = Path(tmp)
            path = source
            if source.name.endswith(".gz"):
                path = work / source.name.removesuffix(".gz")
                path.write_bytes(gzip.decompress(source.read_bytes()))
            try:
                kind = input_kind(path, source.name, globs)
                if kind == "redb":
                    golden = expected_path.with_name(
                        expected_path.name.replace(".expected.json", ".receipt.json")
                    )
                    diffs, unpinned = _replay_cell(path, expected, work, golden, bless)
                else:
                    diffs, unpinned = compare(expected, inspect_path(path, kind=kind), path)
            except MigrateError as exc:
                diffs = [f"{type(exc).__name__}: {exc.message}"]
        result: dict[str, Any] = {"fixture": source.name, "ok": not diffs, "differences": diffs}
        if unpinned:
            result["unpinned"] = unpinned
        results.append(result)
        if report is not None:
            report(len(results))
        if on_result is not None:
            on_result(result)
    if not results:
        raise UsageError(f"{directory}: no *.expected.json fixtures found", path=str(directory))
    return {
        "directory": str(directory),
        "fixtures": len(results),
        "failed": sum(not r["ok"] for r in results),
        "results": results,
    }
