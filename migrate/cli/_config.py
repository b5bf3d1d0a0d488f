"""The options file: ``bbg-migrate.toml`` in the current directory, or ``--config FILE``.

It holds the options a multi-stage run repeats (store, nonce, mapping, bounds, page size,
kind, content check), named as on the command line without the dashes::

    store = "bbg"
    nonce = "00ff..."
    max-bytes = "256GiB"
    content-check = "none"

Each value becomes the default of that option in every command that has it (click's
``default_map``), so the command line wins over the file.  ``fleet`` and ``fixtures`` read
only their own table (``[fleet]``: workers, shard, report-dir, skip-done; ``[fixtures]``:
kind = ["GLOB=KIND", ...]): a fleet's jobs take their options from its manifest, and
``fixtures check --kind`` means GLOB=KIND, not the top-level kind.  Paths (``store``,
``mapping``, ``fleet.report-dir``) are relative to the file's directory.  ``--config FILE``
may stand before or after the command (:func:`hoist` moves it to the front, where the root
option is parsed).  The file is checked against
``schemas/options.schema.json``: an unknown key or a value of the wrong type is a usage error
(exit 2) naming the file and the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bbg_core.errors import UsageError

DEFAULT = Path("bbg-migrate.toml")
PATHS = (("store",), ("mapping",), ("fleet", "report-dir"))
# Groups whose options mean other things (fixtures' --kind GLOB=KIND) or that read their
# own manifest (fleets): only their own table of the options file reaches them.
OWN_OPTIONS = frozenset({"fixtures", "fleet"})


def hoist(args: list[str]) -> list[str]:
    """``args`` with every ``--config FILE`` (before a ``--``) moved to the front: the option
    belongs to the root command, and may be written after the command too."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            rest += args[i:]
            break
        if token == "--config" and i + 1 < len(args):
            front += args[i : i + 2]
            i += 2
            continue
        (front if token.startswith("--config=") else rest).append(token)
        i += 1
    return front + rest


def _named(args: list[str]) -> Path | None:
    """The ``--config FILE`` of ``args`` (the last one, as for any option), or None."""
    found = None
    for i, token in enumerate(args):
        if token == "--":
            break
        if token == "--config" and i + 1 < len(args):
            found = Path(args[i + 1])
        elif token.startswith("--config="):
            found = Path(token.split("=", 1)[1])
    return found


def _unknown(doc: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Keys of ``doc`` (``table.key`` inside a table) the schema does not know."""
    props = schema["properties"]
    found = [key for key in doc if key not in props]
    for key, value in doc.items():
        if key in props and isinstance(value, dict) and "properties" in props[key]:
            found += [f"{key}.{sub}" for sub in _unknown(value, props[key])]
    return sorted(found)


def load(args: list[str]) -> tuple[Path, dict[str, Any]] | None:
    """The options file this command line uses and its checked values, or None."""
    path = _named(args)
    if path is None:
        if not DEFAULT.is_file():
            return None
        path = DEFAULT
    # Imported only when there is a file to read: start-up stays fast without one.
    import jsonschema

    import schemas
    from bbg_core import documents

    doc = documents.read(path, fmt="toml", hint="correct the options file or name another "
                         "with --config FILE")  # fmt: skip
    try:
        schemas.validate(doc, "options")
    except jsonschema.ValidationError as exc:
        where = ".".join(str(p) for p in exc.absolute_path)
        unknown = _unknown(doc, schemas.load("options"))
        table = schemas.load("options")
        for part in unknown[0].split(".")[:-1] if unknown else ():
            table = table["properties"][part]
        what = (
            f"unknown key {unknown[0]!r} (known: {', '.join(sorted(table['properties']))})"
            if unknown else f"key {where!r}: {exc.message}"
        )  # fmt: skip
        raise UsageError(f"{path}: {what}", path=str(path), key=unknown[0] if unknown
                         else where) from exc  # fmt: skip
    base = path.parent
    for *tables, key in PATHS:
        holder = doc
        for name in tables:
            holder = holder.get(name, {})
        if key in holder:
            holder[key] = str(base / holder[key])
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
        if sub_name in OWN_OPTIONS:  # its own table only (see the module docstring)
            sub_map = default_map(sub, values.get(sub_name, {}))
        else:
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
