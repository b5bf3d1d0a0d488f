"""Meta-tests that catch drift: schemas are valid, every command has help, docs list them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import jsonschema
import pytest

import schemas
from migrate.cli import app, register
from tests.conftest import ROOT
from tests.test_cli_basics import run

register()  # every command module (a run imports only the one it needs)


@pytest.mark.parametrize("name", schemas.names())
def test_every_schema_is_valid_and_accepts_its_examples(name: str) -> None:
    schema = schemas.load(name)
    jsonschema.validators.validator_for(schema).check_schema(schema)
    assert schema.get("$id") in (name, f"https://bbg-migrate/schemas/{name}.schema.json")
    examples = schema.get("examples", [])
    assert examples, f"schemas/{name}.schema.json has no examples"
    for example in examples:
        schemas.validate(example, name)


def _commands() -> list[list[str]]:
    out: list[list[str]] = []
    for info in app.registered_commands:
        out.append([info.name or info.callback.__name__])  # type: ignore[union-attr]
    for group in app.registered_groups:
        sub = group.typer_instance
        assert sub is not None and group.name is not None
        for info in sub.registered_commands:
            out.append([group.name, info.name or info.callback.__name__])  # type: ignore[union-attr]
    return out


@pytest.mark.parametrize("words", _commands(), ids=" ".join)
def test_every_command_has_help_and_is_in_the_readme(words: list[str]) -> None:
    res = run(*words, "--help")
    assert res.returncode == 0, res.stderr
    assert "Usage:" in res.stdout
    readme = (ROOT / "README.md").read_text()
    pattern = r"bbg-migrate (--store \S+ )?" + r"[^`|]*".join(re.escape(w) for w in words)
    assert re.search(pattern, readme), f"README does not mention `bbg-migrate {' '.join(words)}`"


def _silent_returns(path: Path) -> list[str]:
    """Test functions that ``return`` early when an optional fixture set is absent."""
    found = []
    tree = ast.parse(path.read_text("utf-8"))
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef) or not fn.name.startswith("test_"):
            continue
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.If)
                and "None" in ast.unparse(node.test)
                and any(isinstance(s, ast.Return) for s in node.body)
            ):
                found.append(f"{path.name}::{fn.name}: `if {ast.unparse(node.test)}: return`")
    return found


def test_no_test_passes_by_returning_early() -> None:
    """A test that cannot do its work must say so (``pytest.skip``), not pass silently."""
    offenders = [
        hit for path in sorted((ROOT / "tests").rglob("test_*.py")) for hit in _silent_returns(path)
    ]
    assert not offenders, offenders


def test_no_merge_conflict_markers_in_tracked_files() -> None:
    """A merge that committed its conflict markers (it happened to CHANGELOG.md) is caught here."""
    import subprocess

    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if listed.returncode != 0:  # an sdist has no git: the files it carries were checked in CI
        pytest.skip("not a git checkout: tracked files unknown")
    marker = re.compile(rb"^(<{7} |>{7} )", re.MULTILINE)  # not ======= (a Markdown heading)
    found = []
    for name in listed.stdout.decode().split("\0"):
        path = ROOT / name
        if not name or not path.is_file() or path.suffix in (".gz", ".redb", ".bin", ".sqlite3"):
            continue
        data = path.read_bytes()
        for match in marker.finditer(data):
            line = data[: match.start()].count(b"\n") + 1
            found.append(f"{name}:{line}")
    assert not found, "merge conflict markers: " + ", ".join(found)
