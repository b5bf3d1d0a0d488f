"""Differential tests against the real crate (development aid, slow; skipped when the
reference programs in ``../shared/tools/`` are not there).

The same mutated file is read by the real redb (2.6.3 for formats 2 and 3, 4.2.0 for format 3)
and by us.  Allowed outcomes: both fail; both succeed with byte-identical dumps; we fail where
the crate succeeds (stricter).  Not allowed: we succeed where the crate fails, or both succeed
with different dumps -- except for the known differences listed in
:data:`KNOWN_DIFFERENCES`, which are expected failures (xfail), named by where the crate
panicked.  Every run of the slow suite fuzzes afresh (hypothesis prints the seed and the
example of a failure, to replay it).
"""

from __future__ import annotations

import atexit
import os
import re
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

# The crate panics (a Rust panic names its source file) in allocator code that we mirror only
# as far as the crate parses it on open (importers/redb/allocator_state.py): a file only such a
# panic refuses is a known difference, not a failure.  Keyed by the panicking file.
KNOWN_DIFFERENCES = {
    "buddy_allocator.rs": "the crate's buddy allocator panics on a state we do not use",
    "region.rs": "the crate's region allocator panics on a state we do not use",
    "bitmap.rs": "the crate's allocator bitmaps panic on a state we do not use",
}
_PANIC = re.compile(rb"panicked at [^\n]*?([A-Za-z_]+\.rs):\d+")

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


def _compare(oracle: str, data: bytes, what: str) -> str | None:
    """Read ``data`` with us and with the crate; None when the outcomes are allowed, the
    known difference (see :data:`KNOWN_DIFFERENCES`) when it is one, else AssertionError."""
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
    if ours is None:
        return None
    if crate is None:
        panic = _PANIC.search(res.stderr)
        where = panic.group(1).decode() if panic else ""
        if where in KNOWN_DIFFERENCES:
            return f"{what}: {KNOWN_DIFFERENCES[where]} ({where})"
    assert crate is not None, f"{what}: we read a file the crate refuses"
    assert ours == crate, f"{what}: our dump differs from the crate's"
    return None


def test_never_more_lenient_than_the_crate() -> None:
    """Fresh random mutations each run; an unknown difference fails at once (hypothesis
    shrinks it and prints how to replay it), the known ones are listed as an xfail."""
    known: list[str] = []

    @settings(
        max_examples=300,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(mutated())
    def check(case: tuple[str, bytes, str]) -> None:
        found = _compare(*case)
        if found is not None:
            known.append(found)

    check()
    if known:
        pytest.xfail(f"{len(known)} known difference(s): " + "; ".join(sorted(set(known))[:5]))
