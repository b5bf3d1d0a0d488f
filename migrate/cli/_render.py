"""Output helpers shared by every command: JSON on stdout, humans on stderr."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, cast

from bbg_core.canonical import canonical_json
from migrate.cli._state import state

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

# rich honours NO_COLOR by itself; human output goes to stderr so stdout stays parseable.
# soft_wrap: a line is printed whole and the terminal wraps it, so an id or digest is never
# cut short or broken by rich, whatever the width (a file, COLUMNS=40).
#: The width of stderr when it is not a terminal (a file, a pipe: `2> audit.log`): rich would
#: take 80 columns (or COLUMNS) and fold table cells and long lines there; off a terminal
#: nothing wraps, and a table is as wide as its widest row.
NATURAL_WIDTH = 1 << 15

class _Stderr:
    """rich's Console on stderr, made on first use: importing rich costs start-up time that
    ``detect`` and ``--version`` need not pay."""

    console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(stderr_console(), name)


def stderr_console() -> Console:
    """The one rich Console on stderr (for rich objects that need the console itself)."""
    if _Stderr.console is None:
        from rich.console import Console

        console = Console(stderr=True, highlight=False, soft_wrap=True)
        if not console.is_terminal:
            console.width = NATURAL_WIDTH  # a file or a pipe: no line is ever wrapped
        _Stderr.console = console
    return _Stderr.console


err = cast("Console", _Stderr())


def say(line: str) -> None:
    """One plain line on stderr (no rich needed)."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def show(value: Any) -> str:
    """A value as an operator reads it: numbers with separators, yes/no, "none", lists and
    mappings as ``a: 1, b: 2`` -- never a Python repr."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".")
    if isinstance(value, dict):
        return ", ".join(f"{k}: {show(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple):
        return ", ".join(show(v) for v in value) or "none"
    return str(value)


def count(n: int, noun: str) -> str:
    """``1 row``, ``2 rows``, ``10,461 rows``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def size(n: int) -> str:
    """Bytes for a human: ``29,378 bytes (28.7 KiB)``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n:,} bytes ({n / scale:.1f} {unit})"
    return count(n, "byte")


def facts(title: str, rows: list[tuple[str, Any]]) -> None:
    """A titled list of ``name  value`` lines on stderr.  Unlike a table, a value (an id, a
    digest, a path) is never cut short or folded: each line is printed whole."""
    err.print(title, markup=False, style="bold")
    width = max((len(name) for name, _ in rows), default=0)
    for name, value in rows:
        text = value if isinstance(value, str) else show(value)
        err.print(f"  {name.ljust(width)}  {text}", markup=False)


def table(*headers: str, title: str | None = None) -> Table:
    """A rich table for :func:`print_table` (ids and digests go in :func:`facts` lines)."""
    from rich.table import Table

    return Table(*headers, title=title)


def print_table(grid: Table) -> None:
    """Print ``grid`` on stderr at its natural width even when the terminal (or COLUMNS, or
    rich's 80 columns for a file) is narrower: rich would end cells in an ellipsis; here
    nothing is cut short and the terminal wraps the long lines."""
    from rich.console import Console
    from rich.measure import Measurement

    needed = Measurement.get(err, err.options.update_width(1 << 16), grid).maximum
    if needed <= err.width:
        err.print(grid)
        return
    wide = Console(file=err.file, width=needed, highlight=False, no_color=err.no_color,
                   force_terminal=err.is_terminal, color_system=err.color_system)  # type: ignore[arg-type]  # fmt: skip
    wide.print(grid)


def emit_json(doc: Any, schema: str) -> None:
    """Print one JSON document on stdout, after validating it against ``schema`` (every
    ``--json`` output has one: tests/test_json_outputs.py)."""
    import schemas

    schemas.validate(doc, schema)
    state.emitted = True
    sys.stdout.write(canonical_json(doc, ascii=True) + "\n")
    sys.stdout.flush()
