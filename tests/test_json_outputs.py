"""Every ``--json`` output has a schema.  ``emit_json`` validates each document
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


def _emitters() -> tuple[set[str], dict[str, ast.FunctionDef]]:
    """The CLI functions (``module.name``) that call emit_json, directly or through other
    CLI functions (names resolved through each module's own definitions and its
    ``from migrate.cli.X import name [as alias]`` imports), and every command by name."""
    calls: dict[str, set[str]] = {}
    commands: dict[str, ast.FunctionDef] = {}
    for path in sorted(CLI.glob("*.py")):
        module = path.stem
        tree = ast.parse(path.read_text("utf-8"))
        local = {n.name: f"{module}.{n.name}" for n in tree.body if isinstance(n, ast.FunctionDef)}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("migrate.cli."):
                source = node.module.rsplit(".", 1)[1]  # type: ignore[union-attr]
                local.update({a.asname or a.name: f"{source}.{a.name}" for a in node.names})
        local["emit_json"] = "EMIT"
        for fn in tree.body:
            if not isinstance(fn, ast.FunctionDef):
                continue
            calls[f"{module}.{fn.name}"] = {
                local[c.func.id] for c in ast.walk(fn)
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in local
            }  # fmt: skip
            if any(getattr(d, "func", None) is not None and getattr(d.func, "attr", "") == "command"
                   for d in fn.decorator_list):  # fmt: skip
                commands[f"{module}.{fn.name}"] = fn
    emitting = {"EMIT"}
    while True:
        more = {name for name, callees in calls.items() if callees & emitting} - emitting
        if not more:
            return emitting, commands
        emitting |= more


def test_every_command_with_json_reaches_emit_json() -> None:
    """Every command that takes --json prints its document through emit_json (which
    validates it against its schema), directly or through the CLI's own helpers."""
    emitting, commands = _emitters()
    with_json = [name for name, fn in commands.items()
                 if any(a.arg == "as_json" for a in fn.args.args)]  # fmt: skip
    assert len(with_json) > 20
    silent = [name for name in with_json if name not in emitting]
    assert not silent, f"commands with --json that never reach emit_json: {silent}"


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
