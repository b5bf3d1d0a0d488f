"""The command line as an operator meets it: ``-h`` as well as ``--help``, an
example in every command's help, placeholders that say what to type, choices listed, human
sizes, exit codes and environment variables in the main help, shell completion."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bbg_core.errors import EXIT_CODES
from migrate.cli import app, register, run
from migrate.cli._help import ENVIRONMENT, commands
from migrate.cli._sizes import parse_size, show_size
from tests.conftest import ROOT
from tests.pipeline.helpers import LEGACY

register()  # every command module (a run imports only the one it needs)
WORDS = [words for words, _ in commands(app)]


def _help(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert run(list(args)) == 0
    out: str = capsys.readouterr().out
    return out


@pytest.mark.parametrize("words", WORDS)
def test_every_command_has_dash_h_and_an_example(
    words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    short = _help(capsys, *words.split(), "-h")
    assert short == _help(capsys, *words.split(), "--help")
    assert short.startswith(f"Usage: bbg-migrate {words} ")
    example = short.split("Example:\n", 1)[1]
    assert example.lstrip().startswith("bbg-migrate "), example


@pytest.mark.parametrize("words", WORDS)
def test_options_show_placeholders_not_types(
    words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _help(capsys, *words.split(), "-h")
    options = text.split("Options:\n", 1)[1].split("\n\n", 1)[0]
    bare = re.findall(r"^\s+(?:-\w, )?--[\w-]+ (<[^>|]*>)", options, re.M)
    assert not bare, f"{words}: options with a bare type as placeholder: {bare}"


def test_kind_lists_its_choices_and_refuses_others(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--kind <redb|signal-log|bbg-frame-log|text-archive>" in _help(capsys, "run", "-h")
    assert "<redb|bbg|signal-log|bbg-frame-log|text-archive>" in _help(capsys, "inspect", "-h")
    assert run(["inspect", str(LEGACY / "signals-small.log"), "--kind", "sqlite"]) == 2
    assert "'sqlite' is not one of 'redb', 'bbg'" in capsys.readouterr().err


def test_main_help_lists_every_exit_code_and_environment_variable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = _help(capsys, "-h")
    for code, meaning in EXIT_CODES.items():
        assert re.search(rf"^\s+{code}\s+{re.escape(meaning)}$", text, re.M), code
    # Every variable the code reads is documented (drift detector).
    read = set(re.findall(r"\"(BBG_[A-Z0-9_]+)\"", (ROOT / "setup.py").read_text("utf-8")))
    for part in ("migrate", "importers", "bbg_core", "fences"):
        for path in (ROOT / part).rglob("*.py"):
            read |= set(re.findall(r"\"(BBG_[A-Z0-9_]+)\"", path.read_text("utf-8")))
    assert read and read <= set(ENVIRONMENT), read - set(ENVIRONMENT)
    for name in ENVIRONMENT:
        assert re.search(rf"^\s+{name}\s+\S", text, re.M), name


@pytest.mark.parametrize(
    ("text", "value"),
    [("4096", 4096), ("256GiB", 256 * 1024**3), ("1.5GB", 1_500_000_000), ("2 MiB", 2 << 20),
     ("1k", 1000), ("0", 0), ("3TiB", 3 * 1024**4)],
)  # fmt: skip
def test_sizes_are_parsed_exactly(text: str, value: int) -> None:
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["-1", "1.3B", "12XB", "", "GiB", "1e9", "0x10", "1,000"])
def test_nonsense_sizes_are_usage_errors(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["plan", str(LEGACY / "signals-small.log"), "--max-bytes", text]) == 2
    assert "Invalid value for '--max-bytes'" in capsys.readouterr().err


def test_sizes_are_shown_and_bound_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "[default: 256GiB]" in " ".join(_help(capsys, "run", "-h").split())
    assert show_size(256 * 1024**3) == "256GiB" and show_size(1000) == "1000"
    log = str(LEGACY / "signals-small.log")  # 12600 key/value bytes once imported
    store = str(tmp_path / "bbg")
    assert run(["plan", log, "--store", store, "--max-bytes", "12KiB", "--json"]) == 3
    capsys.readouterr()
    assert run(["plan", log, "--store", store, "--max-bytes", "16KiB", "--json"]) == 0


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args], capture_output=True, text=True, check=False,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_bash_completion_script_is_generated_and_completes() -> None:
    done = _cli("--show-completion", "bash")
    assert done.returncode == 0, done.stderr
    assert "_bbg_migrate_completion()" in done.stdout
    assert "_BBG_MIGRATE_COMPLETE=complete_bash" in done.stdout
    assert done.stdout.rstrip().endswith("-F _bbg_migrate_completion bbg-migrate")
    env = {"_BBG_MIGRATE_COMPLETE": "complete_bash", "COMP_WORDS": "bbg-migrate run x --kind ",
           "COMP_CWORD": "4"}  # fmt: skip
    kinds = _cli(env=env)
    assert kinds.stdout.split() == ["redb", "signal-log", "bbg-frame-log", "text-archive"]
    env.update(COMP_WORDS="bbg-migrate imp", COMP_CWORD="1")
    assert _cli(env=env).stdout.split() == ["imports"]


def test_install_completion_writes_the_bash_script(tmp_path: Path) -> None:
    done = _cli("--install-completion", "bash", env={"HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    script = tmp_path / ".bash_completions" / "bbg-migrate.sh"
    assert "_bbg_migrate_completion" in script.read_text()
    assert str(script) in (tmp_path / ".bashrc").read_text()
