"""What the fence modules need of a store, and nothing more: its records of the status
marker and of the fences, read and written through the store's own handle (no SQL here).

``migrate.store`` satisfies these with its connection and store handles (reads) and its write
transaction (``Tx``, reads and writes); see :mod:`migrate.store.markers`.  Another storage
engine offers the same four methods.
"""

from __future__ import annotations

from typing import Any, Protocol


class FenceReader(Protocol):
    """A store handle the fence and generation records can be read through."""

    @property
    def path(self) -> Any:
        """What errors name."""
        ...

    def read_status(self) -> tuple[str | None, str]:
        """``(status marker or None if absent, the informational generation column)``."""
        ...

    def fence_record(self, namespace: bytes) -> dict[str, Any] | None:
        """The fence of ``namespace`` (``import_id``, ``reason``, ``transaction``), or None."""
        ...


class FenceWriter(FenceReader, Protocol):
    """An open write transaction (it records each write in its ledger entry)."""

    def write_status(self, marker: str, generation: str) -> None:
        """Set the status marker and the generation in force beside it."""
        ...

    def put_fence(self, namespace: bytes, import_id: str, reason: str,
                  value: bytes | None) -> bool:  # fmt: skip
        """Fence ``namespace`` (``value``: bbg's fence value, subject ‖ manifest); True if it
        was not fenced before (idempotent)."""
        ...
