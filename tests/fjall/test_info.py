"""``info`` and ``check`` of every real keyspace agree with what the fixture generator
recorded (journals: batches, items, seqnos, torn tail; levels; rows per partition), and the
CLI prints them with the documented exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import schemas
from migrate.store.fjall import open_keyspace
from migrate.store.fjall import report as fjreport
from tests.conftest import ROOT
from tests.fjall.conftest import CASES, expected

JOURNAL_FIELDS = ("name", "role", "bytes", "batches", "items", "seqnos", "data_bytes",
                  "torn_batch", "after_data", "after_data_bytes")  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_info_agrees_with_the_fixture(case: str, cases_dir: Path) -> None:
    exp = expected(case)
    with open_keyspace(cases_dir / case) as ks:
        doc = fjreport.info(ks)
    schemas.validate(doc, "fjall-info")
    assert [{k: j[k] for k in JOURNAL_FIELDS} for j in doc["journals"]] == [
        {k: j[k] for k in JOURNAL_FIELDS} for j in exp["journals"]
    ]
    assert doc["torn_tail"] == exp["torn_tail"]
    if exp["torn"] is not None:
        (torn,) = [j["torn"] for j in doc["journals"] if j["torn"]]
        assert torn["batch_start"] == exp["torn"]["batch_start"]
        assert torn["batch_seqno"] == exp["torn"]["batch_seqno"]
        assert torn["batch_items"] == exp["torn"]["batch_items"]
        assert torn["cut_at"] == exp["torn"]["cut_at"]
        assert torn["where"] == exp["torn"]["where"]
    assert doc["partition_count"] == exp["partition_count"]
    assert doc["rows"] == exp["rows_total"]
    for name, part in exp["partitions"].items():
        got = doc["partitions"][name]
        assert got["rows"] == part["rows"], name
        assert got["levels"] == part["levels"], name
        assert got["segments"] == part["segments_on_disk"], name
        assert got["segment_bytes"] == part["segment_bytes"], name


@pytest.mark.parametrize("case", CASES)
def test_check_passes_every_real_keyspace(case: str, cases_dir: Path) -> None:
    with open_keyspace(cases_dir / case) as ks:
        doc = fjreport.check(ks)
    schemas.validate(doc, "fjall-check")
    assert doc["ok"] and doc["problems"] == [] and doc["first_problem"] is None


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "migrate", *args], capture_output=True,
                          text=True, check=False, cwd=ROOT)  # fmt: skip


def test_cli_dump_info_check(cases_dir: Path) -> None:
    path = str(cases_dir / "torn-tail")
    res = _cli("fjall", "info", path, "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["torn_tail"] is True
    res = _cli("fjall", "check", path, "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["ok"]
    res = _cli("fjall", "dump", path)
    assert res.returncode == 0 and res.stdout.count("\n") == 500


def test_cli_check_names_the_first_problem(copy_case) -> None:  # type: ignore[no-untyped-def]
    path = copy_case("one-segment")
    seg = path / "partitions" / "data" / "segments" / "1"
    data = bytearray(seg.read_bytes())
    data[5000] ^= 0x40  # inside the second data block's stored bytes
    seg.write_bytes(bytes(data))
    res = _cli("fjall", "check", str(path), "--json")
    assert res.returncode == 3
    doc = json.loads(res.stdout)
    assert not doc["ok"]
    first = doc["problems"][0]
    assert first["path"].endswith("segments/1") and first["what"] == "data block"
    assert first["offset"] == 4276 and "checksum mismatch" in first["message"]
    assert "Traceback" not in res.stderr
    assert "damaged data block at offset 4276" in res.stderr
    res = _cli("fjall", "dump", str(path))
    assert res.returncode == 3 and "Traceback" not in res.stderr
    assert "segments/1: damaged data block at offset 4276: block checksum mismatch" in res.stderr
