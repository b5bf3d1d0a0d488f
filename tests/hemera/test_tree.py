"""hemera tree mode (``hash_leaf`` / ``hash_node``) on every backend, against known answers.

Known answers, transcribed:

* ``vectors/hemera.json`` "tree" section and ``rs/tests/vectors.rs`` (``tree_empty``,
  ``tree_hello``) of cyberia-to/hemera at e63b85a: ``root_hash`` of a single chunk is
  ``hash_leaf(chunk, 0, is_root=true)`` (``rs/src/tree.rs`` ``root_hash``).
* nox ids printed by ``/work/shared/tools/cell-fixtures nox-id HEX`` (built from the
  cyber-hemera crate at e63b85a and nox ``particle_of``): an 8-byte atom's id is
  ``hash_leaf(v LE, 0, false)``, a 64-byte pair's is ``hash_node(left, right, false)``.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hashing import hemera
from hashing.hemera import Backend

P = 0xFFFF_FFFF_0000_0001

# cyberia-to/hemera e63b85a vectors/hemera.json "tree": root_hash of one chunk.
TREE_VECTORS = {
    b"": "ea57b2e6b1ec7d2de11b15cb6d7060dd61d247fe0fbf5f7d3fb97a7be9328552",
    b"hello": "626fa46e4e7bd5c87d630eef8333931a0b9198587400a0191eae7821692880d7",
    bytes(4096): "66a2b0f7356486c81cadeb735ed5dda43a5842040e73ea2583ca2b4c63edccf0",
}

# `cell-fixtures nox-id` outputs: atom payload (8 bytes LE) -> hash_leaf(payload, 0, false).
LEAF_IDS = {
    "0000000000000000": "47ff2df1749c1a6c30bba58202ddb7dacacdf95db5f2abacff8fcb81202f7702",
    "0100000000000000": "8f8df9b8a6c64fe5cfd103c4d8564d92d22e5d62a6edc44301e1aa260d387abe",
    "2a00000000000000": "e1541bed2ef9ae8d2073bbf1d590defeb32aba3fc8b1281d1efbeb4e2c6b84a6",
    "00000000ffffffff": "4fcd81ffed89560e3a282be07e69be883ef9bcd16ad366d2d65f8b98deca6112",
    "ffffffff00000000": "fbbaf84eee6bcac3c555e3396a887b7f00086b2983ed902cd8fb322dda8e9c92",
    "efbeadde00000000": "c2cbe3a78b90300c050abea38d0b89e3165336147c6b10c7067911d9c2166b77",
}
ATOM1 = LEAF_IDS["0100000000000000"]
ATOM2 = "882c100b88f5fc989615b32317463f725f578a069a07782f019deed6486090e9"
# `cell-fixtures nox-id` outputs: pair payload (left ‖ right) -> hash_node(left, right, false).
NODE_IDS = {
    ATOM1 + ATOM2: "c2e17f0c787ac64d4a96c84ad57996e5cf56b02e2247575100ce81c09d12a9a0",
    ATOM2 + ATOM1: "54e7f91f87f9e6f32757344d5d7694f43f03964e6066ff04859f8b8f3a3c8e82",
    "00" * 64: "62d39785f5e3f5bd2a60137b5c57857ebbd01d0610ded54d0e221420339c9cfa",
}


@pytest.mark.parametrize("chunk", list(TREE_VECTORS), ids=lambda c: f"{len(c)}B")
def test_single_chunk_root_is_a_root_leaf(impl: Backend, chunk: bytes) -> None:
    assert impl.hash_leaf(chunk, 0, True).hex() == TREE_VECTORS[chunk]


@pytest.mark.parametrize("payload", list(LEAF_IDS))
def test_atom_leaf(impl: Backend, payload: str) -> None:
    assert impl.hash_leaf(bytes.fromhex(payload), 0, False).hex() == LEAF_IDS[payload]


def test_two_atoms_and_their_pairs(impl: Backend) -> None:
    assert impl.hash_leaf((2).to_bytes(8, "little")).hex() == ATOM2
    for both, want in NODE_IDS.items():
        raw = bytes.fromhex(both)
        assert impl.hash_node(raw[:32], raw[32:], False).hex() == want
        assert impl.hash_node_many([raw]) == [bytes.fromhex(want)]


def test_flags_and_counter_separate_domains(impl: Backend) -> None:
    # hemera rs/src/tree.rs tests: root and non-root differ, the counter binds the position,
    # and a node is not commutative; the plain hash is neither.
    data = b"chunk"
    leaves = {impl.hash_leaf(data, c, r) for c in (0, 1) for r in (False, True)}
    assert len(leaves) == 4 and impl.hash(data) not in leaves
    a, b = impl.hash_leaf(b"a"), impl.hash_leaf(b"b")
    nodes = {impl.hash_node(a, b), impl.hash_node(b, a), impl.hash_node(a, b, True)}
    assert len(nodes) == 3


def test_a_limb_at_or_above_p_is_read_reduced(impl: Backend) -> None:
    # nox rs/data/hash.rs (test digest_from_bytes_canonicalizes_an_out_of_range_limb) and
    # hemera rs/src/encoding.rs (bytes_to_cv reduces a limb >= p): p + 5 reads as 5.
    right = bytes.fromhex(ATOM1)
    raw = (P + 5).to_bytes(8, "little") + bytes(24)
    reduced = (5).to_bytes(8, "little") + bytes(24)
    assert impl.hash_node(raw, right) == impl.hash_node(reduced, right)


def test_counter_is_a_u64(impl: Backend) -> None:
    with pytest.raises(ValueError):
        impl.hash_leaf(b"", -1)
    with pytest.raises(ValueError):
        impl.hash_leaf(b"", 1 << 64)
    assert impl.hash_leaf(b"", (1 << 64) - 1) == impl.hash_leaf(b"", (1 << 64) - 1 - P)


def test_batches_equal_single_calls(impl: Backend) -> None:
    items = [os.urandom(n) for n in (0, 1, 8, 55, 56, 57, 200)]
    assert impl.hash_leaf_many(items, 3, True) == [impl.hash_leaf(i, 3, True) for i in items]
    pairs = [os.urandom(64) for _ in range(5)]
    assert impl.hash_node_many(pairs) == [impl.hash_node(p[:32], p[32:]) for p in pairs]
    assert impl.hash_leaf_many([]) == [] and impl.hash_node_many([]) == []
    with pytest.raises(ValueError):
        impl.hash_node_many([b"short"])


needs_c = pytest.mark.skipif(hemera.c_impl is None, reason="the C extension is not built")


@needs_c
@settings(max_examples=80, deadline=None)
@given(data=st.binary(max_size=300), counter=st.integers(0, (1 << 64) - 1),
       root=st.booleans(), node=st.binary(min_size=64, max_size=64))
def test_c_equals_python(data: bytes, counter: int, root: bool, node: bytes) -> None:
    c, py = hemera.c_impl, hemera.python_impl
    assert c is not None
    assert c.hash_leaf(data, counter, root) == py.hash_leaf(data, counter, root)
    assert c.hash_node(node[:32], node[32:], root) == py.hash_node(node[:32], node[32:], root)
