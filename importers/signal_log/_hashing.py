"""Where the hemera hash comes from when a caller does not pass one."""

from __future__ import annotations

import importlib
from typing import Protocol


class Hasher(Protocol):
    """A streaming hash: ``update`` bytes, then ``digest`` (32 bytes for hemera)."""

    def update(self, data: bytes, /) -> object: ...

    def digest(self) -> bytes: ...


class HasherFactory(Protocol):
    """Something that makes a fresh :class:`Hasher` (e.g. ``importers.hemera.Hasher``)."""

    def __call__(self) -> Hasher: ...


def default_hasher() -> HasherFactory:
    """``importers.hemera.Hasher``; imported late so decoding works without it."""
    # importlib, not a static import: hemera is a sibling package that may be absent while
    # the decoders (which never need it) are used.
    module = importlib.import_module("importers.hemera")
    try:
        factory: HasherFactory = module.Hasher
    except AttributeError as exc:
        raise ImportError("importers.hemera does not provide Hasher") from exc
    return factory
