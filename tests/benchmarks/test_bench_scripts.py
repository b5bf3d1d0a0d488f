"""The issue-17 benchmark scripts run end to end on tiny generated stores (what they print
is measured, not asserted: no timed assertions).  Proves ``benchmarks/pipeline.py --rows N``
generates its store once into a cache outside the repository and reuses it, and that
``--existing`` measures `run` into a non-empty store; and that ``benchmarks/rss_sizes.py``
reports the peak RSS of `run` into a new and into an existing store for each source size."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def _bench(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return res


@pytest.mark.slow
def test_pipeline_rows_generates_once_into_the_cache_and_reuses_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _bench("pipeline.py", "--rows", "1500", "--cache", str(cache), "--existing")
    assert "generating 1,500 rows" in first.stderr
    out = first.stdout
    for line in ("copy: cp + fsync", "baseline:", "fjall-raw:", "run (fjall engine):",
                 "run (sqlite engine):", "existing (fjall engine):", "existing (sqlite engine):",
                 "ratio run (fjall engine)/baseline", "time over our unchecked Fjall copy"):
        assert line in out, out
    assert "stages: seal" in out and "preflight" in out and "validate" in out
    stores = sorted(p.name for p in cache.glob("*.redb"))
    assert len(stores) == 2  # the measured store and the existing destination's first import
    assert any(name.startswith("cells-r1500-") for name in stores)
    mtimes = {p: p.stat().st_mtime_ns for p in cache.iterdir()}
    again = _bench("pipeline.py", "--rows", "1500", "--cache", str(cache), "--no-new")
    assert "generating" not in again.stderr  # reused: same rows, seed and generator
    assert {p: p.stat().st_mtime_ns for p in cache.iterdir()} == mtimes
    assert "baseline:" in again.stdout and "run (" not in again.stdout
    other = _bench("pipeline.py", "--rows", "1500", "--seed", "7", "--cache", str(cache),
                   "--no-new")  # fmt: skip
    assert "generating 1,500 rows" in other.stderr  # another seed is another store


@pytest.mark.slow
def test_rss_sizes_reports_peak_rss_of_both_paths_against_the_goal(tmp_path: Path) -> None:
    res = _bench("rss_sizes.py", "--sizes", "0.5,1", "--cache", str(tmp_path))
    out = res.stdout
    new = [line for line in out.splitlines() if line.strip().startswith("new ")]
    existing = [line for line in out.splitlines() if line.strip().startswith("existing ")]
    assert len(new) == len(existing) == 2, out
    assert "new: peak RSS largest/smallest source" in out
    assert "existing: peak RSS largest/smallest source" in out
    assert "goal <= 150 MB" in out and "load average" in out
    # Two sizes and the existing destination's first import, each generated once.
    assert len(list(tmp_path.glob("*.redb"))) == 3
    only = _bench("rss_sizes.py", "--sizes", "0.5", "--cache", str(tmp_path), "--modes",
                  "existing").stdout  # fmt: skip
    assert "CPU s" in only and "existing: peak RSS" in only and "new: peak RSS" not in only


@pytest.mark.slow
def test_legacy_run_prints_staged_against_one_pass(tmp_path: Path) -> None:
    res = _bench("legacy_run.py", "--lines", "40", "--events", "30", "--cache", str(tmp_path))
    out = res.stdout
    for kind in ("archive", "frame log"):
        assert f"{kind} " in out, out
    for engine in ("fjall", "sqlite"):
        assert f"{engine} ratio staged/one pass:" in out, out
    assert "receipts byte-identical: NO" not in out and "receipts byte-identical: yes" in out
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".jsonl", ".log"]  # runs removed


def test_change_id_prints_every_case_against_its_baseline() -> None:
    """benchmarks/change_id.py: each case against the same run's baseline, one id per case."""
    out = _bench("change_id.py", "--rows", "2000", "--small", "5", "--repeat", "1").stdout
    for case, modes in (("put_many", ("baseline", "held", "spilled")),
                        ("activate", ("baseline", "held")), ("one-row", ("baseline", "held"))):
        for mode in modes:
            assert any(line.split()[:2] == [case, mode] and "of baseline" in line
                       for line in out.splitlines()), out  # fmt: skip
    assert "hash only" in out


@pytest.mark.slow
def test_bloom_spill_compares_spilled_with_held_hashes() -> None:
    res = _bench("bloom_spill.py", "--rows", "300000")  # more keys than bloom.SPILL_KEYS
    out = res.stdout
    assert "  held: 300,000 rows" in out and " spill: 300,000 rows" in out, out
    assert "spilled/held: CPU" in out and "same files: yes" in out, out


@pytest.mark.slow
def test_existing_size_runs_a_small_source_into_growing_stores(tmp_path: Path) -> None:
    res = _bench("existing_size.py", "--cache", str(tmp_path), "--rows", "300",
                 "--history-rows", "600,1500", "--repeat", "1")  # fmt: skip
    out = res.stdout
    assert re.search(r"into +a new store: .* baseline", out), out
    for rows in ("600", "1,500"):
        assert re.search(rf"into +a store of {rows} rows: .*x of new", out), out
    assert out.count("x of new") == 2 and "same rows read in every receipt: yes" in out, out


def test_redb_read_reports_each_way_of_reading_without_a_native_program(tmp_path: Path) -> None:
    """No reference program given: the reader's three ways (per entry, batches with lengths
    summed, batches delivered) are each measured on the same entries, and no ratio is made."""
    import gzip
    import json

    source = ROOT / "fixtures" / "redb" / "4.2.0" / "btree_multilevel.redb.gz"
    redb = tmp_path / "basic.redb"
    redb.write_bytes(gzip.decompress(source.read_bytes()))
    doc = json.loads(_bench("redb_read.py", "--file", str(redb), "--json").stdout)
    assert "native" not in doc and doc["ratios"] == {}
    for backend in ("c", "python"):
        if backend not in doc:
            continue  # the C path is not built here (the pure-Python path says so)
        got = doc[backend]
        assert got["entries"] > 0 and got["key_value_bytes"] > 0, got
        for how in ("iter", "batches", "deliver"):
            assert got[f"{how}_s"] > 0 and got[f"{how}_entries_per_s"] > 0, (how, got)
