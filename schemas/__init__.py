"""JSON Schemas for every document bbg-migrate reads or writes, and the store's SQL.

``validate(doc, "name")`` checks ``doc`` against ``schemas/name.schema.json``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jsonschema

# "Hex bytes" patterns (``^([0-9a-f]{2})+$`` and kin): Python's ``re`` keeps backtracking
# state for every repetition of the group, so a 32 MiB value would cost gigabytes.  They
# are checked in linear time and constant memory instead, with the same meaning.
_HEX_BYTES = re.compile(r"\^\((?:\?:)?\[0-9a-f\]\{2\}\)(\+|\*|\{(\d+),(\d+)\})\$")
_HEX_DIGITS = re.compile(r"[0-9a-f]*")


def _hex_bytes_check(pattern: str) -> Any:
    """A linear check equal to ``pattern`` if it is a hex-bytes pattern, else None."""
    m = _HEX_BYTES.fullmatch(pattern)
    if m is None:
        return None
    low, high = {"+": (1, None), "*": (0, None)}.get(
        m.group(1), (int(m.group(2) or 0), int(m.group(3) or 0))
    )

    def check(text: str) -> bool:
        n, odd = divmod(len(text), 2)
        return (
            not odd and n >= low and (high is None or n <= high)
            and _HEX_DIGITS.fullmatch(text) is not None
        )  # fmt: skip

    return check


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    import jsonschema

    if not validator.is_type(instance, "string"):
        return
    check = _hex_bytes_check(pattern)
    ok = check(instance) if check is not None else re.search(pattern, instance) is not None
    if not ok:
        shown = instance if len(instance) <= 80 else instance[:80] + "..."
        yield jsonschema.ValidationError(f"{shown!r} does not match {pattern!r}")


def linear(cls: Any) -> Any:
    """The validator class ``cls`` with hex-bytes patterns checked in linear time."""
    import jsonschema

    return jsonschema.validators.extend(cls, validators={"pattern": _pattern})


def text(name: str) -> str:
    """The text of schema ``name`` (file ``name.schema.json`` in this package)."""
    return resources.files(__package__).joinpath(f"{name}.schema.json").read_text("utf-8")


@functools.cache
def load(name: str) -> dict[str, Any]:
    """The schema ``name`` (file ``name.schema.json`` in this package)."""
    schema: dict[str, Any] = json.loads(text(name))
    return schema


@functools.cache
def _registry() -> Any:
    """Every shipped schema by its ``$id``, so one schema can ``$ref`` another by name."""
    from referencing import Registry, Resource

    return Registry().with_resources(
        (load(n)["$id"], Resource.from_contents(load(n))) for n in names()
    )


@functools.cache
def validator(name: str) -> jsonschema.protocols.Validator:
    """A checked validator for schema ``name`` (``$ref`` to other schemas by ``$id`` works)."""
    import jsonschema

    schema = load(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    checker: jsonschema.protocols.Validator = linear(cls)(schema, registry=_registry())
    return checker


def validate(doc: Any, name: str) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``doc`` matches schema ``name``."""
    validator(name).validate(doc)


def sql(name: str) -> str:
    """The SQL script ``name.sql`` shipped in this package."""
    return resources.files(__package__).joinpath(f"{name}.sql").read_text("utf-8")


def names() -> list[str]:
    """Every schema shipped, by name."""
    return sorted(
        p.name.removesuffix(".schema.json")
        for p in resources.files(__package__).iterdir()
        if p.name.endswith(".schema.json")
    )
