"""CLI behaviour shared by the share commands: read-only readers, pipes, help, guard."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.share.conftest import run_cli
from tests.share.test_doctor import tree


def test_tail_and_snapshot_write_nothing(graph: Path) -> None:
    before = tree(graph)
    assert run_cli("--store", str(graph), "tail").returncode == 0
    assert run_cli("--store", str(graph), "snapshot").returncode == 0
    assert tree(graph) == before


@pytest.mark.parametrize("command", ["tail", "snapshot"])
def test_reader_closing_the_pipe_is_not_an_error(cell_store: Path, command: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "migrate", "--store", str(cell_store), command],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10)
    proc.stdout.close()  # like `| head -c 10`: the output is far bigger than a pipe buffer
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 0, err
    assert err == b""


@pytest.mark.parametrize("command", ["tail", "apply", "snapshot", "restore", "backup", "doctor"])
def test_every_command_has_help(command: str) -> None:
    from typer.testing import CliRunner

    from migrate.cli import app, register

    register()
    done = CliRunner().invoke(app, [command, "--help"])
    assert done.exit_code == 0
    assert "--store" in done.output


def test_default_store_guard(tmp_path: Path) -> None:
    (tmp_path / "cell.redb").write_bytes(b"x")
    done = run_cli("tail", cwd=tmp_path)
    assert done.returncode == 1 and b"refusing to open an empty default store" in done.stderr
    done = run_cli("restore", "-", cwd=tmp_path, stdin=b"")
    assert done.returncode == 1 and not (tmp_path / "bbg").exists()


def test_missing_store_is_named(tmp_path: Path) -> None:
    done = run_cli("--store", str(tmp_path / "nope"), "doctor")
    assert done.returncode == 1 and b"no BBG store here" in done.stderr


def test_share_schemas_are_valid_and_inlining_keeps_their_meaning(any_store: Path) -> None:
    import jsonschema

    import schemas
    from migrate.share import tail, write_snapshot
    from migrate.share.common import schema_problem

    for name in ("event", "snapshot-header", "snapshot-time", "snapshot-record",
                 "snapshot-footer", "doctor"):  # fmt: skip
        jsonschema.Draft202012Validator.check_schema(schemas.load(name))
    # The inlined validator used on input agrees with the schema file, good and bad lines.
    for event in tail(any_store):
        assert schema_problem(event, "event") is None
        schemas.validate(event, "event")
        broken = {**event, "asserted": [{"fact": "content", "id": "zz", "value": "00"}]}
        assert schema_problem(broken, "event") is not None
        with pytest.raises(jsonschema.ValidationError):
            schemas.validate(broken, "event")
    out = io.BytesIO()
    write_snapshot(any_store, out)
    lines = out.getvalue().splitlines()
    assert schema_problem(json.loads(lines[1]), "snapshot-time") is None
    for line in lines[2:-1]:
        assert schema_problem(json.loads(line), "snapshot-record") is None


@pytest.mark.slow
def test_refused_stream_into_a_new_store_leaves_no_store(cell_store: Path, tmp_path: Path) -> None:
    events = run_cli("--store", str(cell_store), "tail").stdout
    assert events.count(b"\n") > 2
    lines = events.splitlines(keepends=True)
    broken = b"".join(lines[:2]) + b"{not json}\n"
    target = tmp_path / "new-store"
    res = run_cli("--store", str(target), "apply", "-", stdin=broken)
    assert res.returncode == 3, res.stderr
    assert b"line 3" in res.stderr
    assert not target.exists()
    # The same good stream does create it.
    res = run_cli("--store", str(target), "apply", "-", stdin=events)
    assert res.returncode == 0, res.stderr
    assert (target / "bbg.sqlite3").exists()
