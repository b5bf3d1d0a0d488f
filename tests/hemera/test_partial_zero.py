"""The partial S-box's 0 -> 0 case, reached on purpose in every partial round.

The C core carries the partial rounds as fractions over one denominator and has a separate
(branch-free) formula for an S-box input of 0; random data reaches it with probability
2^-64 per round, so these states are built backwards: pick the state entering partial round
``r`` with ``state[0] = -c_r`` (S-box input 0), then undo the rounds before it with the
twin's own inverse steps.  Every backend must then agree with the pure-Python twin, which
applies the specification's rule literally.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import pytest

from hashing.hemera import Backend, _python
from hashing.hemera._params import FULL_ROUNDS, INTERNAL_DIAG, NUM_CONSTANTS, WIDTH, P

HALF = FULL_ROUNDS // 2
EXTERNAL_COUNT = FULL_ROUNDS * WIDTH
INV7 = pow(7, -1, P - 1)  # x -> x^7 is a bijection of the field: gcd(7, p - 1) = 1


def _matrix(linear: Callable[[list[int]], list[int]]) -> list[list[int]]:
    cols = [linear([int(i == j) for i in range(WIDTH)]) for j in range(WIDTH)]
    return [[cols[j][i] % P for j in range(WIDTH)] for i in range(WIDTH)]


def _inverse(m: list[list[int]]) -> list[list[int]]:
    """Gauss-Jordan over GF(p)."""
    n = len(m)
    a = [row[:] + [int(i == j) for j in range(n)] for i, row in enumerate(m)]
    for col in range(n):
        pivot = next(r for r in range(col, n) if a[r][col])
        a[col], a[pivot] = a[pivot], a[col]
        inv = pow(a[col][col], -1, P)
        a[col] = [v * inv % P for v in a[col]]
        for r in range(n):
            if r != col and a[r][col]:
                f = a[r][col]
                a[r] = [(v - f * w) % P for v, w in zip(a[r], a[col], strict=True)]
    return [row[n:] for row in a]


def _apply(m: Sequence[Sequence[int]], v: Sequence[int]) -> list[int]:
    return [sum(x * y for x, y in zip(row, v, strict=True)) % P for row in m]


EXT_INV = _inverse(_matrix(_python._external))
INT_INV = _inverse([[int(i == j) * INTERNAL_DIAG[i] + 1 for j in range(WIDTH)]
                    for i in range(WIDTH)])


def _state_with_zero_sbox(rnd: int, rng: random.Random, zero: bool, *, next_too: bool = False
                          ) -> list[int]:
    """A permutation input whose partial round ``rnd`` (and ``rnd - 1`` with ``next_too``)
    sees S-box input 0."""
    rc = [0] * NUM_CONSTANTS if zero else list(_python.ROUND_CONSTANTS)
    full, part = rc[:EXTERNAL_COUNT], rc[EXTERNAL_COUNT:]
    s = [rng.getrandbits(64) % P for _ in range(WIDTH)]
    s[0] = -part[rnd] % P
    if next_too:
        # Round rnd - 1's S-box output is element 0 of M_I^-1 s: make it 0 (a linear
        # condition, solved for s[1]); its input is then 0 as well.
        row = INT_INV[0]
        rest = sum(row[j] * s[j] for j in range(WIDTH) if j != 1)
        s[1] = -rest * pow(row[1], -1, P) % P
    for r in reversed(range(rnd)):  # undo partial rounds: M_I^-1, then the S-box again
        s = _apply(INT_INV, s)
        s[0] = ((pow(s[0], -1, P) if s[0] else 0) - part[r]) % P
    for r in reversed(range(HALF)):  # undo full rounds: M_E^-1, 7th root, constants
        s = _apply(EXT_INV, s)
        s = [(pow(v, INV7, P) - c) % P for v, c in zip(s, full[r * WIDTH:(r + 1) * WIDTH],
                                                       strict=True)]
    return _apply(EXT_INV, s)


def _sbox_inputs(state: list[int], zero: bool) -> list[int]:
    """The twin's forward run, recording each partial round's S-box input."""
    rc = [0] * NUM_CONSTANTS if zero else list(_python.ROUND_CONSTANTS)
    full = rc[:EXTERNAL_COUNT]
    s = _python._external(state)
    for r in range(HALF):
        s = _python._full_round(s, full[r * WIDTH:(r + 1) * WIDTH])
    seen = []
    for c in rc[EXTERNAL_COUNT:]:
        seen.append((s[0] + c) % P)
        s = _python._partial_round(s, c)
    return seen


@pytest.mark.parametrize("zero", [False, True], ids=["hemera", "hemera0"])
def test_zero_sbox_input_in_every_partial_round(impl: Backend, zero: bool) -> None:
    rng = random.Random(2024 + zero)
    for rnd in range(NUM_CONSTANTS - EXTERNAL_COUNT):
        state = _state_with_zero_sbox(rnd, rng, zero)
        assert _sbox_inputs(state, zero)[rnd] == 0  # the construction did what it says
        want = _python.permute(state, zero_constants=zero)
        assert impl.permute(state, zero_constants=zero) == want, rnd


def test_zero_sbox_input_in_two_rounds_in_a_row(impl: Backend) -> None:
    rng = random.Random(99)
    for rnd in range(1, NUM_CONSTANTS - EXTERNAL_COUNT):
        state = _state_with_zero_sbox(rnd, rng, False, next_too=True)
        seen = _sbox_inputs(state, False)
        assert seen[rnd - 1] == seen[rnd] == 0
        assert impl.permute(state) == _python.permute(state), rnd
