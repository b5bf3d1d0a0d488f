"""JSON Schemas for every document bbg-migrate reads or writes, and the store's SQL.

``validate(doc, "name")`` checks ``doc`` against ``schemas/name.schema.json``.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

import jsonschema


@functools.cache
def load(name: str) -> dict[str, Any]:
    """The schema ``name`` (file ``name.schema.json`` in this package)."""
    text = resources.files(__package__).joinpath(f"{name}.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
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
    schema = load(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    checker: jsonschema.protocols.Validator = cls(schema, registry=_registry())
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
