"""Output helpers shared by every command: JSON on stdout, humans on stderr."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console

import schemas
from migrate.cli._state import state

# rich honours NO_COLOR by itself; human output goes to stderr so stdout stays parseable.
err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


def emit_json(doc: Any, schema: str | None = None) -> None:
    """Print one JSON document on stdout, after validating it against ``schema``."""
    if schema is not None:
        schemas.validate(doc, schema)
    state.emitted = True
    sys.stdout.write(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n")
    sys.stdout.flush()


@contextmanager
def progress_bar(
    label: str, *, enabled: bool = True
) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress line on stderr (rows, bytes, rate) for long work.

    Yields a ``progress(rows, nbytes)`` callback, or None when disabled (``--json``) or when
    stderr is not a terminal, so scripted runs stay silent.
    """
    if not enabled or not err.is_terminal:
        yield None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TextColumn(
            "{task.fields[rows]} rows, {task.fields[mib]:.1f} MiB, {task.fields[rate]} rows/s"
        ),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task(label, rows=0, mib=0.0, rate=0)
        start = time.monotonic()

        def update(rows: int, nbytes: int) -> None:
            elapsed = max(time.monotonic() - start, 1e-9)
            bar.update(task, rows=rows, mib=nbytes / 1048576, rate=int(rows / elapsed))

        yield update
