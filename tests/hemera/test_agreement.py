"""C and Python agree on arbitrary inputs (property test) and pick the active backend."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hashing import hemera

needs_c = pytest.mark.skipif(hemera.c_impl is None, reason="the C extension is not built")


@needs_c
@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=400))
def test_c_equals_python_small(data: bytes) -> None:
    assert hemera.c_impl is not None
    assert hemera.c_impl.hash(data) == hemera.python_impl.hash(data)


@needs_c
@settings(max_examples=12, deadline=None)
@given(length=st.integers(0, 100_000), seed=st.binary(min_size=1, max_size=8),
       cut=st.integers(0, 100_000))
def test_c_equals_python_large(length: int, seed: bytes, cut: int) -> None:
    """Inputs up to 100,000 bytes (generated from a drawn seed: hypothesis caps raw data)."""
    assert hemera.c_impl is not None
    data = hashlib.shake_256(seed).digest(length)
    want = hemera.python_impl.hash(data)
    assert hemera.c_impl.hash(data) == want
    h = hemera.c_impl.Hasher(data[:cut])
    h.update(data[cut:])
    assert h.digest() == want


def _backend_in_subprocess(pure: str | None) -> str:
    env = dict(os.environ)
    env.pop("BBG_MIGRATE_PURE", None)
    if pure is not None:
        env["BBG_MIGRATE_PURE"] = pure
    code = "from hashing import hemera; print(hemera.BACKEND, hemera.hash(b'hello').hex())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    return out.stdout.strip()


def test_pure_env_selects_python() -> None:
    hello = "e1b19b8235443e9fac8f1d6a1203de66e9a58c53e36cbbc1f71a031c3d13ce77"
    assert _backend_in_subprocess("1") == f"python {hello}"
    default = "python" if hemera.c_impl is None else "c"
    assert _backend_in_subprocess(None) == f"{default} {hello}"
    assert _backend_in_subprocess("0") == f"{default} {hello}"


def test_module_api_follows_backend() -> None:
    assert hemera.BACKEND in ("c", "python")
    assert hemera.hash is hemera.impl.hash
    assert hemera.Hasher is hemera.impl.Hasher
    assert (hemera.impl is hemera.c_impl) == (hemera.BACKEND == "c")


@needs_c
@settings(max_examples=40, deadline=None)
@given(length=st.integers(0, 20_000), seed=st.binary(min_size=1, max_size=8))
def test_c_permutations_agree(length: int, seed: bytes) -> None:
    """Every SIMD level this CPU has gives the same hash."""
    from hashing.hemera import _c

    data = hashlib.shake_256(seed).digest(length)
    found = set()
    before = _c.simd_level()
    try:
        for level in range(_c.BEST_LEVEL + 1):
            assert _c.use_simd(level) == level
            found.add(_c.hash(data))
    finally:
        _c.use_simd(before)
    assert len(found) == 1


def test_use_simd_clamps_to_cpu() -> None:
    if hemera.c_impl is None:
        pytest.skip("the C extension is not built")
    from hashing.hemera import _c

    before = _c.simd_level()
    try:
        assert _c.use_simd(99) == _c.BEST_LEVEL
        assert _c.simd_level() == _c.BEST_LEVEL
        assert _c.use_simd(-1) == 0
        assert _c.simd_level() == 0
    finally:
        _c.use_simd(before)


def test_missing_extension_falls_back_to_python() -> None:
    """A machine where the C build failed: the package still imports and hashes."""
    code = (
        "import sys; sys.modules['hashing.hemera._hemera_c'] = None\n"  # import -> ImportError
        "from hashing import hemera\n"
        "print(hemera.BACKEND, hemera.c_impl, hemera.hash(b'hello').hex())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    hello = "e1b19b8235443e9fac8f1d6a1203de66e9a58c53e36cbbc1f71a031c3d13ce77"
    assert out.stdout.split() == ["python", "None", hello]
