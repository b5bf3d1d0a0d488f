"""Cheap invariants of a store file that damage breaks first: column types and JSON texts.

SQLite does not enforce column types (the tables are not STRICT), so a damaged page can
hand back text, an integer or NULL where the schema declares a blob, and a seal or receipt
that is no longer JSON.  Code reading such a value would fail with a foreign ``TypeError``
or ``ValueError``; these checks find the damage first and name it.

* :func:`column_problems` -- every column of every table (or of the tables named) whose
  values are not of the declared type, and every JSON column that does not parse: one
  ``SELECT`` per table, all in SQLite (``doctor`` runs it over the whole file);
* :func:`check_bookkeeping` -- the same over the small bookkeeping tables (storage row,
  status marker, import records), run when a store is opened: StoreError if any is damaged;
* :func:`quick_check` / :func:`integrity_check` -- what SQLite's ``PRAGMA quick_check`` /
  ``integrity_check`` says (``["ok"]``: sound); :func:`foreign_key_violations` -- the rows
  of ``PRAGMA foreign_key_check``.
"""

from __future__ import annotations

from typing import Any, Protocol

from bbg_core.errors import StoreError
from migrate.store.catalog import table_names

# Declared type -> what typeof() must say.
_TYPEOF = {"BLOB": "blob", "TEXT": "text", "INTEGER": "integer"}
# Columns holding canonical JSON text.
JSON_COLUMNS = {
    ("bbg_import_v1_seals", "seal"),
    ("bbg_import_v1_receipts", "receipt"),
    ("bbg_import_v1_journal", "detail"),
}
# Small tables read on every open (the staged rows are excluded: they can be large).
BOOKKEEPING = (
    "bbg_storage_v1",
    "bbg_import_v1",
    "bbg_import_v1_imports",
    "bbg_import_v1_seals",
    "bbg_import_v1_cursors",
    "bbg_import_v1_staged_namespaces",
    "bbg_import_v1_fences",
    "bbg_import_v1_receipts",
    "bbg_import_v1_journal",
    "bbg_import_v1_nonces",
)


class _Reader(Protocol):
    @property
    def path(self) -> Any: ...

    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...

    def rows(self, sql: str, params: Any = (), batch: int = 512) -> Any: ...


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _columns(db: _Reader, table: str) -> list[tuple[str, str, bool]]:
    """(name, expected typeof, nullable) of each typed column of ``table``."""
    out = []
    for row in db.rows(f"PRAGMA table_info({_ident(table)})"):
        name, declared, notnull = str(row[1]), str(row[2]).upper(), bool(row[3])
        if declared in _TYPEOF:
            out.append((name, _TYPEOF[declared], not notnull))
    return out


def column_problems(db: _Reader, tables: tuple[str, ...] | None = None) -> list[dict[str, str]]:
    """Findings ``{code, detail}`` for values of the wrong type and JSON that does not parse."""
    present = table_names(db)
    if tables is None:
        tables = tuple(present)
    out: list[dict[str, str]] = []
    for table in tables:
        if table not in present:
            continue
        checks = []
        for name, kind, nullable in _columns(db, table):
            allowed = f"('{kind}', 'null')" if nullable else f"('{kind}')"
            checks.append((f"sum(typeof({_ident(name)}) NOT IN {allowed})", name, kind))
            if (table, name) in JSON_COLUMNS:
                checks.append(
                    (f"sum(typeof({_ident(name)}) = 'text' AND NOT json_valid({_ident(name)}))",
                     name, "JSON")  # fmt: skip
                )
        if not checks:
            continue
        row = db.one(f"SELECT {', '.join(c[0] for c in checks)} FROM {_ident(table)}")
        for (_, column, kind), count in zip(checks, row or (), strict=False):
            if count:
                what = "is not valid JSON" if kind == "JSON" else f"is not of type {kind}"
                out.append({
                    "code": "bad-column-value",
                    "detail": f"{table}.{column}: {count} value(s) {what}",
                })  # fmt: skip
    return out


def quick_check(db: _Reader) -> list[str]:
    """The lines of SQLite's ``PRAGMA quick_check`` (``["ok"]`` when it finds nothing)."""
    return [str(r[0]) for r in db.rows("PRAGMA quick_check")]


def integrity_check(db: _Reader) -> list[str]:
    """The lines of SQLite's ``PRAGMA integrity_check`` (``["ok"]`` when it finds nothing)."""
    return [str(r[0]) for r in db.rows("PRAGMA integrity_check")]


def foreign_key_violations(db: _Reader) -> list[list[Any]]:
    """The rows of SQLite's ``PRAGMA foreign_key_check`` (table, rowid, parent, fk index)."""
    return [list(r) for r in db.rows("PRAGMA foreign_key_check")]


def check_bookkeeping(db: _Reader) -> None:
    """StoreError naming the first damaged bookkeeping column (see the module docstring)."""
    try:
        problems = column_problems(db, BOOKKEEPING)
    except StoreError as exc:  # a page SQLite cannot read ("database disk image is malformed")
        problems = [{"code": "unreadable", "detail": exc.message}]
    if problems:
        raise StoreError(
            f"{db.path}: the store file is damaged ({problems[0]['detail']}); run "
            "`bbg-migrate doctor` and restore the store from a backup",
            path=str(db.path),
            errors=problems,
        )


def required_tables(version: int) -> list[str]:
    """The tables a store of schema ``version`` must hold: every table schemas/store.sql
    creates, less the optional ones it creates ``IF NOT EXISTS`` (the export seal, made by
    the transfer seal) and, for a version-1 store, the ledger and retention tables
    (``upgrade`` adds them)."""
    import re

    import schemas
    from migrate.store import ledger
    from migrate.store.layout import PRE_LEDGER_VERSION

    out = []
    for optional, name in re.findall(r"CREATE TABLE (IF NOT EXISTS )?(\w+)", schemas.sql("store")):
        later = name in ledger.TABLES
        if (optional and not later) or (later and version == PRE_LEDGER_VERSION):
            continue
        out.append(name)
    return out


def missing_tables(db: _Reader, version: int) -> list[str]:
    """The tables of :func:`required_tables` the file does not hold (a command that reads or
    writes one fails with "no such table"), in schema order."""
    present = set(table_names(db))
    return [n for n in required_tables(version) if n not in present]
