"""Our dump of every real keyspace equals the real crate's, byte for byte (or by SHA-256
where the dump is too big to keep), on both twins."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate.store.fjall import backend
from migrate.store.fjall.reader import open_keyspace
from migrate.store.fjall.report import dump_lines
from tests.fjall.conftest import CASES, expected, real_dump, sha256

TWINS = backend.available()


def _dump(path: Path, twin: str) -> bytes:
    with open_keyspace(path, backend_name=twin) as ks:
        return "".join(line + "\n" for line in dump_lines(ks)).encode("utf-8")


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("case", CASES)
def test_dump_equals_the_real_crates(case: str, twin: str, cases_dir: Path) -> None:
    ours = _dump(cases_dir / case, twin)
    doc = expected(case)
    assert sha256(ours) == doc["dump"]["sha256"]
    assert ours.count(b"\n") == doc["dump"]["lines"] == doc["rows_total"]
    theirs = real_dump(case)
    if theirs is not None:
        assert ours == theirs


def test_every_case_is_here() -> None:
    assert len(CASES) == 12
