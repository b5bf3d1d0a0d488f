"""``doctor`` of a store on either engine: the SQLite report (:mod:`migrate.share.doctor`) or
the Fjall one (:mod:`migrate.share.doctor_fjall`), chosen by the store's content."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from migrate.progress import Observer
from migrate.share.doctor import doctor as doctor_sqlite
from migrate.share.doctor_fjall import doctor_fjall
from migrate.store.engine import FJALL, engine_of


def doctor(store_dir: Path, *, progress: Observer | None = None) -> dict[str, Any]:
    """The read-only health report of the store in ``store_dir`` (``healthy`` false: exit 3)."""
    if engine_of(Path(store_dir)) == FJALL:
        return doctor_fjall(Path(store_dir), progress=progress)
    return doctor_sqlite(store_dir, progress=progress)
