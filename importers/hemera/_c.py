"""hemera through the C core (cffi).  The only module that touches ``lib``.

Importing this module raises ImportError when the extension was not built; the package
then falls back to the pure-Python twin.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from importers.hemera._params import DIGEST_SIZE, NUM_CONSTANTS, RATE_BYTES, WIDTH, BytesLike

# Imported by name so type checkers need no stub for the compiled module.
_ext = importlib.import_module("importers.hemera._hemera_c")
ffi: Any = _ext.ffi
lib: Any = _ext.lib

_NEEDED = ("hemera_setup", "hemera_use_simd", "hemera_round_constants", "hemera_permute",
           "hemera_init", "hemera_update", "hemera_digest", "hemera_hash", "hemera_hash_many",
           "hemera_hash_leaf", "hemera_hash_node", "hemera_hash_leaf_many",
           "hemera_hash_node_many")
if not all(hasattr(lib, name) for name in _NEEDED):
    # An extension built from an older hemera.c: treat it as absent (pure-Python fallback,
    # visible in `bbg-migrate --version`) rather than fail on first use.
    raise ImportError("importers.hemera._hemera_c is stale; rebuild with `pip install -e .`")

# Derives the round constants and picks the best permutation for this CPU, once; imports
# run under the import lock, so this cannot race.
lib.hemera_setup()


#: The permutations of the C core, by level: the best one the CPU supports is used.
SIMD_LEVELS = ("scalar", "avx2", "avx512")


_level = 0


def use_simd(level: int) -> int:
    """Use the best permutation up to ``level`` (index in ``SIMD_LEVELS``) that the CPU has.

    Returns the level now in use.  For tests and benchmarks (every level gives the same
    hashes); not thread-safe.
    """
    global _level
    _level = int(lib.hemera_use_simd(level))
    return _level


def simd_level() -> int:
    """The level in use now (see ``use_simd``)."""
    return _level


#: The level this process uses by default (the best the CPU supports).
BEST_LEVEL = use_simd(len(SIMD_LEVELS) - 1)
#: Its name, e.g. "avx512".
SIMD = SIMD_LEVELS[BEST_LEVEL]


class Hasher:
    """Streaming hemera (C core): ``update`` any number of times, then ``digest``.

    The GIL is released while C absorbs, so one hasher must not be updated from two
    threads at once (separate hashers in separate threads are fine).
    """

    name = "hemera"
    digest_size = DIGEST_SIZE
    block_size = RATE_BYTES

    __slots__ = ("_ctx",)

    def __init__(self, data: BytesLike = b"") -> None:
        self._ctx = ffi.new("hemera_ctx *")
        lib.hemera_init(self._ctx)
        if data:
            self.update(data)

    def update(self, data: BytesLike) -> None:
        """Absorb more bytes (read in place, without a copy)."""
        buf = ffi.from_buffer(data)
        lib.hemera_update(self._ctx, buf, len(buf))

    def digest(self) -> bytes:
        """The 32-byte hash of everything absorbed so far (the hasher stays usable)."""
        out = ffi.new("char[]", DIGEST_SIZE)
        lib.hemera_digest(self._ctx, out)
        return bytes(ffi.buffer(out))

    def hexdigest(self) -> str:
        """``digest()`` as lowercase hex."""
        return self.digest().hex()

    def copy(self) -> Hasher:
        """An independent hasher with the same absorbed input."""
        other = Hasher.__new__(Hasher)
        other._ctx = ffi.new("hemera_ctx *")
        ffi.memmove(other._ctx, self._ctx, ffi.sizeof("hemera_ctx"))
        return other


def hash(data: BytesLike) -> bytes:  # noqa: A001 - the specification's own name
    """The 32-byte hemera hash of ``data``."""
    buf = ffi.from_buffer(data)
    out = ffi.new("char[]", DIGEST_SIZE)
    lib.hemera_hash(buf, len(buf), out)
    return bytes(ffi.buffer(out))


def hash_many(items: Sequence[BytesLike]) -> list[bytes]:
    """hemera of each item, in one C call for the whole batch (the GIL is released)."""
    if not items:
        return []
    joined = b"".join(items)
    out = ffi.new("char[]", DIGEST_SIZE * len(items))
    lib.hemera_hash_many(ffi.from_buffer(joined), _ends(items), len(items), out)
    return _split(out)


def _ends(items: Sequence[BytesLike]) -> Any:
    ends = ffi.new("uint64_t[]", len(items))
    total = 0
    for i, item in enumerate(items):
        total += len(item)
        ends[i] = total
    return ends


def _split(out: Any) -> list[bytes]:
    raw = bytes(ffi.buffer(out))
    return [raw[i : i + DIGEST_SIZE] for i in range(0, len(raw), DIGEST_SIZE)]


def _check_counter(counter: int) -> None:
    if not 0 <= counter < 1 << 64:
        raise ValueError("counter must be a u64")


def hash_leaf(data: BytesLike, counter: int = 0, is_root: bool = False) -> bytes:
    """Tree mode: the chaining value of one leaf chunk (see ``_python.hash_leaf``)."""
    _check_counter(counter)
    buf = ffi.from_buffer(data)
    out = ffi.new("char[]", DIGEST_SIZE)
    lib.hemera_hash_leaf(buf, len(buf), counter, 1 if is_root else 0, out)
    return bytes(ffi.buffer(out))


def hash_node(left: BytesLike, right: BytesLike, is_root: bool = False) -> bytes:
    """Tree mode: the chaining value of a parent of two 32-byte chaining values."""
    if len(left) != DIGEST_SIZE or len(right) != DIGEST_SIZE:
        raise ValueError(f"a chaining value is {DIGEST_SIZE} bytes")
    out = ffi.new("char[]", DIGEST_SIZE)
    lib.hemera_hash_node(ffi.from_buffer(left), ffi.from_buffer(right), 1 if is_root else 0, out)
    return bytes(ffi.buffer(out))


def hash_leaf_many(
    items: Sequence[BytesLike], counter: int = 0, is_root: bool = False
) -> list[bytes]:
    """``hash_leaf`` of each item, in one C call (the GIL is released for the batch)."""
    _check_counter(counter)
    if not items:
        return []
    out = ffi.new("char[]", DIGEST_SIZE * len(items))
    joined = b"".join(items)
    lib.hemera_hash_leaf_many(
        ffi.from_buffer(joined), _ends(items), len(items), counter, 1 if is_root else 0, out
    )
    return _split(out)


def hash_node_many(pairs: Sequence[BytesLike], is_root: bool = False) -> list[bytes]:
    """``hash_node(p[:32], p[32:])`` of each 64-byte input, in one C call (GIL released)."""
    if not pairs:
        return []
    if any(len(p) != 2 * DIGEST_SIZE for p in pairs):
        raise ValueError(f"a node input is {2 * DIGEST_SIZE} bytes")
    joined = b"".join(pairs)
    out = ffi.new("char[]", DIGEST_SIZE * len(pairs))
    lib.hemera_hash_node_many(ffi.from_buffer(joined), len(pairs), 1 if is_root else 0, out)
    return _split(out)


def round_constants() -> tuple[int, ...]:
    """The 144 round constants the C core derived (for cross-checking the twin)."""
    out = ffi.new("uint64_t[]", NUM_CONSTANTS)
    lib.hemera_round_constants(out)
    return tuple(out)


def permute(state: list[int], *, zero_constants: bool = False) -> list[int]:
    """One permutation of a 16-element state (``zero_constants``: hemera_0)."""
    if len(state) != WIDTH:
        raise ValueError(f"state must have {WIDTH} elements, got {len(state)}")
    st = ffi.new("uint64_t[]", state)
    lib.hemera_permute(st, 1 if zero_constants else 0)
    return list(st)
