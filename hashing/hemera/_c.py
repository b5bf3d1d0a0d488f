"""hemera through the C core (cffi).  The only module that touches ``lib``.

Importing this module raises ImportError when the extension was not built; the package
then falls back to the pure-Python twin.
"""

from __future__ import annotations

import bisect
import importlib
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from hashing.hemera._params import DIGEST_SIZE, NUM_CONSTANTS, RATE_BYTES, WIDTH, BytesLike

# Imported by name so type checkers need no stub for the compiled module.
_ext = importlib.import_module("hashing.hemera._hemera_c")
ffi: Any = _ext.ffi
lib: Any = _ext.lib

_NEEDED = ("hemera_setup", "hemera_use_simd", "hemera_round_constants", "hemera_permute",
           "hemera_init", "hemera_update", "hemera_digest", "hemera_hash", "hemera_hash_many",
           "hemera_hash_leaf", "hemera_hash_node", "hemera_hash_leaf_many",
           "hemera_hash_node_many", "hemera_permute_many")
if not all(hasattr(lib, name) for name in _NEEDED):
    # An extension built from an older hemera.c: treat it as absent (pure-Python fallback,
    # visible in `bbg-migrate --version`) rather than fail on first use.
    raise ImportError("hashing.hemera._hemera_c is stale; rebuild with `pip install -e .`")

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


def hash(data: BytesLike) -> bytes:  # the specification's own name
    """The 32-byte hemera hash of ``data``."""
    buf = ffi.from_buffer(data)
    out = ffi.new("char[]", DIGEST_SIZE)
    lib.hemera_hash(buf, len(buf), out)
    return bytes(ffi.buffer(out))


# ---------------------------------------------------------------- batches on every core
#
# The batch calls release the GIL for their whole run, so a big batch is cut into ranges of
# about equal bytes, several per thread, which the calling thread and a shared pool take from
# one queue.  The C core writes each range's outputs into its own part of one buffer.


def _default_threads() -> int:
    raw = os.environ.get("BBG_MIGRATE_HEMERA_THREADS", "")
    if raw.strip():
        return max(1, int(raw))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


#: Threads a batch may use by default: every core this process may run on, or
#: ``BBG_MIGRATE_HEMERA_THREADS`` (1: always the calling thread alone).
THREADS = _default_threads()
#: A batch with fewer input bytes than this runs in the calling thread: handing out work
#: costs tens of microseconds, a few milliseconds of hashing make that negligible.
PARALLEL_MIN_BYTES = 1 << 18

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_pid = 0
_pool_lock = threading.Lock()


def _executor(workers: int) -> ThreadPoolExecutor:
    """The shared pool with at least ``workers`` threads (made on first use, and again in
    a forked child, which inherits the pool object but not its threads).  A pool replaced
    by a bigger one is left to finish what it was given."""
    global _pool, _pool_size, _pool_pid
    with _pool_lock:
        if _pool is None or _pool_size < workers or _pool_pid != os.getpid():
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hemera")
            _pool_size, _pool_pid = workers, os.getpid()
        return _pool


def _ranges(ends: Sequence[int], parts: int) -> list[tuple[int, int]]:
    """Cut inputs 0..n-1 (cumulative byte ends) into ``parts`` ranges of about equal bytes,
    each non-empty: (first, count) pairs."""
    n, total = len(ends), ends[-1]
    cuts = [0]
    for k in range(1, parts):
        cut = bisect.bisect_left(ends, total * k // parts) + 1
        cuts.append(min(max(cut, cuts[-1] + 1), n - (parts - k)))
    cuts.append(n)
    return [(a, b - a) for a, b in zip(cuts, cuts[1:], strict=False)]


#: A big batch is cut into up to this many pieces per thread, taken from a shared queue:
#: a thread whose core is busy with another process then takes fewer pieces instead of
#: holding the others up at the end (equal shares scale only as well as the slowest core).
PIECES_PER_THREAD = 8


def _run(call: Callable[[int, int], None], ends: Sequence[int], threads: int | None) -> None:
    """``call(first, count)`` over all inputs, split across up to ``threads`` threads."""
    n = len(ends)
    want = THREADS if threads is None else max(1, threads)
    parts = min(want, n) if ends[-1] >= PARALLEL_MIN_BYTES else 1
    if parts <= 1:
        call(0, n)
        return
    # Pieces of at least PARALLEL_MIN_BYTES / 4 each (a C call per piece is microseconds).
    by_size = 4 * ends[-1] // max(1, PARALLEL_MIN_BYTES)
    pieces = max(parts, min(n, parts * PIECES_PER_THREAD, by_size))
    queue = iter(_ranges(ends, pieces))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                piece = next(queue, None)
            if piece is None:
                return
            call(*piece)

    pool = _executor(parts - 1)
    futures: list[Future[None]] = [pool.submit(work) for _ in range(parts - 1)]
    try:
        work()
    finally:
        for future in futures:
            future.result()


def _nbytes(item: BytesLike) -> int:
    """The length of ``item`` in bytes (a memoryview's ``len`` counts its elements)."""
    return len(item) if type(item) is bytes else memoryview(item).nbytes


def _cumulative(items: Sequence[BytesLike]) -> tuple[Any, list[int]]:
    """The C array of cumulative ends in the joined bytes, and the same as a list (for
    splitting)."""
    ends: list[int] = []
    total = 0
    for item in items:
        total += _nbytes(item)
        ends.append(total)
    return ffi.new("uint64_t[]", ends), ends


def _batch_buffers(items: Sequence[BytesLike]) -> tuple[Any, Any]:
    """The items joined into one C buffer, and a C buffer for their digests."""
    data = ffi.from_buffer(b"".join(items))  # the cdata keeps the joined bytes alive
    return data, ffi.new("char[]", DIGEST_SIZE * len(items))


def _split(out: Any) -> list[bytes]:
    raw = bytes(ffi.buffer(out))
    return [raw[i : i + DIGEST_SIZE] for i in range(0, len(raw), DIGEST_SIZE)]


def hash_many(items: Sequence[BytesLike], *, threads: int | None = None) -> list[bytes]:
    """hemera of each item.  One C call per thread's share; the GIL is released meanwhile.

    Inputs run eight at a time through the SIMD lanes when the CPU has AVX2 or AVX-512;
    a batch of ``PARALLEL_MIN_BYTES`` or more is split across ``threads`` threads (default
    ``THREADS``: every core).  The results do not depend on either.
    """
    if not items:
        return []
    data, out = _batch_buffers(items)
    c_ends, ends = _cumulative(items)
    _run(lambda first, count: lib.hemera_hash_many(data, c_ends, first, count, out), ends,
         threads)
    return _split(out)


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
    items: Sequence[BytesLike], counter: int = 0, is_root: bool = False, *,
    threads: int | None = None,
) -> list[bytes]:
    """``hash_leaf`` of each item, batched and split across threads as ``hash_many``."""
    _check_counter(counter)
    if not items:
        return []
    data, out = _batch_buffers(items)
    c_ends, ends = _cumulative(items)
    root = 1 if is_root else 0
    _run(lambda first, count: lib.hemera_hash_leaf_many(data, c_ends, first, count, counter,
                                                        root, out), ends, threads)
    return _split(out)


def hash_node_many(
    pairs: Sequence[BytesLike], is_root: bool = False, *, threads: int | None = None
) -> list[bytes]:
    """``hash_node(p[:32], p[32:])`` of each 64-byte input, batched as ``hash_many``."""
    if not pairs:
        return []
    if any(len(p) != 2 * DIGEST_SIZE for p in pairs):
        raise ValueError(f"a node input is {2 * DIGEST_SIZE} bytes")
    data, out = _batch_buffers(pairs)
    root = 1 if is_root else 0
    ends = range(2 * DIGEST_SIZE, 2 * DIGEST_SIZE * (len(pairs) + 1), 2 * DIGEST_SIZE)
    _run(lambda first, count: lib.hemera_hash_node_many(data, first, count, root, out), ends,
         threads)
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


def permute_many(states: Sequence[Sequence[int]], *, zero_constants: bool = False
                 ) -> list[list[int]]:
    """Each 16-element state permuted through the batch path (the SIMD lanes when the CPU
    has them), for the tests: it must equal ``permute`` state by state."""
    if any(len(st) != WIDTH for st in states):
        raise ValueError(f"a state has {WIDTH} elements")
    flat = ffi.new("uint64_t[]", [v for st in states for v in st] or [0])
    lib.hemera_permute_many(flat, len(states), 1 if zero_constants else 0)
    return [list(flat[i * WIDTH : (i + 1) * WIDTH]) for i in range(len(states))]
