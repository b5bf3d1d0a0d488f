"""Where the hemera hash comes from when a caller does not pass one."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol

HashFn = Callable[[bytes], bytes]
"""hash(data) -> 32-byte digest; hemera for real archives."""


class Hasher(Protocol):
    """A streaming hash: ``update`` bytes, then ``digest``."""

    def update(self, data: bytes, /) -> object: ...

    def digest(self) -> bytes: ...


class HasherFactory(Protocol):
    """Something that makes a fresh :class:`Hasher` (e.g. ``importers.hemera.Hasher``)."""

    def __call__(self) -> Hasher: ...


def _hemera(name: str) -> Any:
    # importlib, not a static import: hemera is a sibling package that may be absent while
    # code that never checks a particle is used.
    module = importlib.import_module("importers.hemera")
    try:
        return getattr(module, name)
    except AttributeError as exc:
        raise ImportError(f"importers.hemera does not provide {name}") from exc


def default_hash() -> HashFn:
    """``importers.hemera.hash``."""
    fn: HashFn = _hemera("hash")
    return fn


def default_hasher() -> HasherFactory:
    """``importers.hemera.Hasher``."""
    factory: HasherFactory = _hemera("Hasher")
    return factory
