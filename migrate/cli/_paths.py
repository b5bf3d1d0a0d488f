"""Path options that refuse option-looking values (``--store --json`` names no directory)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import typer

from bbg_core.errors import MigrateError
from bbg_core.files import cannot_read, refuse_special_output


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


# Parameters that name a file or directory to write (the rest are read).
_WRITES = frozenset({"output", "dest", "receipt", "html", "report_dir"})
# Of those, the ones that name a file (not a directory).
_WRITES_FILE = frozenset({"output", "receipt", "html"})
# What no command can do anything with: the path cannot even be looked up.
_UNUSABLE = frozenset({errno.ELOOP, errno.ENAMETOOLONG})


def check_path(name: str, value: Any) -> None:
    """Refuse a path the system cannot look up at all (a loop of symbolic links, a name
    longer than the file system allows) before any command uses it: exit 1, one line
    ``PATH: cannot read: REASON`` (``cannot write`` for an output); and an output file that
    is a FIFO or a device (it would block or never end)."""
    for path in value if isinstance(value, list | tuple) else [value]:
        if not isinstance(path, os.PathLike):
            continue
        try:
            os.stat(path)
        except OSError as exc:
            if exc.errno not in _UNUSABLE:
                continue
            if name in _WRITES:
                reason = exc.strerror or type(exc).__name__
                raise MigrateError(
                    f"{os.fspath(path)}: cannot write: {reason}; name another path",
                    path=os.fspath(path), reason=reason,
                ) from exc  # fmt: skip
            raise cannot_read(path, exc) from exc
        except ValueError:  # an embedded NUL byte: the command says what it makes of it
            continue
        if name in _WRITES_FILE:
            refuse_special_output(path)  # a FIFO would block the write: refused by name


def guard_paths(command: Any) -> None:
    """Make every click ``command`` (and sub-command) run :func:`check_path` over its path
    parameters before it runs (idempotent)."""
    invoke = command.invoke
    if not getattr(invoke, "guarded", False):

        def guarded(ctx: Any) -> Any:
            for name, value in ctx.params.items():
                check_path(name, value)
            return invoke(ctx)

        guarded.guarded = True  # type: ignore[attr-defined]
        command.invoke = guarded
    for sub in getattr(command, "commands", {}).values():
        guard_paths(sub)
