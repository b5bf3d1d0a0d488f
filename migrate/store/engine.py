"""Which storage engine a store directory holds, and where the toolkit keeps its records.

Two engines hold a BBG store, one implementation each of the same rows (bbg's tables, byte
key to byte value):

* ``fjall`` -- **the real BBG database**, the one the cyber code opens: a Fjall keyspace
  directory laid out as bbg's own engine lays it out (mode 0700, ``bbg.lock``, the 33
  partitions of :mod:`migrate.store.bbgdb`).  It is the default for a new store.  Nothing of
  this toolkit lives inside it: the toolkit's own records (import journal, seals, cursors,
  inert staging, receipts, the transaction ledger) live in the **records directory** beside
  it, ``<store>.bbg-migrate/`` (:func:`records_dir`), a SQLite database of its own.  The
  keyspace is the truth; the records say what this toolkit did to it.
* ``sqlite`` -- the toolkit's audit engine: ``bbg.sqlite3`` holding the same tables and the
  records in one file.  Chosen only when asked for (``--engine sqlite``); the cyber code does
  not open it.

The engine of an existing store is read from its content (:func:`engine_of`), never from an
option, so a command needs to be told the engine only when it creates a store.
"""

from __future__ import annotations

import os
from pathlib import Path

from bbg_core.errors import UsageError

FJALL = "fjall"
SQLITE = "sqlite"
ENGINES: tuple[str, ...] = (FJALL, SQLITE)
DEFAULT_ENGINE = FJALL
#: Names the engine of stores created when none is asked for (tests run the suite on each).
ENGINE_ENV = "BBG_MIGRATE_ENGINE"

#: The suffix of the records directory beside a Fjall store.
RECORDS_SUFFIX = ".bbg-migrate"
#: The SQLite store file (the whole store on the ``sqlite`` engine).
SQLITE_FILE = "bbg.sqlite3"
_FJALL_VERSION = b"FJL\x02"


def engine_of(directory: Path) -> str | None:
    """``fjall`` or ``sqlite`` when ``directory`` holds a store of that engine, else None (it
    is absent, empty, or holds neither).  Reads names and four bytes; never writes."""
    try:
        with open(directory / "version", "rb") as fh:
            if fh.read(5) == _FJALL_VERSION:
                return FJALL
    except OSError:
        pass
    if os.path.lexists(directory / SQLITE_FILE):
        return SQLITE
    return None


def default_engine() -> str:
    """The engine a new store gets when none is asked for: ``BBG_MIGRATE_ENGINE`` when set
    (to an engine's name), else ``fjall``."""
    return check_engine(os.environ.get(ENGINE_ENV) or None) or DEFAULT_ENGINE


def engine_for(directory: Path, asked: str | None) -> str:
    """The engine of the store at ``directory``: its own when it holds one (UsageError when
    ``asked`` names another), else ``asked`` or the default."""
    check_engine(asked)
    found = engine_of(directory)
    if found is not None and asked is not None and asked != found:
        raise UsageError(
            f"{directory} is a {found} store; --engine {asked} only chooses the engine of a "
            "store being created", path=str(directory), engine=asked,
        )  # fmt: skip
    return found or asked or default_engine()


def check_engine(name: str | None) -> str | None:
    """``name`` if it is an engine (or None), else UsageError listing the engines."""
    if name is None or name in ENGINES:
        return name
    raise UsageError(f"unknown store engine {name!r}; choose one of: {', '.join(ENGINES)}",
                     engine=name)  # fmt: skip


def records_dir(directory: Path) -> Path:
    """``<store>.bbg-migrate``: where the toolkit keeps its records of a Fjall store."""
    full = Path(os.path.abspath(directory))
    return full.with_name(full.name + RECORDS_SUFFIX)


def has_store_id(directory: Path) -> bool:
    """False for a Fjall store without records (one the cyber code wrote): it has no store
    id yet -- this toolkit makes one (at random) when it first writes the records beside it
    -- so nothing derived from its id (a transfer's default nonce) can be known before.
    Reads a name only."""
    if engine_of(directory) != FJALL:
        return True
    return os.path.lexists(records_dir(directory) / SQLITE_FILE)
