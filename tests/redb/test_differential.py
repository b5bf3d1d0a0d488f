"""Differential tests against the real crate (development aid, slow; skipped when the
reference programs in ``../shared/tools/`` are not there).

The same mutated file is read by the real redb (2.6.3 for formats 2 and 3, 4.2.0 for format 3)
and by us.  Allowed outcomes: both fail; both succeed with byte-identical dumps; we fail where
the crate succeeds (stricter).  Not allowed: we succeed where the crate fails, or both succeed
with different dumps.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bbg_core.errors import MigrateError
from importers.redb import open_redb
from importers.redb.dump import dump_lines
from tests.conftest import ROOT
from tests.redb.test_mutation import _base, mutant

TOOLS = ROOT.parent / "shared" / "tools"
ORACLES = {"v2": TOOLS / "redb-oracle-v2", "v4": TOOLS / "redb-oracle-v4"}
BASES = [
    ("2.6.3", "types", "v2"),
    ("2.6.3", "two_phase", "v2"),
    ("2.6.3", "nondurable_crash", "v2"),
    ("2.6.3", "types_fmt3", "v2"),
    ("2.6.3", "page_size_1024", "v2"),
    ("3.1.3", "nondurable_crash", "v4"),
    ("4.2.0", "types", "v4"),
    ("4.2.0", "multimap", "v4"),
]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not all(os.access(p, os.X_OK) for p in ORACLES.values()),
        reason="reference programs (../shared/tools/redb-oracle-*) not available",
    ),
]

_WORK = Path(tempfile.mkdtemp(prefix="bbg-redb-differential-"))
atexit.register(shutil.rmtree, _WORK, ignore_errors=True)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, bytes, str]:
    version, name, oracle = draw(st.sampled_from(BASES))
    base = _base(version, name)
    data = bytearray(base.data)
    where = draw(st.sampled_from(["header", "hot", "anywhere", "truncate"]))
    if where == "truncate":
        at = draw(st.integers(0, len(data) - 1))
        del data[at:]
    else:
        if where == "header":
            at = draw(st.integers(0, 319))
        elif where == "hot":
            start, end = draw(st.sampled_from(base.hot))
            at = draw(st.integers(start, end - 1))
        else:
            at = draw(st.integers(0, len(data) - 1))
        data[at] ^= draw(st.integers(1, 255))
    what = f"{version}/{name} {where} at {at}"
    return oracle, mutant(bytes(data), what), what


@settings(
    max_examples=300,
    deadline=None,
    database=None,
    # CI replays a fixed sample (the crate's allocator-usage panics are not all mirrored, see
    # importers/redb/allocator_state.py); BBG_MIGRATE_FUZZ=1 explores new random samples.
    derandomize=os.environ.get("BBG_MIGRATE_FUZZ") != "1",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mutated())
def test_never_more_lenient_than_the_crate(case: tuple[str, bytes, str]) -> None:
    oracle, data, what = case
    path = _WORK / "mutant.redb"
    path.write_bytes(data)
    try:
        with open_redb(path) as db:
            ours: bytes | None = "".join(line + "\n" for line in dump_lines(db)).encode()
    except MigrateError:
        ours = None
    res = subprocess.run(
        [str(ORACLES[oracle]), "dump", str(path)], capture_output=True, timeout=120, check=False
    )
    crate = res.stdout if res.returncode == 0 else None
    if ours is not None:
        assert crate is not None, f"{what}: we read a file the crate refuses"
        assert ours == crate, f"{what}: our dump differs from the crate's"
