"""nox Data ids: Model B and the older tagged scheme, and what each refuses.

Rules transcribed from:

* cyberia-to/nox ``rs/encode.rs`` (commit 04425ac, tests ``atom_encode_decode_roundtrip``,
  ``field_out_of_range_rejected``, ``invalid_length_rejected``, ``pair_encode_decode_roundtrip``)
  and ``rs/data/hash.rs`` (commit 592cded): atom = 8 bytes LE < p, id = hash_leaf(LE, 0,
  false); pair = 64 bytes, id = hash_node(left, right, false).
* cyberia-to/cybergraph ``src/content.rs`` (commit 546853d) ``Content::new``: a 64-byte Data
  payload with any limb >= p is refused (NoncanonicalParticle) before nox hashes it.
* nox before dba9ceb (``specs/encoding.md`` v0.3, ``rs/encode.rs`` at dba9ceb^): tag ‖ payload,
  id = hemera(tag ‖ payload); field (0x00) and word (0x01, < 2^32) 9 bytes, hash (0x02, four
  limbs < p) 33 bytes, cell (0x03) 65 bytes.

Expected ids come from ``/work/shared/tools/cell-fixtures nox-id`` (see tests/hemera/test_tree).
"""

from __future__ import annotations

import pytest

from hashing import hemera, nox
from hashing.nox import MODEL_B, TAGGED_V0, NoxError

P = nox.P
ATOM1 = bytes.fromhex("8f8df9b8a6c64fe5cfd103c4d8564d92d22e5d62a6edc44301e1aa260d387abe")
ATOM2 = bytes.fromhex("882c100b88f5fc989615b32317463f725f578a069a07782f019deed6486090e9")
PAIR12 = bytes.fromhex("c2e17f0c787ac64d4a96c84ad57996e5cf56b02e2247575100ce81c09d12a9a0")


def le(v: int) -> bytes:
    return v.to_bytes(8, "little")


@pytest.mark.parametrize("value", [0, 1, 42, 2**32 - 1, P - 1])
def test_canonical_atoms_decode(value: int) -> None:
    node = nox.decode(le(value))
    assert (node.scheme, node.kind, node.children) == (MODEL_B, "atom", None)


def test_known_ids() -> None:
    assert nox.particle(le(1)) == ATOM1
    assert nox.particle(le(2)) == ATOM2
    assert nox.particle(ATOM1 + ATOM2) == PAIR12
    assert nox.children(ATOM1 + ATOM2) == (ATOM1, ATOM2)


def test_model_b_refusals() -> None:
    with pytest.raises(NoxError, match="FieldOutOfRange"):
        nox.decode(le(P))
    with pytest.raises(NoxError, match="NoncanonicalParticle"):
        nox.decode(le(P) + ATOM1[8:] + ATOM2)
    with pytest.raises(NoxError, match="NoncanonicalParticle"):
        nox.decode(ATOM1 + ATOM2[:24] + le(2**64 - 1))
    for n in (0, 1, 7, 10, 63, 66):
        with pytest.raises(NoxError, match="neither"):
            nox.decode(bytes(n))


def test_tagged_scheme() -> None:
    field = b"\x00" + le(7)
    word = b"\x01" + le(2**32 - 1)
    hashed = b"\x02" + le(1) + le(2) + le(3) + le(4)
    cell = b"\x03" + ATOM1 + ATOM2
    for payload, kind in ((field, "field atom"), (word, "word atom"), (hashed, "hash atom"),
                          (cell, "cell")):  # fmt: skip
        node = nox.decode(payload)
        assert (node.scheme, node.kind) == (TAGGED_V0, kind)
        assert nox.particle(payload) == hemera.hash(payload)  # id = hemera(tag ‖ payload)
    assert nox.children(cell) == (ATOM1, ATOM2)
    with pytest.raises(NoxError, match="out of range"):
        nox.decode(b"\x01" + le(2**32))
    with pytest.raises(NoxError, match="out of range"):
        nox.decode(b"\x00" + le(P))
    with pytest.raises(NoxError, match="hash limb"):
        nox.decode(b"\x02" + le(1) + le(P) + le(3) + le(4))
    # The tag must fit the length: an unknown tag, or a known tag at another length.
    for payload in (b"\x05" + le(1), b"\x00" + bytes(64), b"\x03" + bytes(8)):
        with pytest.raises(NoxError, match="neither"):
            nox.decode(payload)


def test_scheme_is_told_by_length() -> None:
    assert nox.scheme_of(le(1)) == MODEL_B and nox.scheme_of(bytes(64)) == MODEL_B
    assert nox.scheme_of(b"\x00" + le(1)) == TAGGED_V0
    assert nox.scheme_of(b"\x03" + bytes(64)) == TAGGED_V0
    assert nox.scheme_of(bytes(10)) is None and nox.scheme_of(b"") is None


def test_batch_keeps_order_and_reports_each_failure() -> None:
    payloads = [le(1), le(P), ATOM1 + ATOM2, b"\x00" + le(7), bytes(3)]
    got = nox.particles(payloads)
    assert got[0] == ATOM1 and got[2] == PAIR12 and got[3] == hemera.hash(payloads[3])
    assert isinstance(got[1], NoxError) and isinstance(got[4], NoxError)
    both = nox.particles(payloads, hemera.python_impl)
    assert [g if isinstance(g, bytes) else str(g) for g in both] == [
        g if isinstance(g, bytes) else str(g) for g in got
    ]
