"""Deterministic inputs of the committed test vectors (``fixtures/hemera/vectors.json``).

Inputs are not stored, only (length, pattern): they are regenerated here, so a vector file
of hundreds of cases up to 100 KB stays small.
"""

from __future__ import annotations

import hashlib

#: Domain of the seeded pattern; changing it invalidates ``vectors.json``.
SEED_DOMAIN = b"bbg-migrate/hemera-vectors/1\0"


def case_input(index: int, length: int, pattern: str) -> bytes:
    """The input of case ``index``: ``length`` bytes of the named pattern.

    ``seeded``: SHAKE-256 of the domain and the index (so every case differs);
    ``zero`` / ``ff`` / ``01``: one repeated byte (0xFF fills 7-byte elements to their
    maximum, 0x01 imitates the padding marker); ``counter``: bytes 0, 1, ..., 255, 0, ...
    """
    if pattern == "seeded":
        return hashlib.shake_256(SEED_DOMAIN + index.to_bytes(4, "little")).digest(length)
    if pattern in ("zero", "ff", "01"):
        return bytes([{"zero": 0, "ff": 0xFF, "01": 1}[pattern]]) * length
    if pattern == "counter":
        return bytes(i & 0xFF for i in range(length))
    raise ValueError(f"unknown vector pattern {pattern!r}")
