"""Every corruption variant is a named error, at least as strict as the real crate.

``corrupt_*.expect.json`` records what the crate did.  Where it failed (panic or error) we fail
with :class:`RedbCorrupt`; where it silently returned corrupted bytes (``corrupt_leaf_flip``) we
fail too, naming the page and the table.  ``corrupt_recovery_required`` only sets the recovery
flag: the crate reads the same data, and so do we, reporting that recovery was required.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from bbg_core.errors import RedbCorrupt
from importers.redb import open_redb
from importers.redb.dump import dump_lines
from tests.redb.cases import Case, all_cases

CORRUPT = [c for c in all_cases() if c.corrupt]
RECOVERY = [c for c in all_cases() if c.name == "corrupt_recovery_required"]


def _read_all(path: Path) -> None:
    with open_redb(path) as db:
        for _ in dump_lines(db):
            pass


def test_every_variant_is_covered() -> None:
    kinds = {c.name for c in CORRUPT}
    assert kinds == {"corrupt_commit_slot", "corrupt_leaf_flip", "corrupt_truncated"}
    assert {c.version for c in CORRUPT} == {"1.5.2", "2.6.3", "3.1.3", "4.2.0"}


@pytest.mark.parametrize("case", CORRUPT, ids=lambda c: c.id)
def test_corrupt_variant_is_a_named_error(case: Case, redb_file: Callable[[Case], Path]) -> None:
    path = redb_file(case)
    expect = case.expect
    assert expect is not None
    before = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    with pytest.raises(RedbCorrupt) as info:
        _read_all(path)
    assert (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns) == before
    err = info.value
    assert err.context["path"] == str(path)
    assert err.message.startswith(f"{path}: corrupt redb file: ")
    crate = expect["redb"]
    crate_failed = not (crate["open"] == "ok" and crate["dump"] == "ok")
    # Either the crate failed as well, or it returned bytes that differ from the base dump.
    assert crate_failed or expect["dump_identical_to_base"] is False
    if case.name == "corrupt_leaf_flip":
        # The crate returned the flipped value silently: we name the page and the table.
        assert err.context["table"] == "str_bytes"
        assert re.fullmatch(r"r\d+\.\d+/\d+", err.context["page"])
        flipped = int(re.search(r"byte (\d+)", expect["what"]).group(1))  # type: ignore[union-attr]
        page_size = case.manifest["header"]["page_size"]
        assert err.context["offset"] <= flipped < err.context["offset"] + page_size
        assert "checksum mismatch" in err.message
        assert f"page {err.context['page']}" in err.message
    elif case.name == "corrupt_commit_slot":
        slot = 0 if "slot 0" in expect["what"] else 1
        assert err.context["offset"] == 64 + 128 * slot
        assert "commit slot" in err.message
    elif case.name == "corrupt_truncated":
        assert err.context["offset"] == path.stat().st_size
        assert "truncated" in err.message


@pytest.mark.parametrize("case", RECOVERY, ids=lambda c: c.id)
def test_recovery_required_reads_like_the_crate(
    case: Case, redb_file: Callable[[Case], Path]
) -> None:
    expect = case.expect
    assert expect is not None and expect["dump_identical_to_base"] is True
    with open_redb(redb_file(case)) as db:
        assert db.header.recovery_required
        out = "".join(line + "\n" for line in dump_lines(db)).encode()
    assert out == case.oracle()


@pytest.mark.parametrize("version", ["2.6.3", "3.1.3", "4.2.0"])
def test_damaged_commit_after_crash_falls_back_like_the_crate(version: str, tmp_path: Path) -> None:
    """A crash-recovered file (no two-phase commit) whose newest commit has a damaged page:
    the crate's repair falls back to the other commit slot (here the empty database, checked
    against redb 2.6.3 and 4.2.0 during development), and so do we, saying why."""
    from tests.redb.test_mutation import _base

    base = _base(version, "nondurable_crash")
    data = bytearray(base.data)
    first_page = next(start for start, _ in base.hot if start >= 4096)
    data[first_page + 20] ^= 1
    path = tmp_path / "crashed.redb"
    path.write_bytes(bytes(data))
    with open_redb(path) as db:
        h = db.header
        lines = list(dump_lines(db))
    assert h.recovery_required and not h.two_phase_commit
    assert h.selected_slot != h.primary_slot
    assert h.fallback_reason is not None and "checksum mismatch" in h.fallback_reason
    assert h.transaction_id < base.transaction_id
    assert lines == []


@pytest.mark.parametrize(
    ("version", "name", "offset", "xor", "fragment"),
    [
        # Trailing-region page count lowered, recovery not flagged: redb 2.6.3 recalculates
        # the layout, skips the repair, then fails an assertion.
        ("2.6.3", "types", 28, 0x01, "does not match its stored layout"),
        # Region header page count changed on a crashed file: redb 2.6.3 panics repairing it.
        ("2.6.3", "nondurable_crash", 16, 0x02, "region header pages 128 do not match"),
        # Region tracker page moved: redb 2.6.3 fails reading the allocator state.
        ("2.6.3", "types", 35, 0x10, "region tracker page"),
        # Slot versions disagree: redb 1.5.2, 3.x and 4.x refuse the file.
        ("4.2.0", "types", 64, 0x01, "disagree on the file format version"),
        # God byte says "primary = slot 1" (the older commit); the older commit's freed-page
        # lists name pages beyond the shrunken file: redb 4.2.0 refuses to open it.
        ("4.2.0", "multimap", 9, 0x01, "freed page list names a page outside the file"),
    ],
)
def test_header_damage_the_crate_refuses(
    version: str, name: str, offset: int, xor: int, fragment: str, tmp_path: Path
) -> None:
    """Header mutations found by comparing with the real crate: it fails, so must we."""
    from tests.redb.test_mutation import _base

    data = bytearray(_base(version, name).data)
    data[offset] ^= xor
    path = tmp_path / "damaged.redb"
    path.write_bytes(bytes(data))
    with pytest.raises(RedbCorrupt, match=fragment):
        _read_all(path)
