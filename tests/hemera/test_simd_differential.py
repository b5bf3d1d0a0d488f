"""Randomized differential checks of the C core's permutations: every SIMD level this CPU has
(AVX-512, AVX2) against the plain-C one, on the single-state permutation and on the
streaming absorb loop (AVX-512 keeps the state as fractions there), with fixed seeds.

The AVX-512 full rounds split the S-box between the vector and the scalar units (elements
12..15 on the scalar side), so the states put edge values in every position, those four
included."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TypeVar

import pytest

from hashing import hemera
from hashing.hemera._params import WIDTH

P = 2**64 - 2**32 + 1
EDGE = [0, 1, 2, P - 2, P - 1, P, P + 1, 2**64 - 1, 2**63, 2**32, 2**32 - 1, 2**32 + 1]

T = TypeVar("T")

pytestmark = pytest.mark.skipif(hemera.c_impl is None, reason="the C extension is not built")


def _levels() -> list[int]:
    from hashing.hemera import _c

    return list(range(1, _c.BEST_LEVEL + 1))


def _states(seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    states = [[rng.getrandbits(64) for _ in range(WIDTH)] for _ in range(150)]
    states += [[rng.choice(EDGE) for _ in range(WIDTH)] for _ in range(100)]
    # One random state with one position set to each edge value in turn.
    base = [rng.getrandbits(64) for _ in range(WIDTH)]
    states += [base[:i] + [v] + base[i + 1 :] for i in range(WIDTH) for v in EDGE]
    return states


def _at_level(level: int, fn: Callable[[], T]) -> T:
    from hashing.hemera import _c

    before = _c.simd_level()
    try:
        assert _c.use_simd(level) == level
        return fn()
    finally:
        _c.use_simd(before)


@pytest.mark.parametrize("seed", [7, 29, 4242])
@pytest.mark.parametrize("zero", [False, True])
def test_simd_permutation_equals_scalar(seed: int, zero: bool) -> None:
    from hashing.hemera import _c

    states = _states(seed)
    want = _at_level(0, lambda: [_c.permute(s, zero_constants=zero) for s in states])
    assert all(0 <= v < P for st in want for v in st)
    if not _levels():
        pytest.skip("this CPU has no SIMD permutation")
    for level in _levels():
        got = _at_level(level, lambda: [_c.permute(s, zero_constants=zero) for s in states])
        for state, g, w in zip(states, got, want, strict=True):
            assert g == w, (level, state)


@pytest.mark.parametrize("seed", [3, 11, 2026])
def test_simd_streaming_equals_scalar(seed: int) -> None:
    """Many blocks in one update call (the AVX-512 absorb loop) and across uneven calls."""
    from hashing.hemera import _c

    rng = random.Random(seed)
    inputs = [rng.randbytes(n) for n in (56 * 2, 56 * 37 + 5, 56 * 500, 70_001)]
    # Inputs whose 7-byte elements are all ones (the largest element values).
    inputs.append(b"\xff" * (56 * 64))

    cuts = [random.Random(seed)]  # the same cut points at every level

    def digests() -> list[bytes]:
        rng_cuts = cuts[0]
        out = []
        for data in inputs:
            out.append(_c.hash(data))
            h = _c.Hasher()
            pos = 0
            while pos < len(data):
                step = rng_cuts.randrange(1, 56 * 40)
                h.update(data[pos : pos + step])
                pos += step
            out.append(h.digest())
        return out

    want = _at_level(0, digests)
    assert all(want[i] == want[i + 1] for i in range(0, len(want), 2))
    if not _levels():
        pytest.skip("this CPU has no SIMD permutation")
    for level in _levels():
        cuts[0] = random.Random(seed)
        assert _at_level(level, digests) == want, level
