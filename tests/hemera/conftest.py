"""Every hemera test runs against each backend: the pure-Python twin, the C core with the
best permutation this CPU has, and the C core's slower permutations (AVX2, plain C) that
other CPUs get.  Only the backends this machine has are generated (a permutation no slower
than the best one is the "c" run itself); a test that needs the C core (it asks for
``c_impl``) is generated for the C backends only.  The one skip left is a real absence: the
C extension was not built."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hashing import hemera
from hashing.hemera import Backend

NOT_BUILT = pytest.mark.skip(reason="the C extension is not built (pure-Python fallback)")


def c_backends() -> list[str]:
    """``c`` and the C core's permutations slower than this CPU's best (none if not built)."""
    if hemera.c_impl is None:
        return []
    from hashing.hemera import _c

    slower = [f"c-{level}" for level in ("avx2", "scalar")
              if _c.SIMD_LEVELS.index(level) < _c.BEST_LEVEL]  # fmt: skip
    return ["c", *slower]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend_name" not in metafunc.fixturenames:
        return
    c_only = "c_impl" in metafunc.fixturenames
    names: list[object] = [] if c_only else ["python"]
    names += c_backends() or [pytest.param("c", marks=NOT_BUILT)]
    metafunc.parametrize("backend_name", names, indirect=True, scope="session")


@pytest.fixture(scope="session")
def backend_name(request: pytest.FixtureRequest) -> str:
    """Which backend a test runs against (see the module docstring)."""
    name: str = request.param
    return name


@pytest.fixture
def impl(backend_name: str) -> Iterator[Backend]:
    """The backend, with the C core set to the wanted permutation for this test only."""
    if backend_name == "python":
        yield hemera.python_impl
        return
    from hashing.hemera import _c

    assert hemera.c_impl is not None  # only generated when it was built
    before = _c.simd_level()
    wanted = _c.BEST_LEVEL if backend_name == "c" else _c.SIMD_LEVELS.index(
        backend_name.removeprefix("c-"))
    assert _c.use_simd(wanted) == wanted
    try:
        yield hemera.c_impl
    finally:
        _c.use_simd(before)
