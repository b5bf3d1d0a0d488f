"""Meta-tests of the CLI surface: help, version, exit codes documented."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bbg_core.errors import EXIT_CODES
from tests.conftest import ROOT


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args], capture_output=True, text=True, check=False
    )


def test_version_names_readers() -> None:
    res = run("--version")
    assert res.returncode == 0
    assert res.stdout.startswith("bbg-migrate ")
    assert re.search(r"^redb reader: (c|python)$", res.stdout, re.M)


def test_unknown_command_is_usage_error() -> None:
    res = run("no-such-command")
    assert res.returncode == 2


def test_every_exit_code_is_documented_in_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    for code in EXIT_CODES:
        assert re.search(rf"^\| {code} \|", readme, re.M), code


def test_demo_runs() -> None:
    res = run("demo")
    assert res.returncode == 0, res.stderr
    assert "application_content" in res.stderr and res.stdout == ""  # human: stderr


def test_demo_fails_when_the_store_digest_differs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo is a check, not a show: a store whose digest differs must exit non-zero."""
    import migrate.probe.inspect
    from migrate.cli import main

    real = migrate.probe.inspect.inspect_bbg

    def tampered(path: Path, **kw: Any) -> dict[str, Any]:
        doc = real(path, **kw)
        return {**doc, "archive_digest_sha256": "00" * 32}

    monkeypatch.setattr(migrate.probe.inspect, "inspect_bbg", tampered)
    with pytest.raises(SystemExit) as exc:
        main(["demo"])
    assert exc.value.code == 3
    assert "demo failed: digest-mismatch" in capsys.readouterr().err


def test_demo_fails_when_the_store_is_not_healthy(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo's store must pass doctor (on Fjall: every checksum, bbg's open checks)."""
    import importlib

    from migrate.cli import main

    module = importlib.import_module("migrate.share.health")  # the package exports a function
    real = module.doctor

    def unhealthy(path: Path, **kw: Any) -> dict[str, Any]:
        doc = real(path, **kw)
        problem = {"code": "bbg-refuses-open", "detail": "injected"}
        return {**doc, "healthy": False, "problems": [problem]}

    monkeypatch.setattr(module, "doctor", unhealthy)
    with pytest.raises(SystemExit) as exc:
        main(["demo"])
    assert exc.value.code == 3
    assert "demo failed: bbg-refuses-open" in capsys.readouterr().err
