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
    """``importers.hemera``, or skip the test with the reason it is not importable."""
    try:
        module = importlib.import_module("importers.hemera")
    except ImportError as exc:  # the lead guarantees it by merge time; say so if absent
        pytest.skip(f"importers.hemera is not importable yet: {exc}")
    if not (hasattr(module, "hash") and hasattr(module, "Hasher")):
        pytest.skip("importers.hemera does not export hash and Hasher yet")
    return module
