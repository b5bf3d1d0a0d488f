"""Every verb of bbg-migrate as a plain function; the CLI is a thin layer over these.

| verb | what |
|---|---|
| :func:`detect` | kind of a path by content, redb header facts, lock state |
| :func:`inspect` | read-only report of a cell.redb, BBG store, Signal log or TextArchive |
"""

from __future__ import annotations

from migrate.detect import detect
from migrate.inspect import inspect_path as inspect

__all__ = ["detect", "inspect"]
