"""doctor: healthy stores pass, each kind of damage is reported, and it never writes."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import schemas
from fences import generations
from migrate.share import doctor
from migrate.store import DB_NAME, imports, open_store
from tests.share.conftest import run_cli


def tree(path: Path) -> dict[str, str]:
    """Every file under ``path`` with the SHA-256 of its bytes."""
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def _raw(store: Path, sql: str, params: tuple[object, ...] = ()) -> None:
    # Damage is made with plain SQLite on purpose: the store API refuses to make it.
    db = sqlite3.connect(store / DB_NAME, isolation_level=None)
    try:
        db.execute(sql, params)
    finally:
        db.close()


def test_healthy_report_matches_schema_and_inspect(any_store: Path) -> None:
    from migrate.probe.inspect import inspect_bbg

    report = doctor(any_store)
    schemas.validate(report, "doctor")
    assert report["healthy"] is True and report["problems"] == []
    assert report["sqlite"]["integrity"] == ["ok"]
    inspected = inspect_bbg(any_store)
    assert report["tables"]["archive_digest_sha256"] == inspected["archive_digest_sha256"]


def test_cell_store_facts(cell_store: Path) -> None:
    report = doctor(cell_store)
    # cell-small: 105 content rows, 50 of them commits; the other 55 are what the legacy
    # writes legitimately carry (test_doctor_content.py): no true orphan, no warning.
    assert report["orphan_content"]["count"] == 0
    assert report["content_classes"]["commit_items"] + report["content_classes"][
        "birth_content"] == 55
    assert report["warnings"] == []
    assert report["namespaces"] == 3
    assert report["generation"] == {
        "status": "complete", "generation": "original", "highest_reached": "original"
    }  # fmt: skip


def test_graph_store_fence_and_generation(graph: Path) -> None:
    report = doctor(graph)
    assert len(report["fences"]) == 1 and report["fences"][0]["reason"] == "test"
    assert report["generation"]["generation"] == "neuron-v1"
    # every follow() commit carries one extra record: 4 commits x 3 namespaces
    assert report["orphan_content"]["count"] == 12


def test_read_only_on_closed_store(any_store: Path) -> None:
    before = tree(any_store)
    assert not (any_store / f"{DB_NAME}-wal").exists()
    doctor(any_store)
    assert tree(any_store) == before  # no -wal/-shm created, no byte changed


def test_read_only_while_a_writer_holds_the_wal(any_store: Path) -> None:
    with open_store(any_store, maintenance=True) as st:
        st.info()  # the writer's connection keeps -wal/-shm in place
        main = (any_store / DB_NAME).read_bytes()
        files = sorted(p.name for p in any_store.iterdir())
        assert f"{DB_NAME}-wal" in files
        report = doctor(any_store)
        assert report["healthy"]
        assert (any_store / DB_NAME).read_bytes() == main
        assert sorted(p.name for p in any_store.iterdir()) == files


def test_link_damage_is_a_problem_and_exit_3(cell_store: Path) -> None:
    _raw(cell_store, "DELETE FROM application_requests WHERE key = "
         "(SELECT min(key) FROM application_requests)")  # fmt: skip
    report = doctor(cell_store)
    assert not report["healthy"]
    assert "missing-receipt" in {p["code"] for p in report["problems"]}
    done = run_cli("--store", str(cell_store), "doctor", "--json")
    assert done.returncode == 3
    doc = json.loads(done.stdout)
    schemas.validate(doc, "doctor")
    assert doc["healthy"] is False


def test_sqlite_corruption_is_reported(graph: Path) -> None:
    db = graph / DB_NAME
    con = sqlite3.connect(db)
    try:
        size = con.execute("PRAGMA page_size").fetchone()[0]
        root = con.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'application_history'"
        ).fetchone()[0]
    finally:
        con.close()
    data = bytearray(db.read_bytes())
    data[(root - 1) * size] = 0x07  # not a b-tree page type
    db.write_bytes(bytes(data))
    report = doctor(graph)
    schemas.validate(report, "doctor")
    assert not report["healthy"]
    assert report["problems"][0]["code"] == "sqlite-integrity"
    assert report["tables"]["archive_digest_sha256"] is None
    done = run_cli("--store", str(graph), "doctor")
    assert done.returncode == 3, done.stderr
    assert b"NOT healthy" in done.stderr


def test_import_in_progress_is_a_warning_stray_staging_a_problem(graph: Path) -> None:
    with open_store(graph, maintenance=True) as st, st.transaction() as tx:
        imports.begin_import(tx, "left")
        imports.stage_rows(tx, "left", "application_content", [(b"\x07" * 32, b"\x00x")])
    report = doctor(graph)
    assert report["healthy"]
    assert "import-in-progress" in {w["code"] for w in report["warnings"]}
    assert report["leftovers"]["staging_imports"] == ["left"]
    assert report["leftovers"]["staged_rows"] == 1
    # The import is over but its staged rows stayed behind: a real leftover.
    _raw(graph, "UPDATE bbg_import_v1_imports SET state = 'discarded' WHERE import_id = 'left'")
    report = doctor(graph)
    assert not report["healthy"]
    assert [p["code"] for p in report["problems"]] == ["staged-leftovers"]
    assert report["leftovers"]["stray_staged_rows"] == 1


def test_non_generation_status_marker_is_a_problem(graph: Path) -> None:
    with open_store(graph, maintenance=True) as st, st.transaction() as tx:
        generations.set_transitional(tx, "copying")
    report = doctor(graph)
    assert not report["healthy"]
    assert report["generation"] == {
        "status": "copying", "generation": None, "highest_reached": "neuron-v1"
    }  # fmt: skip
    assert [p["code"] for p in report["problems"]] == ["unreadable-status"]
