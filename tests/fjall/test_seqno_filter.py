"""``Keyspace.entries(min_seqno=N)`` (what ``tail --since`` on a Fjall store reads) is exactly
the newest versions with seqno >= N, though it skips the segments wholly below N: on every
real-crate fixture (compacted, overlapping L0, sealed journals, tombstones ...)."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate.store.fjall import open_keyspace
from tests.fjall.conftest import CASES


@pytest.mark.parametrize("case", CASES)
def test_min_seqno_is_a_filter_of_the_newest_versions(cases_dir: Path, case: str) -> None:
    with open_keyspace(cases_dir / case) as ks:
        for name in ks.partitions():
            whole = list(ks.entries(name))
            seqnos = sorted({e.seqno for e in whole})
            for floor in {0, 1, *seqnos[-3:], (seqnos[-1] + 1) if seqnos else 5}:
                assert list(ks.entries(name, min_seqno=floor)) == [
                    e for e in whole if e.seqno >= floor], (name, floor)
