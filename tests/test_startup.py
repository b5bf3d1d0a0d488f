"""Start-up.  ``--version`` and ``detect`` import only what they need (which
modules, not how long: times are measured by benchmarks/startup.py); a run imports only the
command module it names, and the table saying which module that is stays right."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.cli import COMMAND_MODULES, first_word
from tests.conftest import FIXTURES, ROOT, gunzip_to

HEAVY = ("typer", "rich", "sqlite3", "_sqlite3", "jsonschema", "click", "migrate.cli",
         "migrate.pipeline", "migrate.fleet", "migrate.share", "migrate.store")  # fmt: skip


PROBE = """
import json, runpy, sys
sys.argv = ["bbg-migrate", *sys.argv[1:]]
try:
    runpy.run_module("migrate", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
sys.__stdout__.write("\\n" + json.dumps(sorted(sys.modules)) + "\\n")
"""


def imported(*args: str) -> set[str]:
    """Every module loaded by ``bbg-migrate ARGS`` by the time it exits."""
    res = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True,
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    found: set[str] = set(json.loads(res.stdout.splitlines()[-1]))
    return found


def test_version_imports_no_cli_no_sqlite_no_rich() -> None:
    found = imported("--version")
    assert "migrate.probe.versions" in found
    assert not {m for m in found if m.split(".")[0] in HEAVY or m in HEAVY}


# What detection needs: the sniffing modules, not the readers behind them.
SNIFFING = ("importers.frame_log.dialect", "importers.text_archive.sniff", "importers.redb.sniff")
READERS = (
    "importers.frame_log.decode", "importers.frame_log.encode", "importers.frame_log.report",
    "importers.signal_log.decode", "importers.signal_log.encode", "importers.signal_log.report",
    "importers.text_archive.reader", "importers.text_archive.report", "importers.redb.reader",
    "importers.redb.backend",
    "hashing.hemera",
)  # fmt: skip


@pytest.mark.parametrize("file", ["fixtures/legacy/signals-small.log", "README.md"])
def test_detect_imports_typer_but_not_the_rest(file: str) -> None:
    found = imported("detect", file)
    assert "typer" in found and "migrate.probe.detect" in found
    assert "migrate.cli.cmd_inspect" in found and "migrate.cli.cmd_fleet" not in found
    unwanted = {"rich", "sqlite3", "_sqlite3", "jsonschema", "migrate.pipeline", "migrate.fleet",
                "migrate.share", "migrate.store"}  # fmt: skip
    assert not (found & unwanted), found & unwanted
    # typer 0.29 converts values through pydantic (typer._adapters): not for a path argument
    # (migrate/cli/_coerce.py); and detection reads the sniffing modules, not the readers.
    assert not {m for m in found if m.split(".")[0] == "pydantic" or m == "typer._adapters"}
    assert set(SNIFFING) <= found
    assert not {m for m in found if m.startswith(READERS)}, sorted(found)


def test_hemera_imports_neither_pydantic_nor_jsonschema() -> None:
    # A file list and a default --counter need no pydantic conversion (migrate/cli/_coerce.py);
    # parsing hex takes no mapping-file validator (migrate/job/mapping.py).
    found = imported("hemera", "README.md")
    assert "hashing.hemera" in found and "migrate.probe.hashes" in found
    assert not {m for m in found if m.split(".")[0] in ("pydantic", "jsonschema", "schemas")}


LIGHT_PROBE = """
import sys
import migrate.cli as cli
if sys.argv[1] == "typer":
    cli.lighten = lambda command: None
sys.exit(cli.run(sys.argv[2:]))
"""


@pytest.mark.parametrize("argv", [
    ["detect", "fixtures/legacy/signals-small.log", "--json"],
    ["detect", "no/such/file"],
    ["detect"],
    ["detect", "-h"],
    ["--store", "--json", "detect", "README.md"],
    ["--store=./s", "--config", "no-such.toml", "detect", "README.md"],
    ["inspect", "--kind", "nope", "README.md"],
    ["inspect", "--kind", "text-archive", "--json", "fixtures/legacy/signals-small.log"],
    ["plan", "README.md", "--max-bytes", "12XB"],
    ["plan", "README.md", "--kind", "bbg"],
    ["hemera", "README.md", "LICENSE"],
    ["hemera", "--tree", "leaf", "--counter", "3", "--root", "README.md"],
    ["hemera", "--tree", "leaf", "--counter", "-1", "README.md"],
    ["hemera", "--tree", "leaf", "--counter", "x", "README.md"],
    ["hemera", "--tree", "node", "00" * 32, "11" * 32],
    ["fixtures", "check", "--kind", "redb", "--kind", "nope", "fixtures/legacy"],
    ["plan", "README.md", "--content-check", "none"],
    ["plan", "README.md", "--content-check", "None"],
    ["plan", "README.md", "--kind", "text-archive", "--json"],
    ["inspect", "--content-check", "nope", "README.md"],
    ["tail", "--store", "no/such/store"],
    ["tail", "--poll", "0.5", "--store", "no/such/store"],
    ["tail", "--poll", "soon", "--store", "no/such/store"],
])  # fmt: skip
def test_light_conversion_is_typers(argv: list[str]) -> None:
    """Output, errors and exit codes are the same with the pydantic-free conversion as with
    typer's own (migrate/cli/_coerce.py)."""
    got = []
    for mode in ("light", "typer"):
        res = subprocess.run(
            [sys.executable, "-c", LIGHT_PROBE, mode, *argv], capture_output=True, text=True,
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"},
        )  # fmt: skip
        got.append((res.returncode, res.stdout, res.stderr))
    assert got[0] == got[1]
    assert "Traceback" not in got[0][2]


def test_lazy_packages_export_what_they_declare() -> None:
    """The reader packages, the store and share import their modules on first use
    (bbg_core.lazy): every name in
    ``__all__`` resolves, and the lazy table names the same things as the imports type
    checkers read."""
    import importlib

    for name in ("importers.signal_log", "importers.frame_log", "importers.text_archive",
                 "importers.redb", "migrate.store", "migrate.share"):
        package = importlib.import_module(name)
        for export in package.__all__:
            assert getattr(package, export) is not None
        tree = ast.parse((ROOT / name.replace(".", "/") / "__init__.py").read_text("utf-8"))
        typed = {(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                 for a in n.names if n.module and n.module.startswith(name)}  # fmt: skip
        assert {alias for _, alias in typed} == set(package.__all__)
        for module, export in typed:
            assert getattr(importlib.import_module(module), export) is getattr(package, export)


@pytest.mark.parametrize("word", sorted(COMMAND_MODULES))
def test_command_table_names_the_defining_module(word: str) -> None:
    path = ROOT / "migrate" / "cli" / f"{COMMAND_MODULES[word]}.py"
    names = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "command":
            names.update(a.value for a in node.args if isinstance(a, ast.Constant))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_typer":
            names.update(k.value.value for k in node.keywords
                         if k.arg == "name" and isinstance(k.value, ast.Constant))  # fmt: skip
    assert word in names


def test_first_word_skips_root_options() -> None:
    assert first_word(["--store", "run", "doctor"]) == "doctor"
    assert first_word(["--debug", "-q", "detect", "x"]) == "detect"
    assert first_word(["--version"]) is None


def _loaded(found: set[str], heavy: tuple[str, ...]) -> set[str]:
    """The modules of ``found`` that are, or are inside, one of ``heavy``."""
    return {m for m in found if any(m == h or m.startswith(h + ".") for h in heavy)}


# What each common command leaves unloaded (modules, not times): the pipeline, the transfer,
# the share verbs, the Fjall engine, pydantic and jsonschema are imported by the commands
# that use them (migrate/api.py, the lazy packages of bbg_core.lazy, migrate/cli/_coerce.py).
NOT_FOR_HELP = ("pydantic", "jsonschema", "migrate.pipeline", "migrate.transfer",
                "migrate.fleet.run", "migrate.share.apply", "migrate.share.backup",
                "migrate.share.copies", "migrate.store.fjall", "lz4")  # fmt: skip
NOT_FOR_A_LEGACY_RUN = ("pydantic", "typer._adapters", "migrate.transfer", "migrate.share",
                        "migrate.fleet")  # fmt: skip
NOT_FOR_INSPECT_REDB = ("pydantic", "jsonschema", "migrate.pipeline", "migrate.transfer",
                        "migrate.share", "migrate.store.fjall", "lz4")  # fmt: skip
NOT_FOR_TAIL = ("pydantic", "jsonschema", "migrate.pipeline", "migrate.transfer",
                "migrate.share.apply", "migrate.share.backup", "migrate.share.copies",
                "migrate.share.restore")  # fmt: skip


def test_help_loads_no_pipeline_transfer_or_share_verbs() -> None:
    found = imported("--help")
    assert "migrate.cli.cmd_share" in found and "migrate.cli.cmd_pipeline" in found
    assert not _loaded(found, NOT_FOR_HELP), sorted(_loaded(found, NOT_FOR_HELP))


def test_legacy_commands_load_neither_the_transfer_nor_pydantic(tmp_path: Path) -> None:
    cell = gunzip_to(FIXTURES / "legacy" / "cell-small.redb.gz", tmp_path)
    store = tmp_path / "store"
    found = imported("run", str(cell), "--store", str(store), "--content-check", "codec")
    assert "migrate.pipeline" in found and "migrate.cli.cmd_pipeline" in found
    assert not _loaded(found, NOT_FOR_A_LEGACY_RUN), sorted(_loaded(found, NOT_FOR_A_LEGACY_RUN))
    found = imported("inspect", str(cell))  # (--json output is checked by its schema)
    assert "migrate.probe.inspect" in found
    assert not _loaded(found, NOT_FOR_INSPECT_REDB), sorted(_loaded(found, NOT_FOR_INSPECT_REDB))
    found = imported("tail", "--store", str(store))
    assert "migrate.share.tailing" in found
    assert not _loaded(found, NOT_FOR_TAIL), sorted(_loaded(found, NOT_FOR_TAIL))
    # a BBG store's report still has the transfer's section (read on first use)
    found = imported("inspect", str(store), "--json")
    assert "migrate.transfer.report" in found
