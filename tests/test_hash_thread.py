"""``bbg_core.hash_thread``: a hash fed from its own thread gives exactly the digest of the same
updates made in order, ends its thread whatever the caller does, and reports its errors."""

from __future__ import annotations

import hashlib
import random
import threading

import pytest

from bbg_core.hash_thread import HashThread


@pytest.mark.parametrize("seed", [1, 7, 29, 2026])
def test_the_digest_is_the_in_order_one(seed: int) -> None:
    rng = random.Random(seed)
    plain = hashlib.sha256()
    with HashThread(hashlib.sha256(), depth=rng.choice([1, 2, 5])) as threaded:
        for _ in range(300):
            data = rng.randbytes(rng.choice([0, 1, 31, 2047, 2048, 70_000]))
            plain.update(data)
            if rng.random() < 0.2:
                buffer = bytearray(data)
                threaded.update_now(memoryview(buffer))
                buffer[:] = bytes(len(buffer))  # reused at once: it was hashed already
            else:
                threaded.update(data)
        assert threaded.hexdigest() == plain.hexdigest()
        threaded.update(b"more")
        plain.update(b"more")
        assert threaded.hexdigest() == plain.hexdigest()


def test_only_bytes_are_queued() -> None:
    with HashThread(hashlib.sha256()) as threaded, pytest.raises(TypeError, match="bytes"):
        threaded.update(bytearray(b"x"))  # type: ignore[arg-type]


def test_the_thread_ends_when_the_caller_raises() -> None:
    before = threading.active_count()
    with pytest.raises(RuntimeError, match="the pass failed"):
        with HashThread(hashlib.sha256()) as threaded:
            threaded.update(b"x" * 10_000)
            raise RuntimeError("the pass failed")
    assert threading.active_count() == before
    assert not [t for t in threading.enumerate() if t.name == "hash-thread"]


def test_an_error_in_the_thread_reaches_the_caller() -> None:
    class Broken:
        def update(self, data: bytes) -> None:
            raise ValueError("cannot hash")

        def hexdigest(self) -> str:
            return ""

    threaded = HashThread(Broken())
    threaded.update(b"x")
    with pytest.raises(ValueError, match="cannot hash"):
        threaded.hexdigest()
    with pytest.raises(ValueError, match="cannot hash"):
        threaded.close()
