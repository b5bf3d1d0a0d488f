"""The interface both backends implement, as typing protocols."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from hashing.hemera._params import BytesLike

HashFn = Callable[[bytes], bytes]
"""hash(data) -> 32-byte digest: :func:`hashing.hemera.hash` for real inputs."""


class StreamHasher(Protocol):
    """What a reader needs of a streaming hash: ``update`` bytes, then ``digest``."""

    def update(self, data: bytes, /) -> object: ...

    def digest(self) -> bytes: ...


class HasherFactory(Protocol):
    """Something that makes a fresh :class:`StreamHasher` (e.g. :class:`hashing.hemera.Hasher`;
    a test may pass another)."""

    def __call__(self) -> StreamHasher: ...


class HasherLike(Protocol):
    """A streaming hemera hasher (hashlib-style)."""

    name: str
    digest_size: int
    block_size: int

    def update(self, data: BytesLike) -> None: ...

    def digest(self) -> bytes: ...

    def hexdigest(self) -> str: ...

    def copy(self) -> HasherLike: ...


class Backend(Protocol):
    """What ``hashing.hemera._c`` and ``hashing.hemera._python`` provide.

    ``threads`` of the batch calls: how many threads the C core may split a batch across
    (``None``: its default, every core); the pure-Python twin runs in the calling thread.
    """

    @property
    def Hasher(self) -> Callable[..., HasherLike]: ...  # a class in each backend

    def hash(self, data: BytesLike) -> bytes: ...

    def hash_many(
        self, items: Sequence[BytesLike], *, threads: int | None = None
    ) -> list[bytes]: ...

    def hash_leaf(self, data: BytesLike, counter: int = 0, is_root: bool = False) -> bytes: ...

    def hash_node(self, left: BytesLike, right: BytesLike, is_root: bool = False) -> bytes: ...

    def hash_leaf_many(
        self, items: Sequence[BytesLike], counter: int = 0, is_root: bool = False, *,
        threads: int | None = None,
    ) -> list[bytes]: ...

    def hash_node_many(
        self, pairs: Sequence[BytesLike], is_root: bool = False, *, threads: int | None = None
    ) -> list[bytes]: ...

    def round_constants(self) -> tuple[int, ...]: ...

    def permute(self, state: list[int], *, zero_constants: bool = False) -> list[int]: ...
