"""The ``bbg-migrate`` command line.

Each command is a thin layer: parse, call one function of the library, render.  Exceptions
become exit codes in exactly one place: :func:`main`.
"""

from __future__ import annotations

import os
import sys
import traceback

import typer

from bbg_core.errors import EXIT_CODES, Interrupted, MigrateError
from migrate import __version__
from migrate.cli._paths import path_arg
from migrate.cli._render import err
from migrate.cli._state import state

app = typer.Typer(
    name="bbg-migrate",
    help="Move legacy cyber stores into a BBG store, and share/audit BBG stores as text.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def version_text() -> str:
    """``bbg-migrate --version``: the package version and which readers are active."""
    from migrate import backends

    lines = [f"bbg-migrate {__version__}"]
    lines += [f"{name}: {impl}" for name, impl in backends.active().items()]
    return "\n".join(lines)


def _version(value: bool) -> None:
    if value:
        typer.echo(version_text())
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show version and readers."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
    store: str = typer.Option(
        None,
        "--store",
        help="The BBG store directory (for commands that use one).",
        parser=path_arg,
    ),
) -> None:
    state.debug = debug or os.environ.get("BBG_MIGRATE_DEBUG") == "1"
    state.store = None if store is None else str(store)


def _register() -> None:
    """Import every command module; each one adds its commands to ``app``."""
    import importlib
    import pkgutil

    for mod in pkgutil.iter_modules(__path__):
        if mod.name.startswith("cmd_"):
            importlib.import_module(f"{__name__}.{mod.name}")


_register()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app and map every outcome to a documented exit code."""
    try:
        # With standalone_mode=False a typer.Exit(n) inside a command comes back as n.
        result = app(args=argv, standalone_mode=False)
        code = result if isinstance(result, int) else 0
    except typer.Exit as exc:
        code = exc.exit_code
    except typer.Abort:
        err.print("interrupted")
        code = Interrupted.exit_code
    except typer.TyperException as exc:
        show = getattr(exc, "show", None)
        if show is not None:
            show()
        else:
            err.print(f"error: {exc.format_message()}", markup=False)
        code = 2
    except MigrateError as exc:
        if state.debug:
            traceback.print_exc()
        err.print(f"error: {exc.message}", markup=False, soft_wrap=True)
        code = exc.exit_code
    except KeyboardInterrupt:
        err.print("interrupted")
        code = Interrupted.exit_code
    except BrokenPipeError:
        code = 0
    except Exception as exc:  # noqa: BLE001 - the last line of defence
        if state.debug:
            traceback.print_exc()
        err.print(
            f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for a traceback)",
            markup=False,
        )
        code = 1
    assert code in EXIT_CODES or code == 0, code
    sys.exit(code)
