"""Help texts kept out of the commands: an example for every command (its epilog), clear
placeholders for every option, and the main help's exit codes and environment variables.

:func:`decorate` applies them to the app once every command is registered; the meta-tests
(tests/test_cli_help.py) check that no command lacks an example and no option shows a bare
type (``<str>``) as its placeholder.
"""

from __future__ import annotations

import inspect
from typing import Any, Literal

import typer
from typer.models import ArgumentInfo, OptionInfo

from bbg_core.errors import EXIT_CODES

# Choices shown in the help and checked by the parser.
LegacyKind = Literal["redb", "signal-log", "bbg-frame-log", "text-archive"]
AnyKind = Literal["redb", "bbg", "signal-log", "bbg-frame-log", "text-archive"]
ContentCheck = Literal["codec", "none"]

# The placeholder of each option (by its first name), where the type alone says too little.
OPTION_METAVARS = {
    "--store": "STORE", "--nonce": "HEX", "--subject": "HEX", "--map": "ORIGIN=NONCE",
    "--mapping": "FILE", "--import-nonce": "HEX", "--pages": "N", "--max-rows": "N",
    "--max-bytes": "SIZE", "--max-namespaces": "N", "--page-rows": "N", "--since": "TX",
    "--output": "FILE", "--poll": "SECONDS",
    "--max-line": "SIZE", "--workers": "N", "--shard": "I/N", "--report-dir": "DIR",
    "--manifest": "FILE", "--html": "FILE", "--table": "TABLE", "--counter": "N",
    "--content": "ID", "--namespace": "NS",
    "--config": "FILE",
}  # fmt: skip
# Arguments by parameter name (default: the name in capitals).
ARGUMENT_METAVARS = {
    "dirs": "DIR", "namespaces": "NS", "files": "INPUT", "source_store": "SOURCE_STORE"
}  # fmt: skip

# One example per command (by its words); the first line of each is a shell command.
EXAMPLES = {
    "demo": "bbg-migrate demo",
    "hemera": "bbg-migrate hemera cell.redb\n  printf abc | bbg-migrate hemera -",
    "detect": "bbg-migrate detect ./cell.redb --json",
    "inspect": "bbg-migrate inspect ./cell.redb\n  bbg-migrate inspect empty.log --kind "
    "signal-log --json",
    "transfer": "bbg-migrate transfer ./old-bbg --store ./new-bbg",
    "plan": "bbg-migrate plan ./cell.redb --store ./bbg --max-bytes 256GiB",
    "run": "bbg-migrate run ./cell.redb --store ./bbg\n  bbg-migrate run ./signals.log "
    "--store ./bbg --retire-source --yes --json",
    "seal": "bbg-migrate seal ./cell.redb --store ./bbg",
    "stage": "bbg-migrate stage ./cell.redb --store ./bbg --pages 100",
    "validate": "bbg-migrate validate ./cell.redb --store ./bbg",
    "activate": "bbg-migrate activate ./cell.redb --store ./bbg --json > receipt.json",
    "discard": "bbg-migrate --store ./bbg discard IMPORT_ID   (ids: bbg-migrate --store ./bbg "
    "imports)",
    "imports": "bbg-migrate --store ./bbg imports --json",
    "schema": "bbg-migrate schema error > error.schema.json",
    "tail": "bbg-migrate --store ./bbg tail --since 100 > events.ndjson",
    "apply": "bbg-migrate --store ./replica apply events.ndjson",
    "snapshot": "bbg-migrate --store ./bbg snapshot > bbg.snapshot",
    "restore": "bbg-migrate --store ./restored restore bbg.snapshot",
    "backup": "bbg-migrate --store ./bbg backup ./bbg-backup",
    "doctor": "bbg-migrate --store ./bbg doctor --json",
    "upgrade": "bbg-migrate --store ./bbg upgrade",
    "nohistory": "bbg-migrate --store ./bbg nohistory NS --dry-run",
    "excise": "bbg-migrate --store ./bbg excise --content ID --dry-run --json",
    "mcp": "bbg-migrate --store ./bbg mcp",
    "fixtures check": "bbg-migrate fixtures check fixtures/legacy --json",
    "fleet plan": "bbg-migrate fleet plan fleet.toml --shard 0/4",
    "fleet run": "bbg-migrate fleet run fleet.toml --workers 4 --report-dir reports",
    "fleet report": "bbg-migrate fleet report reports --manifest fleet.toml --html report.html",
    "redb tables": "bbg-migrate redb tables ./cell.redb",
    "redb dump": "bbg-migrate redb dump ./cell.redb --table application_heads",
    "redb scan": "bbg-migrate redb scan ./cell.redb --json",
    "fjall dump": "bbg-migrate fjall dump ./bbg > rows.jsonl",
    "fjall info": "bbg-migrate fjall info ./bbg --json",
    "fjall check": "bbg-migrate fjall check ./bbg",
}

# Every environment variable the tool reads (tests/test_cli_help.py greps the sources).
ENVIRONMENT = {
    "BBG_MIGRATE_DEBUG": "1: tracebacks on errors, like --debug",
    "BBG_MIGRATE_PURE": "1: use the pure-Python readers and hemera, not the C extensions",
    "BBG_MIGRATE_HEMERA_THREADS": "threads hemera may use for big batches and files hashed at "
    "once (default: the cores)",
    "BBG_MIGRATE_ENGINE": "fjall|sqlite: the engine of a store a command creates, like --engine",
    "BBG_MIGRATE_CLOCK": "<µs>: a fixed clock for ledger times (tests, conformance fixtures)",
    "BBG_MIGRATE_STORE_ID": "a fixed id for a new store (tests, conformance fixtures)",
    "BBG_MIGRATE_NO_EXT": "1 at install time: do not build the C extensions",
    "BBG_REDB_CFLAGS": "extra C compiler flags when the redb extension is built",
    "BBG_REDB_LDFLAGS": "extra linker flags when the redb extension is built",
    "NO_COLOR": "set: no colours in human output",
}


def root_epilog() -> str:
    """Exit codes and environment variables, for the main help."""
    codes = "\n".join(f"  {code:<4} {what}" for code, what in sorted(EXIT_CODES.items()))
    env = "\n".join(f"  {name:<27} {what}" for name, what in ENVIRONMENT.items())
    return (
        "\b\nExit codes:\n" + codes + "\n\n\b\nEnvironment:\n" + env
        + "\n\nDocs: docs/operations.md (exit codes, backup, receipts), docs/api.md."
    )  # fmt: skip


def _infos(callback: Any) -> list[tuple[str, Any]]:
    """(parameter name, OptionInfo/ArgumentInfo) of a command callback."""
    out = []
    for name, param in inspect.signature(callback).parameters.items():
        # (Annotated[..., typer.Option(...)] under postponed annotations is rebuilt at every
        # evaluation: such options name their placeholder themselves, as in cmd_hemera.)
        found = param.default
        if isinstance(found, OptionInfo | ArgumentInfo):
            out.append((name, found))
    return out


def _placeholders(callback: Any) -> None:
    for name, info in _infos(callback):
        if info.metavar is not None:
            continue
        if isinstance(info, OptionInfo):
            names = [d for d in info.param_decls or () if d in OPTION_METAVARS]
            info.metavar = OPTION_METAVARS[names[0]] if names else None
        else:
            info.metavar = ARGUMENT_METAVARS.get(name, name.upper())


def commands(app: typer.Typer) -> list[tuple[str, Any]]:
    """(words, CommandInfo) of every command, sub-commands of groups included."""
    found = [(info.name or "", info) for info in app.registered_commands]
    for group in app.registered_groups:
        if group.typer_instance is not None and group.name:
            found += [(f"{group.name} {info.name}", info)
                      for info in group.typer_instance.registered_commands]  # fmt: skip
    return found


def decorate(app: typer.Typer) -> None:
    """Examples, placeholders and the main epilog on ``app`` (call once)."""
    app.info.epilog = root_epilog()
    for words, info in commands(app):
        example = EXAMPLES.get(words)
        if example is not None and info.epilog is None:
            info.epilog = "\b\nExample:\n  " + example
        _placeholders(info.callback)
