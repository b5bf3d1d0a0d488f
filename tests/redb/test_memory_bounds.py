"""Memory bounded by the input, not by a number inside it.

A page's size comes from order bits in the file: an 8 KiB sparse file can claim a 256 MiB
page (and grew RSS by that much on both paths).  Every page buffer is now bounded by a
per-open budget and, when larger than all the file holds on disk, must not lie in a hole;
a file that claims more is RedbCorrupt naming the page.  Both backends (the ``redb_backend``
fixture), RSS measured by the kernel in a child process.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bbg_core.errors import RedbCorrupt
from importers.redb import open_redb
from tests.redb import synth
from tests.rss import rss_growth


def _read_all(path: Path, **kw: int) -> list[tuple[bytes, bytes]]:
    with open_redb(path, **kw) as db:
        return [pair for t in db.tables() for pair in db.iter_table(t.name)]


def test_a_page_claimed_in_a_hole_is_refused_naming_it(tmp_path: Path, redb_backend: str) -> None:
    path = tmp_path / "sparse.redb"
    synth.big_page_file(str(path), 8)  # a 1 MiB page; the file holds a few KiB
    assert os.stat(path).st_blocks * 512 < 1 << 20
    with pytest.raises(RedbCorrupt) as info:
        _read_all(path)
    assert "page of 1048576 bytes lies in a hole of a sparse file" in info.value.message
    assert info.value.context["page"] == "r0.1/8"
    assert info.value.context["table"] == "big"


def test_the_same_page_written_out_is_read(tmp_path: Path, redb_backend: str) -> None:
    path = tmp_path / "dense.redb"
    synth.big_page_file(str(path), 8, sparse=False)
    assert _read_all(path) == [(synth.u64(1), synth.u64(2))]


def test_a_page_over_the_budget_is_refused_naming_it(tmp_path: Path, redb_backend: str) -> None:
    path = tmp_path / "dense.redb"
    synth.big_page_file(str(path), 8, sparse=False)
    with pytest.raises(RedbCorrupt) as info:
        _read_all(path, memory_budget=64 << 10)
    assert (
        "page of 1048576 bytes is over the reader's memory budget of 65536 bytes per open file"
        in info.value.message
    )
    assert info.value.context["page"] == "r0.1/8"


def test_a_256_mib_claim_costs_no_memory(tmp_path: Path, redb_backend: str) -> None:
    path = tmp_path / "sparse16.redb"
    synth.big_page_file(str(path), 16)  # 512 MiB long, 256 MiB page, ~12 KiB on disk
    assert path.stat().st_size > 256 << 20 and path.stat().st_blocks * 512 < 1 << 20
    growth = rss_growth(
        "from importers.redb import open_redb\nfrom bbg_core.errors import RedbCorrupt",
        f"""
        try:
            with open_redb({str(path)!r}) as db:
                for t in db.tables():
                    list(db.iter_table(t.name))
            raise SystemExit("accepted")
        except RedbCorrupt as exc:
            assert exc.context["page"] == "r0.1/16", exc.context
        """,
    )
    assert growth < 16 << 20, growth
