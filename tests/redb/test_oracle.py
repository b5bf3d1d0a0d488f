"""Every fixture against the real crate: dumps byte-identical to the oracle, header facts and
table lists equal to the manifest, and the source file untouched by reading."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from importers.redb import BACKEND, backend, open_redb
from importers.redb.dump import dump_lines
from tests.redb.cases import Case, all_cases

CASES = all_cases()
READABLE = [c for c in CASES if not c.corrupt]


def _dump(path: Path) -> bytes:
    with open_redb(path) as db:
        return "".join(line + "\n" for line in dump_lines(db)).encode("utf-8")


def test_backend_is_the_one_selected(redb_backend: str, redb_file: Callable[[Case], Path]) -> None:
    # The process default: C when it was built, unless BBG_MIGRATE_PURE=1 at import.
    assert BACKEND == ("python" if backend.c_impl is None or backend.PURE else "c")
    with open_redb(redb_file(READABLE[0])) as db:
        assert db.backend == redb_backend
    with open_redb(redb_file(READABLE[0]), backend="python") as db:
        assert db.backend == "python"


def test_local_subset_covers_the_brief() -> None:
    local = {(c.version, c.name) for c in CASES if c.origin == "local"}
    formats = {c.manifest["header"]["file_format_version"] for c in CASES if c.origin == "local"}
    assert formats == {1, 2, 3}
    for version in ("1.5.2", "2.6.3", "3.1.3", "4.2.0"):
        for name in (
            "types",
            "multimap",
            "two_phase",
            "nondurable_crash",
            "corrupt_commit_slot",
            "corrupt_leaf_flip",
            "corrupt_recovery_required",
            "corrupt_truncated",
        ):
            assert (version, name) in local, (version, name)
    names = {name for _, name in local}
    assert {"btree_multilevel", "large_values", "page_size_1024", "multi_region"} <= names


@pytest.mark.parametrize("case", READABLE, ids=lambda c: c.id)
def test_dump_matches_oracle(case: Case, redb_file: Callable[[Case], Path]) -> None:
    path = redb_file(case)
    before = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    assert _dump(path) == case.oracle()
    after = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    assert after == before


@pytest.mark.parametrize("case", READABLE, ids=lambda c: c.id)
def test_header_and_tables_match_manifest(case: Case, redb_file: Callable[[Case], Path]) -> None:
    facts = case.manifest["header"]
    with open_redb(redb_file(case)) as db:
        h = db.header
        tables = db.tables()
    assert h.magic_ok is facts["magic_ok"] is True
    assert h.god_byte == facts["god_byte"]
    assert h.primary_slot == facts["primary_slot"]
    assert h.recovery_required == facts["recovery_required"]
    assert h.two_phase_commit == facts["two_phase_commit"]
    assert h.page_size == facts["page_size"]
    assert h.file_size == facts["file_size"]
    assert h.region_header_pages == facts["region_header_pages"]
    assert h.region_max_data_pages == facts["region_max_data_pages"]
    assert h.slot_versions[h.primary_slot] == facts["file_format_version"]
    assert h.format_version in (1, 2, 3)
    # The oracle's table lines (the manifest lists no tables for corruption variants).
    heads = [json.loads(line) for line in case.oracle().decode().splitlines()]
    expected = [
        (t["table"], t["kind"], t["key_type"], t["value_type"], t["len"])
        for t in heads
        if "kind" in t
    ]
    if case.manifest["tables"]:
        assert expected == [
            (t["name"], t["kind"], t["key_type"], t["value_type"], t["len"])
            for t in case.manifest["tables"]
        ]
    got = [(t.name, t.kind, t.key_type, t.value_type, t.length) for t in tables]
    assert got == expected
    assert [t.name.encode() for t in tables] == sorted(t.name.encode() for t in tables)
    for t in tables:
        assert (t.root_page is None) == (t.length == 0)


@pytest.mark.parametrize("case", [c for c in READABLE if c.name == "types"], ids=lambda c: c.id)
def test_iteration_is_a_stream(case: Case, redb_file: Callable[[Case], Path]) -> None:
    with open_redb(redb_file(case)) as db:
        it = db.iter_table("u64_u64")
        # A lazy iterator (a generator, or itertools.chain over batches), never a list.
        assert isinstance(it, Iterator) and not isinstance(it, Sequence)
        first = next(it)
        assert isinstance(first[0], bytes) and len(first[0]) == 8
        with pytest.raises(KeyError):
            db.iter_table("no such table")


def test_recovery_flag_reported(redb_file: Callable[[Case], Path]) -> None:
    crash = [c for c in READABLE if c.name == "nondurable_crash"]
    assert crash
    for case in crash:
        with open_redb(redb_file(case)) as db:
            assert db.header.recovery_required
            assert db.header.layout_recalculated


def test_scan_memory_is_bounded(tmp_path: Path, redb_backend: str) -> None:
    """A full scan of a 48 MiB file (12,288 leaves) keeps the process's peak RSS within a
    few pages, whichever backend reads it: measured by the kernel in a child process, so C
    allocations and touched mappings count too (tracemalloc sees neither)."""
    from tests.redb import synth
    from tests.rss import rss_growth

    path = tmp_path / "big.redb"
    path.write_bytes(synth.large_table_file(12_288))
    size = path.stat().st_size
    assert size > 48 << 20
    growth = rss_growth(
        "from importers.redb import open_redb",
        f"""
        with open_redb({str(path)!r}) as db:
            n = 0
            for t in db.tables():
                for key, value in db.iter_table(t.name):
                    n += 1
        assert n == 12_288, n
        """,
    )
    # One leaf's pairs at a time plus interpreter noise: far below the file's size.
    assert growth < 8 << 20, (growth, size)
