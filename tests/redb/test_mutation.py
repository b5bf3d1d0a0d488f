"""Mutation tests: random byte flips, overwrites and truncations of real fixture files.

For every mutated file the reader either raises a :class:`MigrateError` subclass (no other
exception, no hang), or returns exactly the oracle dump of the unmutated file.  The one
legitimate exception: a mutation of the (unchecksummed) god byte or geometry can make the crate
read another commit; that is only accepted when the reader *reports* a different commit
(transaction id), never as the same commit with different contents.

Mutations are aimed at the bytes that matter: the super-header and the pages a clean read
visits, as well as anywhere in the file.  A fixed sample checks that the property is not
vacuous: it meets files the reader refuses and files it reads exactly as the oracle.
"""

from __future__ import annotations

import atexit
import gzip
import os
import random
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bbg_core.errors import MigrateError
from importers.redb import open_redb
from importers.redb.btree import PageReader
from importers.redb.dump import dump_lines
from tests.redb.cases import local_case

BASES = [
    ("1.5.2", "types"),
    ("1.5.2", "multimap"),
    ("2.6.3", "types"),
    ("2.6.3", "two_phase"),
    ("2.6.3", "page_size_1024"),
    ("2.6.3", "types_fmt3"),
    ("3.1.3", "large_values"),
    ("3.1.3", "nondurable_crash"),
    ("4.2.0", "multimap"),
    ("4.2.0", "btree_multilevel"),
    ("4.2.0", "types"),
]



@dataclass
class Base:
    key: str
    data: bytes
    oracle: list[str]
    transaction_id: int
    hot: list[tuple[int, int]]  # super-header and every page a clean read visits


@contextmanager
def _recording_pages(spans: list[tuple[int, int]]) -> Iterator[None]:
    original = PageReader.page

    def page(self: PageReader, raw: int, table: str) -> tuple[bytes, int]:
        buf, offset = original(self, raw, table)
        spans.append((offset, offset + len(buf)))
        return buf, offset

    PageReader.page = page  # type: ignore[method-assign]
    try:
        yield
    finally:
        PageReader.page = original  # type: ignore[method-assign]


_WORK = Path(tempfile.mkdtemp(prefix="bbg-redb-mutation-"))
atexit.register(shutil.rmtree, _WORK, ignore_errors=True)
_BASES: dict[str, Base] = {}


def _base(version: str, name: str) -> Base:
    key = f"{version}/{name}"
    if key not in _BASES:
        case = local_case(version, name)
        data = gzip.decompress(case.redb_gz.read_bytes())
        path = _WORK / f"{version}-{name}.redb"
        path.write_bytes(data)
        spans: list[tuple[int, int]] = [(0, 512)]
        # The Python path: its page reads can be recorded.
        with _recording_pages(spans), open_redb(path, backend="python") as db:
            oracle = list(dump_lines(db))
            txn = db.header.transaction_id
        assert "".join(line + "\n" for line in oracle).encode() == case.oracle()
        _BASES[key] = Base(key, data, oracle, txn, sorted(set(spans)))
    return _BASES[key]


class Mutant(bytes):
    """Mutated file bytes whose repr is short (hypothesis prints failing examples)."""

    what = ""

    def __repr__(self) -> str:
        return f"<{len(self)} bytes: {self.what}>"


def mutant(data: bytes, what: str) -> Mutant:
    out = Mutant(data)
    out.what = what
    return out


@st.composite
def mutations(draw: st.DrawFn) -> tuple[str, bytes, str]:
    version, name = draw(st.sampled_from(BASES))
    base = _base(version, name)
    data = bytearray(base.data)
    size = len(data)

    def offset() -> int:
        where = draw(st.sampled_from(["header", "hot", "anywhere"]))
        if where == "header":
            return draw(st.integers(0, 511))
        if where == "hot":
            start, end = draw(st.sampled_from(base.hot))
            return draw(st.integers(start, end - 1))
        return draw(st.integers(0, size - 1))

    kind = draw(st.sampled_from(["flip", "flips", "overwrite", "truncate"]))
    if kind == "flip":
        at = offset()
        data[at] ^= draw(st.integers(1, 255))
        what = f"flip {at}"
    elif kind == "flips":
        ats = [offset() for _ in range(draw(st.integers(2, 6)))]
        for at in ats:
            data[at] ^= draw(st.integers(1, 255))
        what = f"flips {ats}"
    elif kind == "overwrite":
        at = offset()
        chunk = draw(st.binary(min_size=1, max_size=32))
        data[at : at + len(chunk)] = chunk
        del data[size:]
        what = f"overwrite {at} with {chunk.hex()}"
    else:
        cut = draw(
            st.one_of(
                st.integers(0, 600),
                st.integers(0, size - 1),
                st.sampled_from([s for s, _ in base.hot] + [e for _, e in base.hot if e < size]),
            )
        )
        del data[cut:]
        what = f"truncate to {cut}"
    return base.key, mutant(bytes(data), f"{base.key}: {what}"), what


def _check(key: str, data: bytes, what: str) -> str:
    """The verdict on one mutated file (``error``, ``identical`` or ``other_commit``),
    asserting it is one of the accepted ones (see the module docstring)."""
    base = _BASES[key]
    path = _WORK / "mutant.redb"
    path.write_bytes(data)
    try:
        with open_redb(path) as db:
            lines = list(dump_lines(db))
            txn = db.header.transaction_id
    except MigrateError as exc:
        assert exc.message.startswith(str(path)), exc.message
        return "error"
    finally:
        os.unlink(path)
    if lines == base.oracle:
        return "identical"
    assert txn != base.transaction_id, f"{key}: {what}: a changed dump presented as good"
    return "other_commit"


_FAST = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


@_FAST
@given(mutations())
def test_mutations_fast(mutation: tuple[str, bytes, str]) -> None:
    _check(*mutation)


@pytest.mark.slow
@settings(_FAST, max_examples=10000)
@given(mutations())
def test_mutations_many(mutation: tuple[str, bytes, str]) -> None:
    _check(*mutation)


def test_a_fixed_sample_meets_refused_and_intact_files() -> None:
    """Single-byte flips at fixed places of every base file: each ends in an accepted
    verdict, and the sample holds both files the reader refuses (a checksum, the magic, a
    length caught) and files it reads exactly as the oracle (a byte no clean read visits)."""
    rng = random.Random(23)
    seen: Counter[str] = Counter()
    for version, name in BASES:
        base = _base(version, name)
        hot = [rng.randrange(start, end) for start, end in rng.sample(base.hot, 4)]
        anywhere = [rng.randrange(len(base.data)) for _ in range(8)]
        for at in hot + anywhere:
            data = bytearray(base.data)
            data[at] ^= rng.randrange(1, 256)
            seen[_check(base.key, bytes(data), f"flip {at}")] += 1
    assert seen["error"] >= 20 and seen["identical"] >= 5, seen
