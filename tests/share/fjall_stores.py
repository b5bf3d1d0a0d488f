"""Looks at Fjall stores for the share tests that run on the Fjall engine (the stores
themselves: the ``fjall_migrated`` / ``fjall_source`` fixtures of the package's conftest)."""

from __future__ import annotations

from pathlib import Path

from migrate.share.snapshot import IN_FLIGHT
from tests.support import stores


def retained(store: Path) -> dict[str, list[tuple[object, ...]]]:
    """:func:`stores.dump` without an import's in-flight machinery (not retained state:
    docs/snapshot1.md; ``run`` leaves its copy cursors behind)."""
    return {t: rows for t, rows in stores.dump(store).items() if t not in IN_FLIGHT}
