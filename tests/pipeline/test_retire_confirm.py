"""``run --retire-source`` shows which file moves where and asks on a terminal (tested through
a pseudo-terminal); ``--yes`` confirms from a script; with no terminal and no ``--yes`` it is a
usage refusal (exit 2) naming ``--yes`` that does nothing."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from tests.pipeline.helpers import LEGACY, cli, tree_state

LOG = LEGACY / "signals-small.log"


def _source(tmp_path: Path) -> Path:
    src = tmp_path / "signals.log"
    src.write_bytes(LOG.read_bytes())
    return src


def _on_a_terminal(args: list[str], answer: bytes, cwd: Path) -> tuple[int, str]:
    """Run ``bbg-migrate ARGS`` with stdin, stdout and stderr on a pseudo-terminal; type
    ``answer`` once the prompt shows; returns the exit code and everything it printed."""
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "migrate", *args], stdin=child, stdout=child, stderr=child,
        cwd=cwd, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "300"},
    )  # fmt: skip
    os.close(child)
    seen = b""
    answered = False
    deadline = time.monotonic() + 120  # a hang guard, not a timing assertion
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(main, 4096)
                except OSError:  # EIO: the child closed the terminal
                    chunk = b""
                if not chunk and proc.poll() is not None:
                    break
                seen += chunk
            if not answered and b"[y/N]" in seen:
                os.write(main, answer)
                answered = True
            if proc.poll() is not None and not ready:
                break
        code = proc.wait(timeout=60)
    finally:
        os.close(main)
        if proc.poll() is None:
            proc.kill()
    return code, seen.decode("utf-8", "replace").replace("\r\n", "\n")


def test_the_prompt_shows_the_move_and_yes_retires(tmp_path: Path) -> None:
    src = _source(tmp_path)
    code, text = _on_a_terminal(
        ["run", str(src), "--store", str(tmp_path / "bbg"), "--retire-source"], b"y\n", tmp_path
    )
    assert code == 0, text
    flat = " ".join(text.split())
    assert f"--retire-source retires {src}:" in flat
    assert f"{tmp_path / '.signals.log.retiring'}/source" in flat
    assert f"the bytes stay, unchanged, in {src / 'source'}" in flat
    assert "Migrate, then retire the source? [y/N]" in flat
    assert src.is_dir() and (src / "source").read_bytes() == LOG.read_bytes()
    assert (src / "retirement.json").is_file()


def test_no_at_the_prompt_does_nothing(tmp_path: Path) -> None:
    src = _source(tmp_path)
    before = tree_state(tmp_path)
    code, text = _on_a_terminal(
        ["run", str(src), "--store", str(tmp_path / "bbg"), "--retire-source"], b"n\n", tmp_path
    )
    assert code == 2, text
    assert "the retirement was not confirmed; nothing was done" in " ".join(text.split())
    assert tree_state(tmp_path) == before  # no store created, the source untouched


def test_no_terminal_and_no_yes_is_a_usage_refusal(tmp_path: Path) -> None:
    src = _source(tmp_path)
    before = tree_state(tmp_path)
    done = cli("run", str(src), "--store", str(tmp_path / "bbg"), "--retire-source")
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"error: --retire-source moves {src} into a retirement directory and needs a "
        "confirmation, but stdin/stderr are not a terminal: pass --yes to confirm it from a "
        "script; nothing was done\n"
    )
    assert tree_state(tmp_path) == before


def test_yes_retires_from_a_script(tmp_path: Path) -> None:
    src = _source(tmp_path)
    done = cli("run", str(src), "--store", str(tmp_path / "bbg"), "--retire-source", "--yes")
    assert done.returncode == 0, done.stderr
    assert "[y/N]" not in done.stderr and src.is_dir()
    listed = cli("--store", str(tmp_path / "bbg"), "imports", "--json")
    [imp] = json.loads(listed.stdout)["imports"]
    assert (imp["state"], imp["stage"]) == ("retired", "retired")
