"""Issue 13.6: every ``--json`` output has a schema.  ``emit_json`` validates each document
before printing it, so it is enough that every call names a shipped schema and that every
command with a ``--json`` option prints through it; ``bbg-migrate schema`` prints them."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

import schemas
from tests.conftest import ROOT

CLI = ROOT / "migrate" / "cli"


def _calls(name: str) -> list[tuple[str, ast.Call]]:
    found = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == name:
                found.append((f"{path.name}:{node.lineno}", node))
    return found


def test_every_json_document_names_a_shipped_schema() -> None:
    known = set(schemas.names())
    calls = _calls("emit_json")
    assert len(calls) > 15
    for where, call in calls:
        assert len(call.args) == 2, f"{where}: emit_json without a schema"
        arg = call.args[1]
        if isinstance(arg, ast.Constant):
            assert arg.value in known, f"{where}: no schema named {arg.value!r}"


def test_share_documents_have_their_schemas() -> None:
    for kind in ("apply", "restore", "backup", "doctor", "error", "progress"):
        assert kind in schemas.names()


def test_every_command_with_json_reaches_emit_json() -> None:
    """A command module that offers --json also prints through emit_json."""
    for path in sorted(CLI.glob("cmd_*.py")):
        text = path.read_text("utf-8")
        if '"--json"' in text:
            assert "emit_json(" in text or "report(" in text, path.name


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "migrate", *args], capture_output=True,
                          text=True, check=False, cwd=ROOT)  # fmt: skip


def test_schema_command_prints_and_lists() -> None:
    res = cli("schema", "error")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == schemas.load("error")
    listed = cli("schema")
    assert listed.returncode == 0 and listed.stdout == ""
    names = [line.split()[0] for line in listed.stderr.splitlines()]
    assert names == schemas.names()


@pytest.mark.parametrize("name", ["nope", "../receipt"])
def test_unknown_schema_is_a_usage_error(name: str) -> None:
    res = cli("schema", name)
    assert res.returncode == 2
    assert res.stderr.startswith(f"error: no schema named {name!r}; known: ")
