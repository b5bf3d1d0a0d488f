"""The options file: ``bbg-migrate.toml`` in the current directory, or ``--config FILE``.

It holds the options a multi-stage run repeats (store, nonce, mapping, bounds, page size,
kind, content check), named as on the command line without the dashes::

    store = "bbg"
    nonce = "00ff..."
    max-bytes = "256GiB"
    content-check = "none"

Each value becomes the default of that option in every command that has it (click's
``default_map``), so the command line wins over the file.  Paths (``store``, ``mapping``)
are relative to the file's directory.  The file is checked against
``schemas/options.schema.json``: an unknown key or a value of the wrong type is a usage error
(exit 2) naming the file and the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bbg_core.errors import UsageError
from bbg_core.files import cannot_read

DEFAULT = Path("bbg-migrate.toml")
PATHS = ("store", "mapping")
# Groups whose options mean other things (fixtures' --kind GLOB=KIND) or that read their
# own manifest (fleets): the options file does not reach them.
OWN_OPTIONS = frozenset({"fixtures", "fleet"})


def _named(args: list[str]) -> Path | None:
    """The ``--config FILE`` of ``args`` (a root option: before the command)."""
    for i, token in enumerate(args):
        if token == "--config" and i + 1 < len(args):
            return Path(args[i + 1])
        if token.startswith("--config="):
            return Path(token.split("=", 1)[1])
    return None


def load(args: list[str]) -> tuple[Path, dict[str, Any]] | None:
    """The options file this command line uses and its checked values, or None."""
    path = _named(args)
    if path is None:
        if not DEFAULT.is_file():
            return None
        path = DEFAULT
    # Imported only when there is a file to read: start-up stays fast without one.
    import tomllib

    import jsonschema

    import schemas
    try:
        with path.open("rb") as fh:
            doc = tomllib.load(fh)
    except OSError as exc:
        raise cannot_read(path, exc) from exc
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}", path=str(path)) from exc
    try:
        schemas.validate(doc, "options")
    except jsonschema.ValidationError as exc:
        where = ".".join(str(p) for p in exc.absolute_path)
        unknown = sorted(set(doc) - set(schemas.load("options")["properties"]))
        what = (
            f"unknown key {unknown[0]!r} (known: "
            f"{', '.join(sorted(schemas.load('options')['properties']))})"
            if unknown else f"key {where!r}: {exc.message}"
        )  # fmt: skip
        raise UsageError(f"{path}: {what}", path=str(path), key=unknown[0] if unknown
                         else where) from exc  # fmt: skip
    base = path.parent
    for key in PATHS:
        if key in doc:
            doc[key] = str(base / doc[key])
    return path, doc


def default_map(command: Any, values: dict[str, Any]) -> dict[str, Any]:
    """click's ``default_map`` for the app's click ``command``: every value as the default
    of the option of that name in every command (and group) that has one."""
    out: dict[str, Any] = {}
    for param in command.params:
        name = next((o[2:] for o in param.opts if o.startswith("--")), None)
        if name in values:
            out[param.name] = values[name]
    for sub_name, sub in getattr(command, "commands", {}).items():
        if sub_name in OWN_OPTIONS:
            continue
        sub_map = default_map(sub, values)
        if sub_map:
            out[sub_name] = sub_map
    return out


def options_map(command: Any, args: list[str]) -> dict[str, Any] | None:
    """The ``default_map`` for running the app's click ``command`` with ``args`` (None
    without an options file)."""
    found = load(args)
    if found is None:
        return None
    return default_map(command, found[1])
