"""Reader generations: which readers may open a store, and monotonic promotion.

The status marker (one row of ``bbg_import_v1``; no row: absent) maps to a reader
generation exactly as bbg decodes it (cyberia-to/bbg ``rs/src/storage/database/generation.rs``):

| marker | generation |
|---|---|
| absent, ``complete`` | ``original`` |
| ``neuron-v1`` | ``neuron-v1`` |
| ``auth-v1`` | ``auth-v1`` |
| ``copying``, ``export-v1``, anything else | none: open, write and promotion are refused |

Generations are ordered ``original < neuron-v1 < auth-v1``.  A reader of generation G opens a
store whose generation is ≤ G and refuses a newer one: that is how an older binary (an
``original`` reader) is made to refuse a store whose histories were taken over by an import.

The status column alone decides (as bbg's single ``status`` key does).  A marker that is not a
generation is never promoted, settled or written over: :func:`promote` and :func:`settle`
raise and change nothing, like bbg's ``promote`` on a ``copying``/``export-v1``/unknown status.
``export-v1`` (a store sealed as the source of a transfer, :mod:`migrate.transfer`) is refused
with :class:`~bbg_core.errors.StoreSealed` (exit 4); any other non-generation marker with
:class:`~bbg_core.errors.StoreRefused`.  The ``generation`` column beside the marker is
informational (the generation in force when the marker was last written); nothing reads a
decision from it, so a value this build does not know is reported, never looked up.
"""

from __future__ import annotations

from bbg_core.errors import StoreError, StoreRefused, StoreSealed
from fences._store import FenceReader, FenceWriter

GENERATIONS: tuple[str, ...] = ("original", "neuron-v1", "auth-v1")
RANK: dict[str, int] = {g: i for i, g in enumerate(GENERATIONS)}
MARKER_OF: dict[str, str] = {"original": "complete", "neuron-v1": "neuron-v1", "auth-v1": "auth-v1"}
# The newest generation this build reads and writes.
BUILD_GENERATION = GENERATIONS[-1]
# The marker of a store sealed as a transfer source (bbg ``transfer.rs``).
EXPORT_MARKER = "export-v1"
# The marker bbg's backend conversion keeps while it copies (bbg ``migration.rs``).
COPYING_MARKER = "copying"


def generation_of(marker: str | None) -> str | None:
    """The reader generation a status marker stands for, or None if it is not one."""
    if marker is None or marker == "complete":
        return "original"
    return marker if marker in RANK and marker != "original" else None


def _rank(generation: str) -> int:
    if generation not in RANK:
        raise ValueError(f"unknown reader generation {generation!r} (known: {GENERATIONS})")
    return RANK[generation]


def read_status(db: FenceReader) -> tuple[str | None, str]:
    """``(status marker or None if absent, the informational generation column)``."""
    return db.read_status()


def refusal(db: FenceReader, marker: str | None, reader_generation: str) -> StoreError:
    """The named error for a store whose status ``marker`` is not a reader generation."""
    path = str(db.path)
    if marker == EXPORT_MARKER:
        return StoreSealed(
            f"{path}: status marker 'export-v1': the store is sealed as the source of a "
            "transfer and accepts no writes (its history continues in the transfer's target). "
            "Read it with `bbg-migrate inspect`; finish the transfer with `bbg-migrate "
            "transfer`",
            path=path,
            marker=marker,
        )
    if marker == COPYING_MARKER:
        why = "a conversion into this store was interrupted (bbg marks it 'copying' until done)"
    else:
        why = "the store is mid-import, damaged, or was written by a newer tool"
    return StoreRefused(
        f"{path}: status marker {marker!r} is not a reader generation this build knows "
        f"(it reads {', '.join(GENERATIONS[: _rank(reader_generation) + 1])}; newest "
        f"supported: {reader_generation}): {why}; nothing was written",
        path=path,
        marker=marker,
        supported=reader_generation,
    )


def current_generation(db: FenceReader, reader_generation: str = BUILD_GENERATION) -> str:
    """The generation the status marker stands for; the named refusal if it stands for none."""
    marker, _ = read_status(db)
    generation = generation_of(marker)
    if generation is None:
        raise refusal(db, marker, reader_generation)
    return generation


def require_readable(
    db: FenceReader, reader_generation: str = BUILD_GENERATION, *, sealed_ok: bool = False
) -> str:
    """The store's generation; refused unless a ``reader_generation`` reader may open it.

    The same check guards every write transaction (:meth:`migrate.store.Store.transaction`),
    so a handle opened before a promotion or a seal cannot write past it.  ``sealed_ok``: a
    command that only reads (``tail``, ``snapshot``) also reads a store sealed as the source
    of a transfer (``export-v1``): the seal forbids writes, not reads; the generation is then
    the one the store had reached (the informational column).
    """
    if sealed_ok:
        marker, reached = read_status(db)
        if marker == EXPORT_MARKER:
            return reached
    reader_rank = _rank(reader_generation)
    generation = current_generation(db, reader_generation)
    if RANK[generation] > reader_rank:
        marker, _ = read_status(db)
        raise StoreRefused(
            f"{db.path}: status marker {marker!r} means reader generation {generation}; this "
            f"reader supports up to {reader_generation} and must not open it",
            path=str(db.path),
            marker=marker,
            generation=generation,
            supported=reader_generation,
        )
    return generation


def at_least(generation: str, target: str) -> str:
    """The generation :func:`promote` to ``target`` leaves on a store at ``generation``."""
    return target if _rank(target) > _rank(generation) else generation


def promote(tx: FenceWriter, target: str) -> str:
    """Raise the store to ``target`` (never lower); returns the generation now in force.

    A status that is not a generation (``copying``, ``export-v1``, unknown) is refused and
    left exactly as it is.
    """
    target_rank = _rank(target)
    current = current_generation(tx)
    if target_rank <= RANK[current]:
        return current
    _write(tx, MARKER_OF[target], target)
    return target


def set_transitional(tx: FenceWriter, marker: str) -> None:
    """Set a non-generation status (e.g. ``copying``) that makes normal opens refuse.

    Only from a generation: a store already in a transitional status keeps it.
    """
    if generation_of(marker) is not None:
        raise ValueError(f"{marker!r} is a generation marker; use promote()")
    generation = current_generation(tx)
    _write(tx, marker, generation)


def settle(tx: FenceWriter) -> str:
    """Write the marker of the generation in force; returns that generation.

    Turns an absent marker into ``complete`` (what a plain conversion leaves behind).  Never
    lowers anything, and never ends a non-generation status (that is refused, unchanged).
    """
    marker, _ = read_status(tx)
    generation = current_generation(tx)
    if marker != MARKER_OF[generation]:
        _write(tx, MARKER_OF[generation], generation)
    return generation


def _write(tx: FenceWriter, marker: str, generation: str) -> None:
    tx.write_status(marker, generation)
