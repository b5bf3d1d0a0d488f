"""The streaming API: any split of the input gives the one-shot hash."""

from __future__ import annotations

import hashlib
import io
import random
from pathlib import Path

import pytest

from bbg_core.errors import SourceError
from hashing import hemera
from hashing.hemera import Backend


def data_of(n: int) -> bytes:
    return hashlib.shake_256(b"stream" + n.to_bytes(4, "little")).digest(n)


@pytest.mark.parametrize("n", [0, 1, 55, 56, 57, 112, 500, 3000])
def test_random_splits_equal_one_shot(impl: Backend, n: int) -> None:
    data = data_of(n)
    want = impl.hash(data)
    rng = random.Random(n)
    for _ in range(5):
        h = impl.Hasher()
        pos = 0
        while pos < n:
            step = rng.choice((0, 1, 7, 55, 56, 57, rng.randrange(1, n + 1)))
            h.update(data[pos : pos + step])
            pos += step
        assert h.digest() == want


def test_hasher_shape(impl: Backend) -> None:
    h = impl.Hasher(b"hel")
    h.update(b"lo")
    assert (h.name, h.digest_size, h.block_size) == ("hemera", 32, 56)
    assert h.hexdigest() == impl.hash(b"hello").hex()
    assert len(h.digest()) == 32


def test_digest_does_not_finalize(impl: Backend) -> None:
    h = impl.Hasher(b"a" * 60)
    first = h.digest()
    assert h.digest() == first
    h.update(b"b")
    assert h.digest() == impl.hash(b"a" * 60 + b"b")


def test_copy_is_independent(impl: Backend) -> None:
    h = impl.Hasher(b"x" * 30)  # mid-block: the buffer must be copied too
    c = h.copy()
    h.update(b"left")
    c.update(b"right")
    assert h.digest() == impl.hash(b"x" * 30 + b"left")
    assert c.digest() == impl.hash(b"x" * 30 + b"right")


def test_accepts_bytes_like(impl: Backend) -> None:
    data = data_of(200)
    want = impl.hash(data)
    assert impl.hash(bytearray(data)) == want
    assert impl.hash(memoryview(data)) == want
    assert impl.hash(memoryview(b"zz" + data)[2:]) == want
    h = impl.Hasher()
    h.update(memoryview(data)[:100])
    h.update(bytearray(data[100:]))
    assert h.digest() == want


def test_rejects_str(impl: Backend) -> None:
    with pytest.raises(TypeError):
        impl.hash("text")  # type: ignore[arg-type]


def test_hash_file_and_stream(impl: Backend, tmp_path: Path) -> None:
    data = data_of(3 * 1024 + 5)
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    assert hemera.hash_file(path, backend=impl) == impl.hash(data)
    assert hemera.hash_stream(io.BytesIO(data), backend=impl) == impl.hash(data)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert hemera.hash_file(empty, backend=impl) == impl.hash(b"")


def test_hash_file_spans_chunks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(hemera, "CHUNK_SIZE", 1000)  # several reads, none block-aligned
    data = data_of(4321)
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    assert hemera.hash_file(path) == hemera.hash(data)


def test_hash_file_missing_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.bin"
    with pytest.raises(SourceError) as info:
        hemera.hash_file(missing)
    assert str(missing) in info.value.message
    assert info.value.context["path"] == str(missing)
    assert isinstance(info.value.__cause__, FileNotFoundError)


def test_hash_file_directory_is_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="cannot read"):
        hemera.hash_file(tmp_path)


def test_hash_many_equals_hash_per_item(impl: Backend) -> None:
    items = [data_of(n) for n in (0, 1, 55, 56, 57, 111, 112, 4096, 70_000)]
    assert impl.hash_many(items) == [impl.hash(item) for item in items]
    assert impl.hash_many([]) == []
