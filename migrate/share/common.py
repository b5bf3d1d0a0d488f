"""What every share module needs: canonical lines, stable UUIDs and the cheap soundness
checks of a store opened read-only (:func:`migrate.store.readonly.open_readonly`)."""

from __future__ import annotations

import functools
import hashlib
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import schemas
from bbg_core.canonical import canonical_json
from bbg_core.errors import StoreError, ValidationFailed
from migrate.store import history, ledger, leftovers
from migrate.store.catalog import row_count, schema_version
from migrate.store.connection import Connection
from migrate.store.layout import PRE_LEDGER_VERSION, needs_upgrade
from migrate.store.sanity import quick_check

# apply refuses longer lines.  A content payload may be 16 MiB (a cell store's limit), i.e.
# 32 MiB as hex, so the default must exceed that or a valid store could not travel as events.
MAX_LINE = 40 * 1024 * 1024


def canonical(doc: Any) -> bytes:
    """``doc`` as one canonical line: sorted keys, no spaces, UTF-8, ending in LF."""
    return canonical_json(doc).encode("utf-8") + b"\n"


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """``node`` with every local ``$ref`` replaced by the definition it names."""
    if isinstance(node, dict):
        ref = node.get("$ref", "")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return {**_inline(defs[ref.removeprefix("#/$defs/")], defs), **_inline(rest, defs)}
        return {k: _inline(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


@functools.cache
def _flat(name: str) -> dict[str, Any]:
    # Same schema as schemas/NAME.schema.json, local $refs inlined: resolving references
    # is most of jsonschema's time on per-line validation (measured ~1.7x faster).
    # jsonschema is imported by the validating functions only (start-up time of the share
    # commands that validate nothing).
    import jsonschema

    schema = schemas.load(name)
    jsonschema.validators.validator_for(schema).check_schema(schema)
    flat: dict[str, Any] = _inline(schema, schema.get("$defs", {}))
    return flat


@functools.cache
def _validator(name: str, kind: str | None = None) -> Any:
    """The validator of schema ``name``; with ``kind``: the same schema narrowed to the one
    ``allOf`` branch ``{"if": {"properties": {"kind": {"const": kind}}}, "then": X}`` that a
    document of that kind takes (the other branches' ``if`` fail on ``kind``, so they add
    nothing): the same verdict, about half the time on an event line."""
    import jsonschema

    flat = _flat(name)
    cls = schemas.linear(jsonschema.validators.validator_for(schemas.load(name)))
    if kind is None:
        return cls(flat)
    branches = _kind_branches(name)
    assert branches is not None and kind in branches
    return cls({**{k: v for k, v in flat.items() if k != "allOf"}, "allOf": [branches[kind]]})


@functools.cache
def _kind_branches(name: str) -> dict[str, Any] | None:
    """``kind`` -> ``then`` if every ``allOf`` entry of schema ``name`` is an if/then on the
    constant ``kind`` property (and nothing else), else None."""
    branches: dict[str, Any] = {}
    for entry in _flat(name).get("allOf", []):
        cond = entry.get("if") if isinstance(entry, dict) else None
        if not (isinstance(cond, dict) and set(entry) == {"if", "then"} and set(cond) == {
                "properties"} and set(cond["properties"]) == {"kind"}):  # fmt: skip
            return None
        const = cond["properties"]["kind"]
        if set(const) != {"const"} or not isinstance(const["const"], str):
            return None
        branches[const["const"]] = entry["then"]
    return branches or None


def schema_problem(doc: Any, name: str) -> str | None:
    """None if ``doc`` matches schema ``name``, else where and why it does not."""
    kind = doc.get("kind") if isinstance(doc, dict) else None
    branches = _kind_branches(name)
    narrow = branches is not None and isinstance(kind, str) and kind in branches
    validator = _validator(name, kind if narrow else None)
    import jsonschema

    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "top"
    return f"{where}: {str(error.message)[:200]}"


def stable_uuid(domain: bytes, *parts: bytes) -> str:
    """A UUIDv8 from SHA-256 of ``domain`` and length-prefixed ``parts`` (same input, same id)."""
    h = hashlib.sha256(b"bbg-migrate/" + domain + b"\x00")
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    raw = bytearray(h.digest()[:16])
    raw[6] = (raw[6] & 0x0F) | 0x80  # version 8: custom (RFC 9562)
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC variant
    return str(uuid.UUID(bytes=bytes(raw)))


# What reading a damaged file can raise besides translated SQLite errors: a value of the
# wrong type or shape (bad UTF-8 and bad JSON are ValueErrors too).
DAMAGE = (ValueError, TypeError, KeyError, IndexError, OverflowError)


@contextmanager
def damaged_reads(path: Path) -> Iterator[None]:
    """Name the damage when reading a store hits a value of the wrong type or shape."""
    try:
        yield
    except DAMAGE as exc:
        raise StoreError(
            f"{path}: the store holds a value this tool cannot read ({type(exc).__name__}: "
            f"{str(exc)[:200]}); the file is damaged: run `bbg-migrate doctor`",
            path=str(path),
        ) from exc


def require_sound(conn: Connection, what: str) -> None:
    """The cheap invariants, checked before anything is exported (``tail``, ``snapshot``).

    SQLite's ``quick_check``; one history entry and one receipt per head index; no staged
    rows left by an import that is not in progress; a transaction ledger that accounts for
    every content row, claim row and head, and whose rows read back
    (:func:`migrate.store.ledger.uncovered`, :func:`~migrate.store.ledger.bad_rows`: events are
    derived from it, so a row it does not record would silently be left out of every stream
    and replica).  A store that breaks one is refused
    (exit 3) naming the damage: exporting it would spread it.  ``doctor`` says the rest.
    """
    problems: list[str] = []
    quick = quick_check(conn)
    if quick != ["ok"]:
        problems.append(f"SQLite quick_check: {quick[0]}")
    else:
        expected = 0
        for value in history.head_values(conn):
            if type(value) is not bytes or len(value) != 40:
                problems.append("application_heads holds a value that is not a 40-byte head")
                break
            expected += int.from_bytes(value[:8], "little") + 1
        counts = (row_count(conn, "application_history"), row_count(conn, "application_requests"))
        # nohistory dropped the entries below each retained boundary; their receipts stay
        # (or, in a copy that started at the boundary, never came).
        dropped = 0
        if schema_version(conn) != PRE_LEDGER_VERSION:
            dropped = ledger.entries_below_boundaries(conn)
        if not problems and (
            counts[0] != expected - dropped or not expected - dropped <= counts[1] <= expected
        ):
            problems.append(
                f"the heads account for {expected} history entries, the store holds "
                f"{counts[0]} history entries and {counts[1]} receipts"
            )
        stray = leftovers.stray_staged_rows(conn)
        if stray:
            problems.append(f"{stray} staged rows belong to no import in progress")
        if not problems and schema_version(conn) != PRE_LEDGER_VERSION:
            gap = ledger.describe_uncovered(ledger.uncovered(conn))
            if gap is not None:
                problems.append(f"the transaction ledger does not cover the tables: {gap}")
            bad, sample = ledger.bad_rows(conn, 1)
            if bad:
                problems.append(f"{bad} ledger rows cannot be read back ({sample[0]})")
    if problems:
        raise ValidationFailed(
            f"{conn.path}: the store is damaged ({problems[0]}); nothing was {what}. Run "
            "`bbg-migrate doctor` for the full report",
            path=str(conn.path),
            errors=[{"code": "damaged-store", "detail": p} for p in problems],
        )


def require_ledger(conn: Connection) -> None:
    """StoreRefused (naming ``upgrade``) for a store from before the transaction ledger."""
    if schema_version(conn) == PRE_LEDGER_VERSION:
        raise needs_upgrade(conn.path)


__all__ = [
    "MAX_LINE",
    "canonical",
    "require_ledger",
    "schema_problem",
    "stable_uuid",
]
