"""Mapped origins must be neuron's legacy cell records (issue 27 item 2).

Expected behaviour transcribed from cyberia-to/neuron:

* ``engine/src/legacy.rs`` ``inspect`` @fd24e768: the head's record is read first
  (``records::snapshot_at``), then every history entry: index 0 ``r.record(h.commit,
  "cell/birth/1", 7)``, index i > 0 ``r.record(h.commit, "cell/commit/1", 10)`` with
  ``r.reference(f[0])? != origin || r.uint(f[1])? != h.index || Some(r.reference(f[2])?) !=
  previous`` → ``Error::Conflict``;
* ``model/src/data.rs`` ``Reader::pair`` @dbebea3f: ``if content.blob ||
  content.bytes.len() != 64 { return Err(Error::InvalidData) }`` -- a plain Blob history is
  refused with ``Data(InvalidData)`` (``From<DataError>``: engine/src/lib.rs @fd24e768).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from migrate.rules.cell_records import check_origin
from migrate.rules.sources import RedbSource
from tests.pipeline.helpers import cell_fixtures, cli, expected, unpack
from tests.support.cell_records import write_store
from tests.support.stores import dump
from tests.support.subject import SUBJECT, activate_subject

SMALL = next(p for p in cell_fixtures() if p.name == "cell-small.redb.gz")


def _mapped(verb: str, src: Path, store: Path, namespaces: list[str]) -> list[str]:
    args = [verb, str(src), "--store", str(store), "--subject", SUBJECT, "--json"]
    for i, ns in enumerate(namespaces):
        args += ["--map", f"{ns}={i + 1:064x}"]
    return args


def _refusal(src: Path, ns: str, head_index: int) -> dict[str, object] | None:
    with RedbSource(src) as s:
        return check_origin(s.lookup, bytes.fromhex(ns), head_index)


def test_cell_records_read_as_neuron_reads_them(tmp_path: Path) -> None:
    src = tmp_path / "cell.redb"
    names = write_store(src, origins=2, commits=3)
    assert all(_refusal(src, ns, 3) is None for ns in names)


def test_a_commit_that_claims_another_index_is_a_conflict(tmp_path: Path) -> None:
    src = tmp_path / "cell.redb"
    names = write_store(src, origins=2, commits=3, break_at=(1, 2))
    assert _refusal(src, names[0], 3) is None or _refusal(src, names[1], 3) is None
    broken = [r for r in (_refusal(src, ns, 3) for ns in names) if r is not None]
    assert len(broken) == 1
    assert broken[0]["index"] == 2 and broken[0]["reason"] == "Conflict"
    assert "index field is not 2" in str(broken[0]["detail"])


def test_blob_history_is_refused_with_invalid_data(tmp_path: Path) -> None:
    """cell-small's namespaces are plain Blob histories: neuron's reader refuses the head's
    record (a Blob is never a pair): ``Data(InvalidData)``, named with origin and index."""
    src = unpack(SMALL, tmp_path / "src")
    namespaces = expected(SMALL)["namespaces"]
    for ns, facts in namespaces.items():
        found = _refusal(src, ns, facts["head_index"])
        assert found is not None
        assert found["reason"] == "Data(InvalidData)"
        assert found["index"] == facts["head_index"] and found["namespace"] == ns
        assert "is a Blob" in str(found["detail"])


def test_run_and_plan_refuse_a_blob_origin_and_write_nothing(tmp_path: Path) -> None:
    src = unpack(SMALL, tmp_path / "src")
    store = tmp_path / "bbg"
    activate_subject(store)
    before = dump(store)
    namespaces = sorted(expected(SMALL)["namespaces"])
    for verb in ("plan", "run"):
        res = cli(*_mapped(verb, src, store, namespaces))
        assert res.returncode == 3, res.stderr
        assert "origin-not-cell-record" in res.stderr or "not neuron's legacy cell" in res.stderr
        assert f"mapped origin {namespaces[0]}" in res.stderr
        assert "Data(InvalidData)" in res.stderr
        assert dump(store) == before


def test_converted_log_origins_are_refused(tmp_path: Path) -> None:
    """A converted log's namespace starts with the toolkit's own import record (a Blob)."""
    log = tmp_path / "bbg-cli-small.log"  # a copy: runs elsewhere may hold the fixture's lock
    shutil.copy(Path(__file__).parents[2] / "fixtures" / "legacy" / "bbg-cli-small.log", log)
    store = tmp_path / "bbg"
    plain = cli("plan", str(log), "--store", str(store), "--json")
    assert plain.returncode == 0, plain.stderr
    namespaces = sorted(json.loads(plain.stdout)["namespaces"])
    activate_subject(store)
    res = cli(*_mapped("plan", log, store, namespaces))
    assert res.returncode == 3, res.stderr
    assert "toolkit's import record" in res.stderr and "Data(InvalidData)" in res.stderr
