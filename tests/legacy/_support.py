"""Where the legacy fixtures are, and hemera when it is importable."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, shared_fixtures

LOCAL = FIXTURES / "legacy"


def legacy_files(pattern: str) -> list[Path]:
    """Every local fixture matching ``pattern``, plus the shared set's others (e.g. medium).

    Files present in both places are taken from the local copy once.
    """
    found = {p.name: p for p in sorted(LOCAL.glob(pattern))}
    shared = shared_fixtures()
    if shared is not None:
        for p in sorted((shared / "legacy").glob(pattern)):
            found.setdefault(p.name, p)
    return [found[name] for name in sorted(found)]


def fixture_params(pattern: str) -> list[Any]:
    """``legacy_files`` as pytest params with readable ids."""
    return [pytest.param(p, id=p.name) for p in legacy_files(pattern)]


def expected(path: Path) -> dict[str, Any]:
    """The ``<name>.expected.json`` beside a fixture."""
    doc: dict[str, Any] = json.loads(Path(f"{path}.expected.json").read_text("utf-8"))
    return doc


def hemera_module() -> Any:
    """``hashing.hemera`` (part of the package: a missing module is a failure, not a skip)."""
    return importlib.import_module("hashing.hemera")
