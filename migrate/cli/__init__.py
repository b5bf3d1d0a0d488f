"""The ``bbg-migrate`` command line.

Each command is a thin layer: parse, call one function of the library, render.  Exceptions
become exit codes in exactly one place: :func:`main`.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from typing import Any, NoReturn

import typer

from bbg_core.errors import EXIT_CODES, Interrupted, MigrateError, error_document
from bbg_core.files import private_creation
from migrate import api
from migrate.cli._coerce import lighten
from migrate.cli._config import hoist, options_map
from migrate.cli._help import decorate
from migrate.cli._paths import guard_paths, path_arg
from migrate.cli._render import emit_json, err
from migrate.cli._state import state

app = typer.Typer(
    name="bbg-migrate",
    help="Move legacy cyber stores into a BBG store, and share/audit BBG stores as text.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(api.version_text())
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show version and readers."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display on stderr."),
    json_progress: bool = typer.Option(
        False, "--json-progress",
        help="Progress as one JSON line per second on stderr (schemas/progress.schema.json), "
        "for wrappers; also with --json.",
    ),  # fmt: skip
    config: str = typer.Option(
        None,
        "--config",
        metavar="FILE",
        help="Options file (TOML; default ./bbg-migrate.toml when present): defaults for "
        "store, nonce, mapping, bounds... ([fleet] and [fixtures] tables for those "
        "commands); the command line wins. May also follow the command.",
    ),
    store: str = typer.Option(
        None,
        "--store",
        metavar="STORE",
        help="The BBG store directory (for commands that use one).",
        parser=path_arg,
    ),
    engine: str = typer.Option(
        None,
        "--engine",
        metavar="ENGINE",
        help="The engine of a store this command creates: fjall (the real BBG database, the "
        "default) or sqlite (an audit copy the cyber code does not open). An existing store "
        "is always opened on its own engine.",
    ),
) -> None:
    state.debug = debug or os.environ.get("BBG_MIGRATE_DEBUG") == "1"
    state.quiet, state.json_progress = quiet, json_progress
    state.store = None if store is None else str(store)
    if engine is not None:
        os.environ["BBG_MIGRATE_ENGINE"] = api.check_engine(engine) or engine


# Which module defines each command, so that a run imports only that one (start-up time:
# `detect` need not load the pipeline, the fleet or SQLite).  A word not listed here (a new
# command, --help, a typo) imports every module, so nothing depends on this table being
# complete; tests/test_startup.py checks that what it lists is right.
COMMAND_MODULES = {
    "demo": "cmd_demo", "fixtures": "cmd_fixtures", "fleet": "cmd_fleet",
    "hemera": "cmd_hemera", "detect": "cmd_inspect", "inspect": "cmd_inspect",
    "plan": "cmd_pipeline", "run": "cmd_pipeline", "seal": "cmd_pipeline",
    "stage": "cmd_pipeline", "validate": "cmd_pipeline", "activate": "cmd_pipeline",
    "discard": "cmd_pipeline", "redb": "cmd_redb", "schema": "cmd_schema", "tail": "cmd_share",
    "apply": "cmd_share", "snapshot": "cmd_share", "restore": "cmd_share",
    "backup": "cmd_share", "doctor": "cmd_share", "transfer": "cmd_transfer",
    "upgrade": "cmd_share", "nohistory": "cmd_share", "excise": "cmd_share", "mcp": "cmd_mcp",
    "imports": "cmd_pipeline", "fjall": "cmd_fjall",
}  # fmt: skip
_ROOT_VALUES = frozenset({"--store", "--config", "--engine"})  # root options that take a value


def first_word(argv: list[str]) -> str | None:
    """The command named in ``argv`` (after the root options), or None."""
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token in _ROOT_VALUES:
            skip = True
        elif token == "--":
            return None
        elif not token.startswith("-"):
            return token
    return None


def register(argv: list[str] | None = None) -> None:
    """Import the command module ``argv`` needs (every one when it is not known); each
    module adds its commands to ``app``."""
    import importlib
    import pkgutil

    wanted = COMMAND_MODULES.get(first_word(argv) or "") if argv is not None else None
    if wanted is not None and not any(a in ("--help", "-h") for a in argv or []):
        names = [wanted]
    else:
        names = [m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("cmd_")]
    for name in names:
        importlib.import_module(f"{__name__}.{name}")
    decorate(app)  # examples, placeholders (idempotent: new commands only)


# What a Ctrl-C leaves behind, by command: the pipeline keeps every completed step (a rerun
# resumes), the share writers commit all or nothing, everything else only reads.
_RESUMES = frozenset({"run", "seal", "stage", "validate", "activate", "transfer", "fleet"})
_ALL_OR_NOTHING = frozenset({"apply", "restore", "backup"})


def command_words(argv: list[str]) -> list[str]:
    """The command (and sub-command) named in ``argv``, skipping the root options."""
    register(argv)
    groups = {g.name: g.typer_instance for g in app.registered_groups if g.name}
    words: list[str] = []
    skip = False
    for token in argv:
        if skip:
            skip = False
            continue
        if token in _ROOT_VALUES:
            skip = True
            continue
        if token.startswith("-"):
            continue
        words.append(token)
        if token not in groups or len(words) == 2:
            break
    return words


def interrupted_line(argv: list[str]) -> str:
    """The one line a Ctrl-C ends with: what stopped, and what a rerun does."""
    words = command_words(argv)
    what = f"`bbg-migrate {' '.join(words)}`" if words else "bbg-migrate"
    first = words[0] if words else ""
    if first in _RESUMES:
        hint = "every completed step is kept; run the same command again to resume"
    elif first in _ALL_OR_NOTHING:
        hint = "nothing was committed; run the same command again"
    else:
        hint = "nothing was changed; run the same command again"
    return f"interrupted (Ctrl-C): {what} stopped; {hint}"


class _CtrlC:
    """While active, a SIGINT is noted (``seen``) and raised as KeyboardInterrupt as usual."""

    def __init__(self) -> None:
        self.seen = False
        self._previous: Any = None

    def _handler(self, signum: int, frame: Any) -> None:
        self.seen = True
        raise KeyboardInterrupt

    def __enter__(self) -> _CtrlC:
        try:
            self._previous = signal.signal(signal.SIGINT, self._handler)
        except ValueError:  # not the main thread: leave signals alone
            self._previous = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def _wants_json(args: list[str]) -> bool:
    """Whether the command line asks for JSON (``--json`` before any ``--``)."""
    return "--json" in args[: args.index("--")] if "--" in args else "--json" in args


def _json_failure(args: list[str], exc: BaseException | None, code: int, message: str) -> None:
    """With ``--json``, a failure is also one error document on stdout
    (``schemas/error.schema.json``); the human line stays on stderr."""
    if code == 0 or state.emitted or not _wants_json(args):
        return
    if isinstance(exc, MigrateError):
        doc = error_document(exc)
    else:
        names = {2: "usage", 130: "interrupted"}
        doc = {"code": names.get(code, "internal"), "exit_code": code, "message": message,
               "context": {}}  # fmt: skip
    try:
        emit_json(doc, "error")
    except BrokenPipeError:
        pass


def usage_line(exc: Exception) -> str:
    """click's usage error as one line (click prints four: usage, a hint, a blank line, the
    error): the error, then where the command's help is."""
    format_message = getattr(exc, "format_message", None)
    text = format_message() if format_message is not None else str(exc)
    message = " ".join(text.split())
    ctx = getattr(exc, "ctx", None)
    where = getattr(ctx, "command_path", None) or "bbg-migrate"
    return f"{message.rstrip('.')}; see `{where} -h`"


def run(argv: list[str] | None = None) -> int:
    """Run the app; every outcome becomes a documented exit code (returned), every error one
    line on stderr (and, with ``--json``, one error document on stdout).  This is the one
    place where exceptions become exit codes."""
    args = hoist(sys.argv[1:] if argv is None else list(argv))  # --config after the command
    register(args)
    state.emitted = False
    # typer turns a Ctrl-C inside a command into a bare exit code 130; remember that one came.
    ctrl_c = _CtrlC()
    failure: BaseException | None = None
    message = ""
    try:
        # With standalone_mode=False a typer.Exit(n) inside a command comes back as n.
        with ctrl_c, private_creation():  # the permission policy (bbg_core.files)
            command = typer.main.get_command(app)
            defaults = options_map(command, args)
            lighten(command)  # no pydantic for plain text values (start-up time)
            guard_paths(command)  # a path that cannot be looked up: one named error
            result = command.main(args=args, standalone_mode=False, prog_name="bbg-migrate",
                                  default_map=defaults)  # fmt: skip
        code = result if isinstance(result, int) else 0
        if code == Interrupted.exit_code and ctrl_c.seen:
            message = interrupted_line(args)
            err.print(message, markup=False, soft_wrap=True)
    except typer.Exit as exc:
        code = exc.exit_code
        if code == Interrupted.exit_code and ctrl_c.seen:
            message = interrupted_line(args)
            err.print(message, markup=False, soft_wrap=True)
    except (typer.Abort, KeyboardInterrupt):
        message = interrupted_line(args)
        err.print(message, markup=False, soft_wrap=True)
        code = Interrupted.exit_code
    except typer.TyperException as exc:
        message = usage_line(exc)
        err.print(f"error: {message}", markup=False, soft_wrap=True)
        code = 2
    except MigrateError as exc:
        if state.debug:
            traceback.print_exc()
        err.print(f"error: {exc.message}", markup=False, soft_wrap=True)
        failure, code = exc, exc.exit_code
    except BrokenPipeError:
        code = 0
    except Exception as exc:  # the last line of defence
        if state.debug:
            traceback.print_exc()
        message = f"internal error: {type(exc).__name__}: {exc}"
        err.print(f"{message} (rerun with --debug for a traceback)", markup=False)
        code = 1
    assert code in EXIT_CODES or code == 0, code
    _json_failure(args, failure, code, message or f"exit status {code}")
    return code


def main(argv: list[str] | None = None) -> NoReturn:
    """Run the CLI with ``argv`` and exit with its code (library callers, tests).  The console
    entry point is :func:`migrate.entry.main`, which also covers a Ctrl-C during start-up."""
    sys.exit(run(argv))
