"""The benchmark store generator (tests/support/cell_store.py, used by
benchmarks/gen_cell_store.py): a small generated cell store is read identically by our
reader and the real redb crate, is a valid legacy cell store for our checker (and for the
reference checker, when it is there), and migrates with ``run``."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from importers.redb import open_redb
from importers.redb.dump import dump_lines
from tests.pipeline.helpers import cli
from tests.support.cell_store import TABLES, generate
from tests.support.tools import reference_program


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    path = tmp_path_factory.mktemp("gen") / "cell.redb"
    summary = generate(path, writes=400, namespaces=6, seed=17)
    assert summary.writes == 400 and summary.namespaces == 6
    return path, summary.rows


def test_shape(store: tuple[Path, dict[str, int]]) -> None:
    path, rows = store
    with open_redb(path) as db:
        assert [t.name for t in db.tables()] == sorted(TABLES)
        assert {t.name: t.length for t in db.tables()} == rows
        codecs = {value[0] for _, value in db.iter_table("application_content")}
    assert codecs == {0, 1}  # Blobs and nox Data rows
    assert rows["application_history"] == rows["application_requests"] == 400
    assert rows["application_heads"] == 6
    assert rows["application_content"] > 400 and rows["application_unique_claims"] > 0


def test_deterministic(tmp_path: Path, store: tuple[Path, dict[str, int]]) -> None:
    again = tmp_path / "again.redb"
    generate(again, writes=400, namespaces=6, seed=17)
    digest = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (store[0], again)]
    assert digest[0] == digest[1]
    assert not list(tmp_path.glob("*.spool")) and not list(tmp_path.glob("*.tmp"))


def test_rows_target(tmp_path: Path) -> None:
    summary = generate(tmp_path / "n.redb", rows=3000, namespaces=4, seed=1)
    assert 3000 <= summary.total_rows < 3000 + 20  # stops at the write that reaches it


def test_inspect_says_conversion_valid_and_run_migrates(
    tmp_path: Path, store: tuple[Path, dict[str, int]]
) -> None:
    path, rows = store
    res = cli("inspect", str(path), "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["valid"] and doc["conversion_valid"] and doc["errors"] == []
    assert doc["content_check"] == "codec" and doc["blob_rows_with_id_mismatch"] == 0
    assert doc["data_id_scheme"] == "nox-model-b" and doc["data_rows_with_id_mismatch"] == 0
    res = cli("run", str(path), "--store", str(tmp_path / "store"), "--json")
    assert res.returncode == 0, res.stderr
    receipt = json.loads(res.stdout)
    assert receipt["counts"]["rows"] == rows
    assert receipt["counts"]["namespaces"] == 6
    assert receipt["digests"]["staged_archive_sha256"] == doc["archive_digest_sha256"]


def run_reference(name: str, *args: str) -> str:
    """The standard output of a successful run of reference program ``name`` (the test is
    skipped where the program is not there)."""
    program = reference_program(name)
    if program is None:
        pytest.skip(f"reference program {name} not available (a development tool)")
    res = subprocess.run([str(program), *args], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_the_real_crate_reads_it_identically(store: tuple[Path, dict[str, int]]) -> None:
    stdout = run_reference("redb-oracle-v4", "dump", str(store[0]))
    with open_redb(store[0]) as db:
        assert stdout.splitlines() == list(dump_lines(db))


def test_the_reference_checker_finds_it_valid(store: tuple[Path, dict[str, int]]) -> None:
    stdout = run_reference("cell-fixtures", "inspect", str(store[0]))
    lines = stdout.splitlines()
    # Problems come first, one per line, then the verdict: there must be none.
    assert lines[0] == "valid: true", stdout
    assert lines[1].startswith("data_id_scheme: nox-model-b (")
    assert lines[1].endswith(" Data rows, 0 with a wrong id)")


def test_same_bytes_without_the_c_hemera(tmp_path: Path) -> None:
    """The pure-Python hemera twin generates the same file (slowly: a tiny store)."""
    import os
    import sys

    code = (
        "import sys; from tests.support.cell_store import generate; "
        "generate(sys.argv[1], writes=25, namespaces=3, seed=5)"
    )
    env = {**os.environ, "BBG_MIGRATE_PURE": "1"}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    res = subprocess.run([sys.executable, "-c", code, str(tmp_path / "py.redb")], env=env,
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert res.returncode == 0, res.stderr
    generate(tmp_path / "c.redb", writes=25, namespaces=3, seed=5)
    assert (tmp_path / "py.redb").read_bytes() == (tmp_path / "c.redb").read_bytes()
