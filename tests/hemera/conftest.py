"""Every hemera test runs against each backend: the pure-Python twin, the C core with the
best permutation this CPU has, and the C core's slower permutations (AVX2, plain C) that
other CPUs get."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hashing import hemera
from hashing.hemera import Backend


@pytest.fixture(scope="session", params=["python", "c", "c-avx2", "c-scalar"])
def backend_name(request: pytest.FixtureRequest) -> str:
    """Which backend a test runs against (skipped when this machine does not have it)."""
    name: str = request.param
    if name == "python":
        return name
    if hemera.c_impl is None:
        pytest.skip("the C extension is not built (pure-Python fallback)")
    from hashing.hemera import _c

    if name != "c" and _c.SIMD_LEVELS.index(name.removeprefix("c-")) >= _c.BEST_LEVEL:
        pytest.skip(f"this CPU's best C path is {_c.SIMD}: the 'c' run covers it")
    return name


@pytest.fixture
def impl(backend_name: str) -> Iterator[Backend]:
    """The backend, with the C core set to the wanted permutation for this test only."""
    if backend_name == "python" or hemera.c_impl is None:
        yield hemera.python_impl
        return
    from hashing.hemera import _c

    before = _c.simd_level()
    wanted = _c.BEST_LEVEL if backend_name == "c" else _c.SIMD_LEVELS.index(
        backend_name.removeprefix("c-"))
    assert _c.use_simd(wanted) == wanted
    try:
        yield hemera.c_impl
    finally:
        _c.use_simd(before)
