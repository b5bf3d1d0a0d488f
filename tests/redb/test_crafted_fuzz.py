"""Random small trees with *valid* checksums but damaged structure, read by both backends.

Byte mutations of real files mostly stop at a checksum; here every page's checksum is
recomputed after the damage, so the structure parsers (leaf and branch offset tables,
multimap collections, sub-tree headers, seeks and lookups) see the damaged bytes themselves.
Both backends must give the same pairs, or the same error.  Run it under the sanitizer build
to check the C parser's bounds (how: ``importers/redb/_build.py``).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from importers.redb.btree import LEAF, leaf_layout
from tests.redb import synth
from tests.redb.test_backends_agree import _agree
from tests.redb.test_mutation import _WORK

COMPARES_BACKENDS = True  # generated once, under the "c" parameter (tests/redb/conftest.py)


def _end(page: bytes, kw: int | None, vw: int | None) -> int:
    """Where the checksummed part of ``page`` ends, as the reader computes it (any value
    when the page is malformed: the reader stops before the checksum then)."""
    if page[0] == LEAF:
        parsed = leaf_layout(page, 0, len(page), kw, vw)
        return parsed[2] if not isinstance(parsed, str) else 0
    n: int = struct.unpack_from("<H", page, 2)[0]
    keys_at = 8 + 24 * (n + 1)
    if kw is not None:
        return min(keys_at + kw * n, len(page))
    if n == 0 or keys_at + 4 * n > len(page):
        return 0
    last: int = struct.unpack_from("<I", page, keys_at + 4 * (n - 1))[0]
    return min(last, len(page))


class Pages:
    """Order-0 pages of region 0, checksummed after any damage."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def add(
        self, body: bytes, flips: list[tuple[int, int]], kw: int | None, vw: int | None
    ) -> tuple[int, int]:
        page = bytearray(body[: synth.PAGE].ljust(synth.PAGE, b"\x00"))
        for at, xor in flips:
            page[at % max(1, len(body))] ^= xor
        self.bodies.append(bytes(page))
        return len(self.bodies) - 1, synth.checksum(bytes(page[: _end(bytes(page), kw, vw)]))


@st.composite
def crafted(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    kw = draw(st.sampled_from([None, 8, 0]))
    vw = draw(st.sampled_from([None, 8]))
    multimap = draw(st.booleans())
    fmt_flips = st.lists(st.tuples(st.integers(0, 400), st.integers(1, 255)), max_size=3)
    pages = Pages()
    count = [0]  # pairs the undamaged tree would hold (the stored length, most of the time)

    def key() -> bytes:
        return draw(st.binary(min_size=kw or 0, max_size=kw if kw is not None else 12))

    def value() -> bytes:
        return draw(st.binary(min_size=vw or 0, max_size=vw if vw is not None else 12))

    def collection() -> bytes:
        tag = draw(st.sampled_from([1, 1, 3, 3, 2, 0, 9]))
        if tag == 1:
            values = sorted({value() for _ in range(draw(st.integers(0, 4)))})
            count[0] += len(values)
            body = synth.leaf([(v, b"") for v in values], vw, 0)
        else:
            sub_pairs = sorted({value() for _ in range(draw(st.integers(1, 4)))})
            count[0] += len(sub_pairs)
            sub = pages.add(
                synth.leaf([(v, b"") for v in sub_pairs], vw, 0), draw(fmt_flips), vw, 0
            )
            sub_length = draw(st.sampled_from([len(sub_pairs), len(sub_pairs), 0, 7]))
            body = synth.btree_header(sub[0], sub[1], sub_length)
        cut = draw(st.integers(0, len(body)))
        return bytes([tag]) + (body if draw(st.booleans()) else body[:cut])

    leaves = []
    all_keys: list[bytes] = []
    for _ in range(draw(st.integers(1, 3))):
        keys = sorted({key() for _ in range(draw(st.integers(1, 5)))})
        pairs = [(k, collection() if multimap else value()) for k in keys]
        all_keys += keys
        count[0] += 0 if multimap else len(keys)
        ovw = None if multimap else vw
        leaves.append((pages.add(synth.leaf(pairs, kw, ovw), draw(fmt_flips), kw, ovw), keys))
    if len(leaves) == 1 and draw(st.booleans()):
        root = leaves[0][0]
    else:
        children = [page for page, _ in leaves]
        separators = [keys[-1] for _, keys in leaves[:-1]]
        if len(children) == 1:
            children.append(children[0])  # a shared child: the page budget allows it here
            separators = [leaves[0][1][-1]]
        root = pages.add(synth.branch(children, separators, kw), draw(fmt_flips), kw, None)
    length = draw(st.sampled_from([count[0], count[0], count[0] + 1]))
    definition = synth.definition(
        (root[0], root[1], length),
        length,
        kw,
        vw,
        "u64" if kw == 8 else "&[u8]" if kw is None else "()",
        "u64" if vw == 8 else "&[u8]",
        multimap=multimap,
    )
    tt = pages.add(synth.leaf([(b"t", definition)], None, None), [], None, None)
    f = synth.File(pages.bodies)
    data = f.build((tt[0], tt[1], 1))
    return data, all_keys


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
@given(crafted())
def test_damaged_structures_read_the_same(made: tuple[bytes, list[bytes]]) -> None:
    data, keys = made
    path: Path = _WORK / "crafted.redb"
    path.write_bytes(data)
    try:
        _agree(path, [b"", *keys[:4], b"\xff" * 9])
    finally:
        path.unlink()


@pytest.mark.slow
@settings(
    max_examples=5000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
@given(crafted())
def test_damaged_structures_read_the_same_many(made: tuple[bytes, list[bytes]]) -> None:
    test_damaged_structures_read_the_same.hypothesis.inner_test(made)  # type: ignore[attr-defined]
