"""What the operator reads (issue 28, item 12): a usage error is one ``error:`` line (not
click's four-line box); a ``--store`` that does not exist is the ``PATH: cannot read: REASON``
rule of every input; no Python or Rust repr (``None``, ``Some(30)``) or section mark (``§``)
reaches a message; ``--max-bytes`` says what it counts; a source locked by another
bbg-migrate run is not blamed on "the old binary"."""

from __future__ import annotations

import ast
import gzip
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT


def _cli(*argv: str, cwd: Path, engine: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "200"}
    if engine is not None:
        env["BBG_MIGRATE_ENGINE"] = engine
    return subprocess.run(
        [sys.executable, "-m", "migrate", *argv], capture_output=True, text=True, cwd=cwd,
        env=env, timeout=120, check=False,
    )  # fmt: skip


def _source(work: Path) -> Path:
    src = work / "cell.redb"
    src.write_bytes(gzip.decompress((FIXTURES / "legacy" / "cell-small.redb.gz").read_bytes()))
    return src


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "{src}", "--store", "{work}/s", "--engine", "sqlite"],  # a root option, late
        ["inspect"],  # a missing argument
        ["inspect", "{src}", "--jsn"],  # an unknown option
        ["run", "{src}", "--store", "{work}/s", "--page-rows", "0"],  # a value out of range
        ["inspect", "{src}", "--kind", "nonsense"],  # not one of the choices
        ["--store", "--json", "doctor"],  # an option where a path belongs
        ["nosuchcommand"],
    ],
    ids=[
        "late-root-option",
        "missing-argument",
        "unknown-option",
        "out-of-range",
        "choice",
        "option-as-path",
        "unknown-command",
    ],  # fmt: skip
)
def test_a_usage_error_is_one_line(argv: list[str], tmp_path: Path) -> None:
    src = _source(tmp_path)
    res = _cli(*(a.format(src=src, work=tmp_path) for a in argv), cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert "Usage:" not in res.stderr and "Try '" not in res.stderr
    assert " -h`" in lines[0]  # where the help is, on the same line


@pytest.mark.parametrize(
    ("words", "engines"),
    [
        (["doctor"], ("fjall", "sqlite")),
        (["imports"], ("fjall", "sqlite")),
        (["tail"], ("sqlite",)),
        (["snapshot"], ("sqlite",)),
        (["backup", "{work}/copy"], ("sqlite",)),
        (["upgrade"], ("fjall", "sqlite")),
    ],
    ids=["doctor", "imports", "tail", "snapshot", "backup", "upgrade"],
)
def test_a_missing_store_is_cannot_read(
    words: list[str], engines: tuple[str, ...], tmp_path: Path
) -> None:
    missing = tmp_path / "nope"
    for engine in engines:
        argv = [w.format(work=tmp_path) for w in words]
        res = _cli("--store", str(missing), *argv, cwd=tmp_path, engine=engine)
        assert res.returncode == 1, res.stderr
        assert res.stderr.startswith(f"error: {missing}: cannot read: No such file or directory")
        assert len(res.stderr.splitlines()) == 1, res.stderr
        assert not missing.exists()


def _messages() -> Iterator[tuple[Path, int, str]]:
    """Every string literal (and f-string text) in migrate/ that is not a docstring."""
    for path in sorted((ROOT / "migrate").rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        docstrings = set()
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
                if isinstance(body[0].value, ast.Constant):
                    docstrings.add(id(body[0].value))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if id(node) not in docstrings:
                    yield path, node.lineno, node.value


def test_no_message_shows_a_repr_or_a_section_mark() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for path, line, text in _messages()
        if "§" in text or "Some(" in text or text in ("None", "(None)")
    ]
    assert not found, "\n".join(found)


def test_doctor_status_never_shows_none() -> None:
    from migrate.cli.cmd_share import _status

    assert _status({"status": "complete", "generation": "original"}) == "complete (original)"
    assert _status({"status": "complete", "generation": None}) == "complete"
    assert "None" not in _status({"status": None, "generation": None})


def test_an_empty_fleet_summary_has_no_empty_brackets(tmp_path: Path) -> None:
    (tmp_path / "report" / "jobs").mkdir(parents=True)
    res = _cli("fleet", "report", str(tmp_path / "report"), cwd=tmp_path)
    assert "0 jobs" in res.stderr and "()" not in res.stderr, res.stderr


def test_max_bytes_help_says_it_counts_keys_and_values(tmp_path: Path) -> None:
    res = _cli("run", "-h", cwd=tmp_path)
    text = " ".join(res.stdout.split())
    assert "--max-bytes" in text and "key and value bytes" in text, text


HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(120)
"""


def _hold(path: Path, argv0: str) -> subprocess.Popen[str]:
    """A process named ``argv0`` holding the source's lock."""
    proc = subprocess.Popen(
        [argv0, "-c", HOLD, str(path)], executable=sys.executable, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


@pytest.mark.parametrize("engine", ["fjall", "sqlite"])
@pytest.mark.parametrize("argv0", ["bbg-migrate", "legacy-cyber-node"])
def test_a_locked_source_names_its_holder(argv0: str, engine: str, tmp_path: Path) -> None:
    src = _source(tmp_path)
    holder = _hold(src, argv0)
    try:
        res = _cli("run", str(src), "--store", str(tmp_path / "bbg"), cwd=tmp_path,
                   engine=engine)  # fmt: skip
    finally:
        holder.kill()
        holder.communicate()
    assert res.returncode == 11, res.stderr
    assert len(res.stderr.splitlines()) == 1, res.stderr
    assert f"pid {holder.pid}" in res.stderr
    if argv0 == "bbg-migrate":
        assert "another bbg-migrate run" in res.stderr and "old binary" not in res.stderr
    else:
        assert "old binary" in res.stderr
