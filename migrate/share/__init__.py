"""Sharing and auditing a BBG store: portable text in and out, backups, checks.

| module | verb |
|---|---|
| :mod:`~migrate.share.events` | ``tail``: history as canonical event/1 NDJSON |
| :mod:`~migrate.share.events_fjall` | ``tail`` on a Fjall store: its batches by seqno |
| :mod:`~migrate.share.follow` | ``tail --follow``: then each new commit as it lands |
| :mod:`~migrate.share.apply` | ``apply``: an event/1 stream merged in one transaction |
| :mod:`~migrate.share.snapshot` | ``snapshot``: every retained row as bbg-snapshot/1 NDJSON |
| :mod:`~migrate.share.snapshot_fjall` | ``snapshot`` of a Fjall store (format 3) |
| :mod:`~migrate.share.restore` | ``restore``: a snapshot into a pristine store, validated first |
| :mod:`~migrate.share.restore_fjall` | ``restore`` into a new Fjall store (bulk segments) |
| :mod:`~migrate.share.copies` | ``snapshot`` / ``restore`` on either engine: which code runs |
| :mod:`~migrate.share.backup` | ``backup``: SQLite online backup, verified, atomically published |
| :mod:`~migrate.share.backup_fjall` | ``backup`` of a live Fjall store: a new keyspace |
| :mod:`~migrate.share.publish` | building aside and publishing by rename (restore, backup) |
| :mod:`~migrate.share.health` | ``doctor``: read-only health report, on either engine |

Every reader here opens the store file read-only (:func:`migrate.store.readonly.open_readonly`);
only ``apply`` and ``restore`` write, through the store API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bbg_core.lazy import lazy_exports

if TYPE_CHECKING:  # the same names, for type checkers
    from migrate.share.apply import apply, apply_stream
    from migrate.share.backup import backup
    from migrate.share.copies import restore, write_snapshot
    from migrate.share.events import iter_events
    from migrate.share.follow import follow
    from migrate.share.health import doctor
    from migrate.share.tailing import tail

# Imported when first read (bbg_core.lazy): ``tail`` loads neither apply, restore nor backup,
# and a module of this package (``common``, whose MAX_LINE the CLI's options show) none of
# the verbs.  ``apply``, ``backup`` and ``follow`` stay the functions, as the names of their
# modules too (as after an eager ``from migrate.share.apply import apply``).
__getattr__ = lazy_exports(
    __name__,
    {
        "apply": ("apply", "apply_stream"),
        "backup": ("backup",),
        "copies": ("restore", "write_snapshot"),
        "events": ("iter_events",),
        "follow": ("follow",),
        "health": ("doctor",),
        "tailing": ("tail",),
    },
)

__all__ = [
    "apply",
    "apply_stream",
    "backup",
    "doctor",
    "follow",
    "iter_events",
    "restore",
    "tail",
    "write_snapshot",
]
