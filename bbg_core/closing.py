"""The one context-manager protocol of a handle: ``with handle:`` closes it on the way out.

Handles of every layer (redb files, stores, builds, sources, pools, views) subclass
:class:`Closing` and define ``close``; leaving the ``with`` block calls it, whatever ended
the block, and never swallows the exception that did.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Closing:
    """Mixin: ``__enter__`` returns the handle, ``__exit__`` calls its ``close()``."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
