"""Seals, fences and reader generations of a BBG store.

* :mod:`fences.generations`: status marker ↔ reader generation, monotonic promotion, and the
  open-time check that makes an older reader refuse a promoted store.
* :mod:`fences.namespaces`: per-namespace fences (a fenced namespace refuses writes forever).
* :mod:`fences.seal`: sealing a source (its exclusive lock, its fingerprint, and the check that
  it never changed); the seal *records* live with the other import records in
  :mod:`migrate.store.imports`.

They speak to a store only through :class:`FenceReader` and :class:`FenceWriter` (its
records of the status marker and the fences), never in SQL.
"""

from fences._store import FenceReader, FenceWriter

__all__ = ["FenceReader", "FenceWriter"]
