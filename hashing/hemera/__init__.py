"""hemera, the cyber content hash: Poseidon2 over Goldilocks, 32-byte output.

``hash(data)`` hashes bytes; ``Hasher`` streams (``update`` / ``digest`` / ``hexdigest`` /
``copy``); ``hash_file`` and ``hash_stream`` read in bounded chunks.  A domain-separated
digest, hemera(domain || bytes), is ``Hasher(domain)`` then ``update``, or
``hash_file(path, prefix=domain)``; ``hashing.hemera.domains`` lists the domains.

The C core (cffi) is used when it was built, unless ``BBG_MIGRATE_PURE=1``; the pure-Python
twin gives identical results.  ``BACKEND`` says which one is active, ``python_impl`` and
``c_impl`` (``None`` when not built) give direct access for tests and benchmarks.
``SUITE`` names the exact variant, for a store's ``hash_suite`` field; ``SUITES`` lists every
name a store may carry for it (earlier builds wrote ``cyber-hemera-0.2.0+e63b85a``).

Tree mode (the specification's ``tree.md``): ``hash_leaf(chunk, counter, is_root)`` and
``hash_node(left, right, is_root)`` give chaining values; nox "Model B" Data ids use them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from bbg_core.files import cannot_read
from bbg_core.twins import Twins
from hashing.hemera import _python
from hashing.hemera._api import Backend, HasherFactory, HasherLike, HashFn, StreamHasher
from hashing.hemera._params import DIGEST_SIZE, LEGACY_SUITES, SUITE, SUITES, BytesLike

__all__ = [
    "BACKEND",
    "BytesLike",
    "DIGEST_SIZE",
    "LEGACY_SUITES",
    "SUITE",
    "SUITES",
    "Backend",
    "HashFn",
    "Hasher",
    "HasherFactory",
    "HasherLike",
    "StreamHasher",
    "c_impl",
    "details",
    "hash",
    "hash_file",
    "hash_leaf",
    "hash_leaf_many",
    "hash_many",
    "hash_node",
    "hash_node_many",
    "hash_stream",
    "impl",
    "python_impl",
]

_twins: Twins[Backend] = Twins("hemera", _python, "hashing.hemera._c")  # bbg_core.twins' rule
python_impl: Backend = _twins.python
c_impl: Backend | None = _twins.c
impl: Backend = _twins.default
BACKEND = _twins.name

Hasher = impl.Hasher
hash = impl.hash  # the specification's own name
hash_many = impl.hash_many
#: Tree mode (``specs/tree.md``): leaf and parent chaining values, and their batch forms.
hash_leaf = impl.hash_leaf
hash_node = impl.hash_node
hash_leaf_many = impl.hash_leaf_many
hash_node_many = impl.hash_node_many



def details() -> str | None:
    """How the active C core runs, e.g. ``avx512, 2 threads`` (``None`` for the twin):
    the permutation the CPU gave it and the threads a big batch is split across."""
    if impl is not c_impl:
        return None
    from hashing.hemera import _c

    return f"{_c.SIMD_LEVELS[_c.simd_level()]}, {_c.THREADS} thread{'s' * (_c.THREADS > 1)}"


#: Read size for files and streams: large enough that per-call overhead vanishes.
CHUNK_SIZE = 1 << 20


def hash_stream(
    stream: BinaryIO,
    *,
    prefix: bytes = b"",
    backend: Backend | None = None,
    progress: Callable[[int], None] | None = None,
) -> bytes:
    """hemera(prefix || everything readable from ``stream``), holding at most one chunk;
    ``progress(bytes hashed so far)`` after each chunk.  A stream with ``readinto`` (files,
    pipes) is read into one reused buffer, which the C core hashes in place."""
    hasher = (backend or impl).Hasher(prefix)
    done = 0
    readinto = getattr(stream, "readinto", None)
    if readinto is None:
        while chunk := stream.read(CHUNK_SIZE):
            hasher.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done)
        return hasher.digest()
    buf = bytearray(CHUNK_SIZE)
    with memoryview(buf) as view:
        while n := readinto(buf):
            with view[:n] as filled:
                hasher.update(filled)
            done += n
            if progress is not None:
                progress(done)
    return hasher.digest()


def hash_file(
    path: str | os.PathLike[str],
    *,
    prefix: bytes = b"",
    backend: Backend | None = None,
    progress: Callable[[int], None] | None = None,
) -> bytes:
    """hemera(prefix || the file's bytes), streaming (see ``domains`` for the prefixes).

    An unreadable file raises ``SourceError`` naming it (``path=`` in its context).
    """
    try:
        with open(path, "rb") as f:
            return hash_stream(f, prefix=prefix, backend=backend, progress=progress)
    except OSError as exc:
        raise cannot_read(Path(path), exc) from exc
