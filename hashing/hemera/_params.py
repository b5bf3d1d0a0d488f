"""The fixed parameters of hemera, shared by the C build and the pure-Python twin.

Values were read from the public specification (``cyberia-to/hemera``, commit e63b85a,
``specs/`` and ``rs/src/params.rs``).  Round constants are not listed here: both backends
derive them with the specification's self-bootstrap, and the tests check the result.
"""

from __future__ import annotations

from typing import Final

#: The name recorded in a store's ``hash_suite`` field: the crate and version the real cyber
#: stack pins (``cyber-hemera`` 0.3.1 in the Cargo.lock of cyberia-to/cybergraph; bbg's
#: ``rs/Cargo.toml`` asks for ``cyber-hemera`` 0.3).  Its outputs equal the e63b85a mirror
#: this implementation was read from: same specification vectors, same tree vectors.
SUITE: Final = "cyber-hemera-0.3.1"
#: Names earlier builds recorded for the same function (read, never written).
LEGACY_SUITES: Final = ("cyber-hemera-0.2.0+e63b85a",)
#: Every name a store may carry for this hash suite, the current one first.
SUITES: Final = (SUITE, *LEGACY_SUITES)

#: The Goldilocks prime 2^64 - 2^32 + 1.
P: Final = 0xFFFF_FFFF_0000_0001

WIDTH: Final = 16
RATE: Final = 8
FULL_ROUNDS: Final = 8  # 4 before and 4 after the partial rounds
PARTIAL_ROUNDS: Final = 16
NUM_CONSTANTS: Final = FULL_ROUNDS * WIDTH + PARTIAL_ROUNDS  # 144

#: 7 input bytes per element: every 56-bit value is below P, so encoding never reduces.
BYTES_PER_ELEMENT: Final = 7
RATE_BYTES: Final = RATE * BYTES_PER_ELEMENT  # 56
OUTPUT_ELEMENTS: Final = 4
DIGEST_SIZE: Final = 32  # 4 elements x 8 bytes LE

#: Capacity slots the sponge writes: message length at finalization, domain tag at start.
LENGTH_SLOT: Final = 10
DOMAIN_SLOT: Final = 11
DOMAIN_HASH: Final = 0

#: Tree mode (``specs/tree.md``): capacity slots of the chunk counter and of the flags, and
#: the flags (a leaf is CHUNK, a parent PARENT; the root of a tree also has ROOT).
TREE_COUNTER_SLOT: Final = 8
TREE_FLAGS_SLOT: Final = 9
FLAG_ROOT: Final = 1
FLAG_PARENT: Final = 2
FLAG_CHUNK: Final = 4

#: Seed of the round-constant bootstrap (the bytes themselves are the specification).
GENESIS_SEED: Final = bytes([0x63, 0x79, 0x62, 0x65, 0x72])

#: Diagonal of the internal matrix M_I = J + diag(d) (J = all-ones 16x16).
INTERNAL_DIAG: Final = (
    0xDE9B91A467D6AFC0,
    0xC5F16B9C76A9BE17,
    0x0AB0FEF2D540AC55,
    0x3001D27009D05773,
    0xED23B1F906D3D9EB,
    0x5CE73743CBA97054,
    0x1C3BAB944AF4BA24,
    0x2FAA105854DBAFAE,
    0x53FFB3AE6D421A10,
    0xBCDA9DF8884BA396,
    0xFC1273E4A31807BB,
    0xC77952573D5142C0,
    0x56683339A819B85E,
    0x328FCBD8F0DDC8EB,
    0xB5101E303FCE9CB7,
    0x774487B8C40089BB,
)

#: What ``update`` and ``hash`` accept (anything with a contiguous byte buffer of these types).
BytesLike = bytes | bytearray | memoryview
