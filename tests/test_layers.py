"""Meta-tests of the layers, bottom to top: ``bbg_core`` (errors, files, canonical JSON,
lazy loading) imports none of the others; ``hashing`` (hemera, nox) sits on it; the legacy
readers (``importers``) and ``fences`` sit on those and never import ``migrate``; ``migrate``
is on top.  The library never imports the CLI; the CLI reaches the library only through
``migrate.api`` (plus its own render helpers), and every command is a thin layer: parse,
call ``migrate.api``, render (at most 15 lines)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

CLI = ROOT / "migrate" / "cli"
MAX_COMMAND_LINES = 15


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of everything ``path`` imports (``from a import b`` gives a.b)."""
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def _sources(*parts: str) -> list[Path]:
    return sorted(p for part in parts for p in (ROOT / part).rglob("*.py"))


def _cli_may_import(name: str) -> bool:
    top = name.split(".")[0]
    if top not in ("migrate", "hashing", "importers", "fences"):
        return True  # the standard library, typer, rich, bbg_core (the error tree)
    if name == "migrate.api" or name.startswith("migrate.api."):
        return True
    # The CLI's own modules: the app, its render/state/path helpers and other commands.
    return name.startswith("migrate.cli.") or name == "migrate.cli"


def test_the_cli_reaches_the_library_only_through_the_api() -> None:
    offenders = [
        f"{p.relative_to(ROOT)}:{line}: {name}"
        for p in sorted(CLI.glob("*.py"))
        for line, name in _imports(p)
        if not _cli_may_import(name)
    ]
    assert not offenders, offenders


# What each lower package may import of the project's own top-level packages.
BELOW = {
    "bbg_core": set(),
    "hashing": {"bbg_core"},
    "importers": {"bbg_core", "hashing"},
    "fences": {"bbg_core", "hashing", "importers"},
}
PROJECT = {"bbg_core", "hashing", "importers", "fences", "migrate", "schemas"}


@pytest.mark.parametrize("package", sorted(BELOW))
def test_lower_layers_import_only_what_is_below_them(package: str) -> None:
    offenders = [
        f"{p.relative_to(ROOT)}:{line}: {name}"
        for p in _sources(package)
        for line, name in _imports(p)
        if name.split(".")[0] in PROJECT - BELOW[package] - {package}
    ]
    assert not offenders, offenders


# Inside migrate/, bottom to top: a package imports only packages of a lower rank (or its
# own).  What every verb takes; the store; the rules over five sorted tables; the read-only
# verbs; the migration; the transfer (which stages through the migration's stages); the
# tools over them; the API; the command line; the console entry point.
MIGRATE_RANKS = {
    "job": 0, "progress": 0,
    "store": 1,
    "rules": 2,
    "probe": 3,
    "pipeline": 4,
    "transfer": 5,
    "share": 6, "fleet": 6, "fixtures": 6, "demo": 6,
    "api": 7,
    "cli": 8,
    "entry": 9, "__main__": 9,
}  # fmt: skip


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _migrate_part(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if parts[0] == "migrate" and len(parts) > 1 else None


def test_every_migrate_package_has_a_rank() -> None:
    found = {p.name.removesuffix(".py") for p in (ROOT / "migrate").iterdir()
             if (p.suffix == ".py" or (p / "__init__.py").exists())} - {"__init__"}  # fmt: skip
    assert found == set(MIGRATE_RANKS)


def test_no_arrow_runs_up_inside_migrate() -> None:
    offenders = []
    for p in _sources("migrate"):
        mine = _migrate_part(_module_of(p))
        if mine is None:
            continue
        for line, name in _imports(p):
            theirs = _migrate_part(name)
            if theirs in MIGRATE_RANKS and MIGRATE_RANKS[theirs] > MIGRATE_RANKS[mine]:
                offenders.append(f"{p.relative_to(ROOT)}:{line}: {mine} imports {name}")
    assert not offenders, offenders


def test_no_import_cycle_between_modules() -> None:
    """Tarjan's strongly connected components over every import of the five packages (also
    those inside functions and under TYPE_CHECKING): none may hold two modules."""
    paths = {_module_of(p): p for p in _sources("bbg_core", "hashing", "importers", "fences",
                                                "migrate")}  # fmt: skip

    def target(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph = {
        module: {t for _, name in _imports(path) if (t := target(name)) and t != module
                 and not module.startswith(t + ".")}  # fmt: skip
        for module, path in paths.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    assert not cycles, cycles


# -- SQL lives in the store ----------------------------------------------------------------
#
# Only migrate/store/ may know that the store is SQLite: import sqlite3, or hold SQL text
# (a string that says SELECT, INSERT, UPDATE, DELETE, CREATE or PRAGMA), which is also all a
# call like ``db.execute(...)``/``db.one(...)`` can carry.  A second storage engine is then
# one more implementation of the store's methods, not a change to every package above it.
SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE|PRAGMA)\b")


def _sql_in(path: Path) -> list[str]:
    """Where ``path`` imports sqlite3 or holds SQL text (docstrings are prose, not SQL)."""
    tree = ast.parse(path.read_text("utf-8"))
    prose = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }  # fmt: skip
    found = [f"{node.lineno}: import sqlite3" for node in ast.walk(tree)
             if isinstance(node, ast.Import) and any(a.name == "sqlite3" for a in node.names)
             or isinstance(node, ast.ImportFrom) and node.module == "sqlite3"]  # fmt: skip
    found += [
        f"{node.lineno}: {node.value[:60]!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in prose and SQL.search(node.value)
    ]  # fmt: skip
    return found


def test_no_sql_outside_the_store() -> None:
    outside = {
        str(p.relative_to(ROOT)): found
        for p in _sources("bbg_core", "hashing", "importers", "fences", "migrate")
        if ROOT / "migrate" / "store" not in p.parents and (found := _sql_in(p))
    }
    assert not outside, outside


def test_the_library_never_imports_the_cli() -> None:
    entry = {ROOT / "migrate" / "entry.py", ROOT / "migrate" / "__main__.py"}
    offenders = [
        f"{p.relative_to(ROOT)}:{line}: {name}"
        for p in _sources("migrate")
        if CLI not in p.parents and p not in entry
        for line, name in _imports(p)
        if name == "migrate.cli" or name.startswith("migrate.cli.")
    ]
    assert not offenders, offenders


def _commands() -> Iterator[tuple[str, int]]:
    for path in sorted(CLI.glob("cmd_*.py")):
        for fn in ast.parse(path.read_text("utf-8")).body:
            if not isinstance(fn, ast.FunctionDef) or not any(
                isinstance(d, ast.Call) and getattr(d.func, "attr", "") == "command"
                for d in fn.decorator_list
            ):
                continue
            body = fn.body
            if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]  # the docstring is help text, not logic
            end = body[-1].end_lineno or body[-1].lineno
            yield f"{path.name}:{fn.name}", end - body[0].lineno + 1


def test_every_command_is_a_thin_layer() -> None:
    found = dict(_commands())
    assert len(found) > 20
    fat = {name: n for name, n in found.items() if n > MAX_COMMAND_LINES}
    assert not fat, f"commands longer than {MAX_COMMAND_LINES} lines: {fat}"
