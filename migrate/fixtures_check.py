"""``fixtures check DIR``: replay legacy fixtures against their golden results (BRIEF §7).

A fixture directory holds legacy inputs, each with ``<input>.expected.json`` beside it (for a
``cell-x.redb[.gz]`` the file is ``cell-x.expected.json``), and for valid cell stores
optionally a golden receipt ``cell-x.receipt.json``.  Each input is replayed:

* every input is inspected, and every field the expected file shares with the inspect
  report must be equal (digests, tables, namespaces, counts, header facts, validity); the
  first expected error (``expected_errors[0]``, ``error`` or ``first_error``) must be the
  report's first error, with its offset/frame/line where the expected file gives them;
* a valid cell store is also migrated into a temporary store: the destination's archive
  digest must equal the expected one, and the receipt must equal the golden receipt byte for
  byte when one exists (``bless=True`` writes missing golden receipts).

The source fixtures are never written (compressed ones are unpacked into a temp dir).
"""

from __future__ import annotations

import gzip
import json
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bbg_core.errors import MigrateError, UsageError

# Fields of an expected file that describe how it was made, not what a reader must find.
_NOT_COMPARED = frozenset(
    {
        "file", "description", "set", "seed", "writer", "frames", "frames_columns", "lines",
        "mutation", "nondurable_write", "application_writes", "data_content_ids_placeholder",
        "expected_errors", "error", "first_error", "note",
    }
)  # fmt: skip


def _inputs(directory: Path) -> Iterator[tuple[Path, Path]]:
    """(input, expected file) pairs in name order."""
    for expected in sorted(directory.glob("*.expected.json")):
        stem = expected.name.removesuffix(".expected.json")
        candidates = [directory / stem, directory / f"{stem}.redb", directory / f"{stem}.redb.gz"]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            raise UsageError(f"{expected}: no input file beside it (tried {stem}[.redb[.gz]])")
        yield found, expected


def _first_expected_error(expected: dict[str, Any]) -> dict[str, Any] | None:
    if expected.get("expected_errors"):
        first: dict[str, Any] = expected["expected_errors"][0]
        return {"code": first["code"]}
    for key in ("error", "first_error"):
        if key in expected:
            return {k: v for k, v in expected[key].items() if k != "note"}
    return None


def _kind_hint(path: Path, expected: dict[str, Any]) -> str | None:
    """An empty file is both a valid empty log and a valid empty archive: the expected
    file's own fields say which one the fixture is.  Otherwise the content decides."""
    if path.stat().st_size:
        return None
    logish = {"event_count", "per_sigil", "hemera_source_digest"} & expected.keys()
    return "signal-log" if logish else "text-archive"


def _compare(expected: dict[str, Any], report: dict[str, Any]) -> list[str]:
    diffs = []
    for key, want in expected.items():
        if key in _NOT_COMPARED or key not in report:
            continue
        have = report[key]
        if isinstance(want, dict) and isinstance(have, dict) and key == "redb_header":
            have = {k: have.get(k) for k in want}
        if have != want:
            diffs.append(f"{key}: expected {json.dumps(want)[:200]}, got {json.dumps(have)[:200]}")
    want_error = _first_expected_error(expected)
    errors = report.get("errors") or []
    if want_error is None:
        if errors:
            diffs.append(f"unexpected error: {errors[0]}")
    elif not errors:
        diffs.append(f"expected error {want_error}, got none")
    else:
        got = {k: errors[0].get(k) for k in want_error}
        if got != want_error:
            diffs.append(f"first error: expected {want_error}, got {got}")
    return diffs


def _replay_cell(path: Path, expected: dict[str, Any], work: Path, bless: bool) -> list[str]:
    from migrate import pipeline
    from migrate.inspect import inspect_bbg, inspect_path

    diffs = _compare(expected, inspect_path(path, kind="redb"))
    if not expected.get("valid") or diffs:
        return diffs
    store = work / "bbg"
    outcome = pipeline.run(pipeline.Job(source=path, store=store))
    assert outcome.receipt is not None
    after = inspect_bbg(store)
    if after["archive_digest_sha256"] != expected.get("archive_digest_sha256"):
        diffs.append(f"destination digest {after['archive_digest_sha256']} differs")
    if not after["valid"]:
        diffs.append(f"destination breaks the links: {after['errors'][:1]}")
    golden = expected["_receipt_path"]
    text = json.dumps(outcome.receipt, sort_keys=True, indent=1) + "\n"
    if golden.exists():
        if golden.read_text("utf-8") != text:
            diffs.append(f"receipt differs from the golden {golden.name}")
    elif bless:
        golden.write_text(text, "utf-8")
    return diffs


def check(
    directory: Path,
    *,
    bless: bool = False,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Replay every fixture in ``directory``; the report lists each with its differences."""
    from migrate.inspect import inspect_path

    if not directory.is_dir():
        raise UsageError(f"{directory}: not a directory of fixtures", path=str(directory))
    results = []
    for source, expected_path in _inputs(directory):
        expected = json.loads(expected_path.read_text("utf-8"))
        with tempfile.TemporaryDirectory(prefix="bbg-fixture-") as tmp:
            work = Path(tmp)
            path = source
            if source.name.endswith(".gz"):
                path = work / source.name.removesuffix(".gz")
                path.write_bytes(gzip.decompress(source.read_bytes()))
            try:
                if path.name.endswith(".redb"):
                    receipt = expected_path.with_name(
                        expected_path.name.replace(".expected.json", ".receipt.json")
                    )
                    diffs = _replay_cell(path, {**expected, "_receipt_path": receipt}, work, bless)
                else:
                    diffs = _compare(expected, inspect_path(path, kind=_kind_hint(path, expected)))
            except MigrateError as exc:
                diffs = [f"{type(exc).__name__}: {exc.message}"]
        result = {"fixture": source.name, "ok": not diffs, "differences": diffs}
        results.append(result)
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
