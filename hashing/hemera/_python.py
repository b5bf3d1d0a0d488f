"""Pure-Python hemera: the readable twin of ``hemera.c`` (same results, far slower).

Field elements are plain ints kept in ``[0, P)``.  Python's big ints let the linear layers
sum first and reduce once, which is both simpler and faster than reducing every addition.
"""

from __future__ import annotations

from collections.abc import Sequence

from hashing.hemera._params import (
    BYTES_PER_ELEMENT,
    DIGEST_SIZE,
    DOMAIN_HASH,
    DOMAIN_SLOT,
    FLAG_CHUNK,
    FLAG_PARENT,
    FLAG_ROOT,
    FULL_ROUNDS,
    GENESIS_SEED,
    INTERNAL_DIAG,
    LENGTH_SLOT,
    NUM_CONSTANTS,
    OUTPUT_ELEMENTS,
    RATE,
    RATE_BYTES,
    TREE_COUNTER_SLOT,
    TREE_FLAGS_SLOT,
    WIDTH,
    BytesLike,
    P,
)

_HALF_FULL = FULL_ROUNDS // 2
_EXTERNAL_COUNT = FULL_ROUNDS * WIDTH


def _external(s: Sequence[int]) -> list[int]:
    """M_E = circ(2*M4, M4, M4, M4): M4 on each 4-chunk, then add the column sums."""
    m: list[int] = []
    for c in range(0, WIDTH, 4):
        a, b, x, y = s[c], s[c + 1], s[c + 2], s[c + 3]
        m += (2 * a + 3 * b + x + y, a + 2 * b + 3 * x + y, a + b + 2 * x + 3 * y,
              3 * a + b + x + 2 * y)
    sums = [m[k] + m[k + 4] + m[k + 8] + m[k + 12] for k in range(4)]
    return [(m[i] + sums[i & 3]) % P for i in range(WIDTH)]


def _full_round(s: Sequence[int], rc: Sequence[int]) -> list[int]:
    return _external([pow(v + c, 7, P) for v, c in zip(s, rc, strict=True)])


def _partial_round(s: list[int], rc: int) -> list[int]:
    x = (s[0] + rc) % P
    # The partial S-box is inversion, with 0 mapped to 0 so that it stays a permutation.
    s[0] = pow(x, -1, P) if x else 0
    total = sum(s)
    return [(v * d + total) % P for v, d in zip(s, INTERNAL_DIAG, strict=True)]


def _permute(state: Sequence[int], constants: Sequence[int]) -> list[int]:
    """The Poseidon2 permutation of hemera: M_E, 4 full, 16 partial, 4 full rounds."""
    full = constants[:_EXTERNAL_COUNT]
    s = _external(state)
    for r in range(_HALF_FULL):
        s = _full_round(s, full[r * WIDTH : (r + 1) * WIDTH])
    for rc in constants[_EXTERNAL_COUNT:]:
        s = _partial_round(s, rc)
    for r in range(_HALF_FULL, FULL_ROUNDS):
        s = _full_round(s, full[r * WIDTH : (r + 1) * WIDTH])
    return s


def _block_elements(block: BytesLike) -> list[int]:
    """Eight 7-byte little-endian elements of one 56-byte block."""
    return [
        int.from_bytes(block[i : i + BYTES_PER_ELEMENT], "little")
        for i in range(0, RATE_BYTES, BYTES_PER_ELEMENT)
    ]


def _absorb(state: list[int], block: BytesLike, constants: Sequence[int]) -> list[int]:
    # Field addition into the rate, as the specification requires (not XOR, not overwrite).
    for i, e in enumerate(_block_elements(block)):
        state[i] = (state[i] + e) % P
    return _permute(state, constants)


def _pad(tail: bytes) -> bytes:
    """The last block: remaining bytes, 0x01, zeros up to 56 bytes (always one block)."""
    return tail + b"\x01" + bytes(RATE_BYTES - len(tail) - 1)


def bootstrap_constants() -> tuple[int, ...]:
    """Derive the 144 round constants: sponge the genesis seed through zero-constant hemera.

    The sponge is the ordinary one (pad, length in the capacity) run with all constants 0;
    the output is squeezed 8 rate elements per permutation.
    """
    zero = [0] * NUM_CONSTANTS
    state = [0] * WIDTH
    for i, e in enumerate(_block_elements(_pad(GENESIS_SEED))):
        state[i] = e
    state[LENGTH_SLOT] = len(GENESIS_SEED)
    state = _permute(state, zero)
    out: list[int] = []
    while True:
        out += state[:RATE]
        if len(out) >= NUM_CONSTANTS:
            return tuple(out[:NUM_CONSTANTS])
        state = _permute(state, zero)


ROUND_CONSTANTS: tuple[int, ...] = bootstrap_constants()


def round_constants() -> tuple[int, ...]:
    """The 144 round constants (128 full-round, then 16 partial-round) as canonical ints."""
    return ROUND_CONSTANTS


def permute(state: list[int], *, zero_constants: bool = False) -> list[int]:
    """One permutation of a 16-element state (``zero_constants``: hemera_0)."""
    if len(state) != WIDTH:
        raise ValueError(f"state must have {WIDTH} elements, got {len(state)}")
    return _permute(state, [0] * NUM_CONSTANTS if zero_constants else ROUND_CONSTANTS)


class Hasher:
    """Streaming hemera (pure Python): ``update`` any number of times, then ``digest``."""

    name = "hemera"
    digest_size = DIGEST_SIZE
    block_size = RATE_BYTES

    __slots__ = ("_state", "_buf", "_length")

    def __init__(self, data: BytesLike = b"") -> None:
        self._state = [0] * WIDTH
        self._state[DOMAIN_SLOT] = DOMAIN_HASH
        self._buf = bytearray()
        self._length = 0
        if data:
            self.update(data)

    def update(self, data: BytesLike) -> None:
        """Absorb more bytes."""
        view = memoryview(data).cast("B")
        n = len(view)
        self._length += n
        pos = 0
        if self._buf:
            take = min(RATE_BYTES - len(self._buf), n)
            self._buf += view[:take]
            pos = take
            if len(self._buf) < RATE_BYTES:
                return
            self._state = _absorb(self._state, self._buf, ROUND_CONSTANTS)
            self._buf.clear()
        while n - pos >= RATE_BYTES:
            self._state = _absorb(self._state, view[pos : pos + RATE_BYTES], ROUND_CONSTANTS)
            pos += RATE_BYTES
        self._buf += view[pos:]

    def digest(self) -> bytes:
        """The 32-byte hash of everything absorbed so far (the hasher stays usable)."""
        state = list(self._state)
        for i, e in enumerate(_block_elements(_pad(bytes(self._buf)))):
            state[i] = (state[i] + e) % P
        # The length overwrites its capacity slot (it is not added), as in the reference.
        state[LENGTH_SLOT] = self._length % P
        state = _permute(state, ROUND_CONSTANTS)
        return b"".join(v.to_bytes(8, "little") for v in state[:OUTPUT_ELEMENTS])

    def hexdigest(self) -> str:
        """``digest()`` as lowercase hex."""
        return self.digest().hex()

    def copy(self) -> Hasher:
        """An independent hasher with the same absorbed input."""
        other = Hasher()
        other._state = list(self._state)
        other._buf = bytearray(self._buf)
        other._length = self._length
        return other


def hash_many(items: Sequence[BytesLike], *, threads: int | None = None) -> list[bytes]:
    """hemera of each item (the twin of the C batch call; ``threads`` is accepted for the
    same call shape, the twin runs in the calling thread)."""
    return [hash(item) for item in items]


def hash(data: BytesLike) -> bytes:  # the specification's own name
    """The 32-byte hemera hash of ``data``."""
    return Hasher(data).digest()


# ---------------------------------------------------------------- tree mode (hash_leaf/node)
#
# The tree layer of the specification (``specs/tree.md``; ``rs/src/tree.rs`` at e63b85a):
# flags and the chunk counter live in the capacity, so a tree hash is never a plain hash.


def _digest_elements(digest: BytesLike) -> list[int]:
    """Four 8-byte little-endian limbs of a 32-byte chaining value, each reduced mod P (the
    reference reads limbs as field elements, so a limb >= P stands for limb - P)."""
    if len(digest) != DIGEST_SIZE:
        raise ValueError(f"a chaining value is {DIGEST_SIZE} bytes, got {len(digest)}")
    return [int.from_bytes(digest[i : i + 8], "little") % P for i in range(0, DIGEST_SIZE, 8)]


def _output(state: Sequence[int]) -> bytes:
    return b"".join(v.to_bytes(8, "little") for v in state[:OUTPUT_ELEMENTS])


def hash_leaf(data: BytesLike, counter: int = 0, is_root: bool = False) -> bytes:
    """The chaining value of one leaf chunk: the plain hash of ``data``, re-permuted with the
    chunk counter in state[8] and CHUNK (| ROOT) in state[9]."""
    if not 0 <= counter < 1 << 64:
        raise ValueError("counter must be a u64")
    state = [0] * WIDTH
    state[:OUTPUT_ELEMENTS] = _digest_elements(hash(data))
    state[TREE_COUNTER_SLOT] = counter % P
    state[TREE_FLAGS_SLOT] = FLAG_CHUNK | (FLAG_ROOT if is_root else 0)
    return _output(_permute(state, ROUND_CONSTANTS))


def hash_node(left: BytesLike, right: BytesLike, is_root: bool = False) -> bytes:
    """The chaining value of a parent: PARENT (| ROOT) in state[9], the two children's limbs
    added into the rate (left in 0..4, right in 4..8), one permutation."""
    state = [0] * WIDTH
    state[TREE_FLAGS_SLOT] = FLAG_PARENT | (FLAG_ROOT if is_root else 0)
    state[:OUTPUT_ELEMENTS] = _digest_elements(left)
    state[OUTPUT_ELEMENTS : 2 * OUTPUT_ELEMENTS] = _digest_elements(right)
    return _output(_permute(state, ROUND_CONSTANTS))


def hash_leaf_many(
    items: Sequence[BytesLike], counter: int = 0, is_root: bool = False, *,
    threads: int | None = None,
) -> list[bytes]:
    """``hash_leaf`` of each item with the same counter and flag (the twin of the C batch)."""
    return [hash_leaf(item, counter, is_root) for item in items]


def hash_node_many(
    pairs: Sequence[BytesLike], is_root: bool = False, *, threads: int | None = None
) -> list[bytes]:
    """``hash_node(p[:32], p[32:])`` of each 64-byte ``left || right`` (the C batch's twin)."""
    out = []
    for pair in pairs:
        if len(pair) != 2 * DIGEST_SIZE:
            raise ValueError(f"a node input is {2 * DIGEST_SIZE} bytes, got {len(pair)}")
        out.append(hash_node(pair[:DIGEST_SIZE], pair[DIGEST_SIZE:], is_root))
    return out
