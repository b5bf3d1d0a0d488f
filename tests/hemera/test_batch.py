"""The batch paths (SIMD lanes, thread split) give the single-input answers.

``hash_many``, ``hash_leaf_many`` and ``hash_node_many`` of the C core run eight inputs side
by side through the lane permutation (AVX2 / AVX-512), hand lanes new inputs as old ones
finish, finish stragglers one by one, and split big batches across threads.  None of that
may change a result: every test here compares against the reference vectors or against
the one-input calls, on every permutation this CPU has.
"""

from __future__ import annotations

import array
import hashlib
import os
import random
import subprocess
import sys
from collections.abc import Iterator

import pytest

from hashing import hemera
from hashing.hemera import Backend
from hashing.hemera.vectors import case_input
from tests.hemera.test_partial_zero import _state_with_zero_sbox
from tests.hemera.test_vectors import load_vectors

P = 0xFFFF_FFFF_0000_0001


@pytest.fixture
def c_impl(impl: Backend) -> Iterator[Backend]:
    """The C core at each permutation level, with batches split even when small (the twin
    has no batch machinery of its own: these tests are generated for the C backends only,
    tests/hemera/conftest.py)."""
    from hashing.hemera import _c

    before = _c.PARALLEL_MIN_BYTES
    _c.PARALLEL_MIN_BYTES = 0
    try:
        yield impl
    finally:
        _c.PARALLEL_MIN_BYTES = before


def _blob(seed: int, n: int) -> bytes:
    return hashlib.shake_256(seed.to_bytes(4, "little")).digest(n)


@pytest.mark.parametrize("threads", [1, 3])
def test_reference_vectors_in_one_batch(c_impl: Backend, threads: int) -> None:
    """The committed reference set (outputs of the reference tool), as one batch."""
    cases = load_vectors()["cases"]
    inputs = [case_input(i, n, pattern) for i, (n, pattern, _) in enumerate(cases)]
    got = c_impl.hash_many(inputs, threads=threads)
    assert [h.hex() for h in got] == [want for _, _, want in cases]


SHAPES = {
    "one": [5],
    "two": [0, 56],
    "seven_equal": [56] * 7,
    "eight_equal": [112] * 8,
    "nine_equal": [111] * 9,
    "empty_inputs": [0] * 20,
    "long_first": [20_000] + [30] * 40,
    "long_last": [30] * 40 + [20_000],
    "two_long": [9_000, 17] + [3] * 12 + [12_345],
    "ramp": list(range(0, 400, 7)),
    "boundaries": [56 * k + d for k in range(12) for d in (-1, 0, 1) if 56 * k + d >= 0],
}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("threads", [1, 2, 5])
def test_hash_many_shapes(c_impl: Backend, shape: str, threads: int) -> None:
    """Batches that fill the lanes unevenly: lanes refill, idle, and hand over stragglers."""
    inputs = [_blob(i, n) for i, n in enumerate(SHAPES[shape])]
    want = [hemera.python_impl.hash(x) for x in inputs] if sum(SHAPES[shape]) < 3000 else [
        c_impl.hash(x) for x in inputs]
    assert c_impl.hash_many(inputs, threads=threads) == want


@pytest.mark.parametrize("threads", [1, 4])
def test_hash_many_random_batch(c_impl: Backend, threads: int) -> None:
    rng = random.Random(17)
    inputs = [rng.randbytes(rng.choice((rng.randrange(120), rng.randrange(6000))))
              for _ in range(300)]
    assert c_impl.hash_many(inputs, threads=threads) == [c_impl.hash(x) for x in inputs]


def test_hash_many_takes_buffers(c_impl: Backend) -> None:
    items = [bytearray(b"abc"), memoryview(b"0123456789" * 20)[3:150], b""]
    assert c_impl.hash_many(items) == [c_impl.hash(bytes(x)) for x in items]


def test_batches_measure_items_in_bytes(c_impl: Backend) -> None:
    """An item whose length in elements is not its length in bytes (a memoryview of 4-byte
    integers) is hashed by its bytes in a batch exactly as alone and by the twin; the batch
    used to cut the joined bytes at the element counts."""
    words = memoryview(array.array("I", range(100)))  # 100 elements, 400 bytes
    items = [words, b"tail", memoryview(array.array("H", [1, 2, 3]))]
    twin = hemera.python_impl
    assert c_impl.hash_many(items) == [twin.hash(x) for x in items]
    assert c_impl.hash_many(items) == [c_impl.hash(x) for x in items]
    assert c_impl.hash_leaf_many(items, 3) == [twin.hash_leaf(x, 3) for x in items]


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize(("counter", "is_root"), [(0, False), (7, True), (2**64 - 1, False)])
def test_hash_leaf_many(c_impl: Backend, threads: int, counter: int, is_root: bool) -> None:
    inputs = [_blob(i, n) for i, n in enumerate([8] * 30 + [0, 55, 56, 57, 1000, 4096])]
    want = [c_impl.hash_leaf(x, counter, is_root) for x in inputs]
    assert c_impl.hash_leaf_many(inputs, counter, is_root, threads=threads) == want
    if counter == 0 and not is_root:
        py = hemera.python_impl
        assert want[:3] == [py.hash_leaf(x, counter, is_root) for x in inputs[:3]]


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("is_root", [False, True])
def test_hash_node_many(c_impl: Backend, threads: int, is_root: bool) -> None:
    pairs = [_blob(i, 64) for i in range(37)]
    pairs += [b"\xff" * 64, bytes(64), (P).to_bytes(8, "little") * 8]  # limbs >= p reduce
    want = [c_impl.hash_node(p[:32], p[32:], is_root) for p in pairs]
    assert c_impl.hash_node_many(pairs, is_root, threads=threads) == want
    py = hemera.python_impl
    assert want[-3:] == [py.hash_node(p[:32], p[32:], is_root) for p in pairs[-3:]]


@pytest.mark.parametrize("zero", [False, True], ids=["hemera", "hemera0"])
def test_lane_permutation_equals_twin(c_impl: Backend, zero: bool) -> None:
    """Random and edge states, and states whose S-box input is 0 in some lanes only."""
    from hashing.hemera import _c

    rng = random.Random(5 + zero)
    edge = [0, 1, P - 1, P, P + 1, 2**64 - 1, 2**32 - 1, 2**32]
    states = [[rng.getrandbits(64) for _ in range(16)] for _ in range(13)]
    states += [[rng.choice(edge) for _ in range(16)] for _ in range(6)]
    states += [_state_with_zero_sbox(r, rng, zero) for r in (0, 5, 15)]
    states += [_state_with_zero_sbox(r, rng, zero, next_too=True) for r in (1, 9)]
    rng.shuffle(states)
    for count in (1, 8, len(states)):  # a part-filled group, one full group, several
        got = _c.permute_many(states[:count], zero_constants=zero)
        assert got == [hemera.python_impl.permute(list(s), zero_constants=zero)
                       for s in states[:count]]


def test_ranges_cover_every_input_once() -> None:
    if hemera.c_impl is None:
        pytest.skip("the C extension is not built")
    from hashing.hemera import _c

    rng = random.Random(3)
    for _ in range(200):
        sizes = [rng.choice((0, 1, rng.randrange(10_000))) for _ in range(rng.randrange(1, 40))]
        ends = [sum(sizes[: i + 1]) for i in range(len(sizes))]
        parts = rng.randrange(1, len(sizes) + 1)
        ranges = _c._ranges(ends, parts)
        assert len(ranges) == parts
        assert all(count >= 1 for _, count in ranges)
        assert [f for f, _ in ranges] == [0] + [f + c for f, c in ranges[:-1]]
        assert sum(c for _, c in ranges) == len(sizes)


def test_threads_setting_from_environment() -> None:
    if hemera.c_impl is None:
        pytest.skip("the C extension is not built")
    code = "from hashing.hemera import _c; print(_c.THREADS)"
    env = dict(os.environ, BBG_MIGRATE_HEMERA_THREADS="3")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "3"


@pytest.mark.parametrize("threads", [2, 3])
def test_run_hands_every_input_out_once(threads: int) -> None:
    """Big batches go out in pieces from a shared queue (more pieces than threads); every
    input is hashed exactly once, whatever thread takes it."""
    if hemera.c_impl is None:
        pytest.skip("the C extension is not built")
    from hashing.hemera import _c

    rng = random.Random(threads)
    sizes = [rng.randrange(1, 20_000) for _ in range(400)]
    ends = [sum(sizes[: i + 1]) for i in range(len(sizes))]
    assert ends[-1] >= _c.PARALLEL_MIN_BYTES
    seen: list[tuple[int, int]] = []
    _c._run(lambda first, count: seen.append((first, count)), ends, threads)
    assert len(seen) > threads  # a queue of pieces, not one share per thread
    covered = sorted(i for first, count in seen for i in range(first, first + count))
    assert covered == list(range(len(sizes)))


def test_big_batch_same_on_any_thread_count() -> None:
    if hemera.c_impl is None:
        pytest.skip("the C extension is not built")
    from hashing.hemera import _c

    rng = random.Random(11)
    inputs = [rng.randbytes(rng.randrange(0, 3000)) for _ in range(600)]
    assert sum(map(len, inputs)) >= _c.PARALLEL_MIN_BYTES
    one = _c.hash_many(inputs, threads=1)
    assert one[:5] == [_c.hash(x) for x in inputs[:5]]
    for threads in (2, 3, 7):
        assert _c.hash_many(inputs, threads=threads) == one
        assert _c.hash_leaf_many(inputs, 3, False, threads=threads) == _c.hash_leaf_many(
            inputs, 3, False, threads=1
        )
