"""Path options that refuse option-looking values (``--store --json`` names no directory)."""

from __future__ import annotations

from pathlib import Path

import typer


def path_arg(text: str) -> Path:
    """Parse a path option, refusing a value that starts with ``-``: it is almost always an
    option the user meant (``--store --json`` would otherwise create a directory named
    ``--json`` and drop the ``--json``).  A path that really starts with ``-`` is written
    ``./-name``."""
    if text.startswith("-"):
        raise typer.BadParameter(
            f"{text!r} looks like an option, not a path; to name a path that starts with '-', "
            f"write ./{text}"
        )
    return Path(text)


def store_option(help_text: str) -> Path:
    """A ``--store DIR`` option (typer default object) that refuses option-looking values."""
    option: Path = typer.Option(None, "--store", help=help_text, parser=path_arg)
    return option
