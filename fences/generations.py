"""Reader generations: which readers may open a store, and monotonic promotion.

The status marker (table ``bbg_import_v1``, BRIEF §3) maps to a reader generation:

| marker | generation |
|---|---|
| absent, ``complete`` | ``original`` |
| ``neuron-v1`` | ``neuron-v1`` |
| ``auth-v1`` | ``auth-v1`` |
| ``copying``, ``export-v1``, anything else | none: a normal open is refused |

Generations are ordered ``original < neuron-v1 < auth-v1``.  A reader of generation G opens a
store whose generation is ≤ G and refuses a newer one: that is how an older binary (an
``original`` reader) is made to refuse a store whose histories were taken over by an import.
Promotion only ever raises the generation, inside the caller's write transaction; asking for
a lower or equal generation writes nothing.  The row also keeps the highest generation
reached, so a transitional status (``copying``) can be set and settled without losing it.
"""

from __future__ import annotations

from bbg_core.errors import StoreRefused
from fences._sql import SqlReader, SqlWriter

GENERATIONS: tuple[str, ...] = ("original", "neuron-v1", "auth-v1")
RANK: dict[str, int] = {g: i for i, g in enumerate(GENERATIONS)}
MARKER_OF: dict[str, str] = {"original": "complete", "neuron-v1": "neuron-v1", "auth-v1": "auth-v1"}
# The newest generation this build reads and writes.
BUILD_GENERATION = GENERATIONS[-1]


def generation_of(marker: str | None) -> str | None:
    """The reader generation a status marker stands for, or None if it is not one."""
    if marker is None or marker == "complete":
        return "original"
    return marker if marker in RANK and marker != "original" else None


def _rank(generation: str) -> int:
    if generation not in RANK:
        raise ValueError(f"unknown reader generation {generation!r} (known: {GENERATIONS})")
    return RANK[generation]


def read_status(db: SqlReader) -> tuple[str | None, str]:
    """``(status marker or None if absent, highest generation reached)``."""
    row = db.one("SELECT status, generation FROM bbg_import_v1 WHERE id = 1")
    if row is None:
        return None, "original"
    return str(row[0]), str(row[1])


def require_readable(db: SqlReader, reader_generation: str = BUILD_GENERATION) -> str:
    """The store's generation; StoreRefused unless a ``reader_generation`` reader may open it."""
    reader_rank = _rank(reader_generation)
    marker, _ = read_status(db)
    generation = generation_of(marker)
    if generation is None:
        raise StoreRefused(
            f"{db.path}: status marker {marker!r} is not a reader generation this build knows "
            f"(it reads {', '.join(GENERATIONS[: reader_rank + 1])}; newest supported: "
            f"{reader_generation}); the store is mid-import or was written by a newer tool",
            path=str(db.path),
            marker=marker,
            supported=reader_generation,
        )
    if RANK[generation] > reader_rank:
        raise StoreRefused(
            f"{db.path}: status marker {marker!r} means reader generation {generation}; this "
            f"reader supports up to {reader_generation} and must not open it",
            path=str(db.path),
            marker=marker,
            generation=generation,
            supported=reader_generation,
        )
    return generation


def promote(tx: SqlWriter, target: str) -> str:
    """Raise the store to ``target`` (never lower); returns the generation now in force."""
    target_rank = _rank(target)
    marker, current = read_status(tx)
    if target_rank <= RANK[current]:
        return current
    _write(tx, MARKER_OF[target], target)
    return target


def set_transitional(tx: SqlWriter, marker: str) -> None:
    """Set a non-generation status (e.g. ``copying``) that makes normal opens refuse."""
    if generation_of(marker) is not None:
        raise ValueError(f"{marker!r} is a generation marker; use promote()")
    _, generation = read_status(tx)
    _write(tx, marker, generation)


def settle(tx: SqlWriter) -> str:
    """Write the marker of the highest generation reached; returns that generation.

    Ends a transitional status, and turns an absent marker into ``complete`` (what a plain
    conversion leaves behind).  Never lowers anything.
    """
    marker, generation = read_status(tx)
    if marker != MARKER_OF[generation]:
        _write(tx, MARKER_OF[generation], generation)
    return generation


def _write(tx: SqlWriter, marker: str, generation: str) -> None:
    tx.execute(
        "INSERT INTO bbg_import_v1 (id, status, generation, transaction_no) VALUES (1, ?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET status = excluded.status, "
        "generation = excluded.generation, transaction_no = excluded.transaction_no",
        (marker, generation, tx.number),
    )
