"""Every error bbg-migrate raises, and the exit code each one maps to.

The tree (exit code in brackets)::

    MigrateError [1]                      base: carries keyword context (path=, offset=, ...)
    ├── UsageError [2]                    bad options / arguments
    ├── SourceError [1]                   a legacy input cannot be read
    │   ├── RedbError [1]                 redb file problems
    │   │   ├── RedbCorrupt [1]           structure or checksum violated (page=, table=, offset=)
    │   │   └── RedbUnsupported [1]       a valid file this reader does not handle
    │   ├── SignalLogError [1]            old cyb Signal log (code=, offset=, frame_index=)
    │   │   └── FrameLogError [1]         bbg CLI frame log, the other dialect (same context)
    │   └── TextArchiveError [1]          old TextArchive (code=, line=)
    ├── StoreError [1]                    the BBG store
    │   ├── StoreRefused [1]              wrong/unknown store, generation or default-store guard
    │   ├── FjallError [1]                a Fjall keyspace directory (the real BBG engine's files)
    │   │   ├── FjallCorrupt [3]          damaged: checksum, structure or length (path=, offset=,
    │   │   │                             what=)
    │   │   ├── FjallUnsupported [1]      valid, but not what this reader handles (blob partition)
    │   │   └── FjallRefused [1]          a write that would not be safe in the keyspace's state
    │   │       └── FjallChanged [1]      a writer session's keyspace changed under it (another
    │   │                                 writer); the session writes nothing more
    │   ├── StoreCorrupt [1]              the store's own records contradict each other
    │   ├── CommitUnknown [1]             outcome of a commit unknown; reopen and resolve
    │   ├── Fenced [4]                    write to a fenced (retired) namespace
    │   │   └── StoreSealed [4]           write to a store sealed for a transfer (export-v1)
    │   ├── HeadMismatch [4]              expected head is stale; nothing written
    │   └── Conflict [4]                  same request/nonce/key, different content
    ├── ValidationFailed [3]              inputs violate the rules (errors=[{code, detail}])
    │   ├── SubjectNotActivated [3]       a mapping's subject has no head in the destination
    │   │                                 (neuron's ``Missing``), or one that is no neuron
    │   │                                 record of it (subject=, path=[, reason=])
    │   ├── OriginNotCellRecord [3]       a mapped origin's history is not neuron's legacy cell
    │   │                                 records (neuron's ``Data(InvalidData)``,
    │   │                                 ``Data(UnsupportedSchema)``, ``Unsupported`` (the
    │   │                                 head snapshot's profile) or ``Conflict``;
    │   │                                 namespace=, index=, key=)
    │   ├── ImportConflict [3]            the subject's state already holds what the mapping
    │   │                                 would add: an origin it imported, a prog id it
    │   │                                 installed, an import request it committed, an
    │   │                                 invocation under an origin's live event (neuron's
    │   │                                 ``Conflict``; subject=, reason=,
    │   │                                 origin=/prog=/request=/conflict=)
    │   └── ImportStateInvalid [3]        the state neuron's import would build is one neuron
    │                                     refuses (``Budget``, ``Data(Limit)``,
    │                                     ``Data(InvalidData)``; subject=, reason=)
    ├── Locked [11]                       the source or store is held by another process / sealed
    └── Interrupted [130]                 stopped by the operator

Foreign errors (OSError, sqlite3.Error, jsonschema errors, cffi return codes) are translated
into these where the layers meet, once, with ``raise ... from exc``.  The CLI turns them into
exit codes in exactly one place (``migrate.cli.main``).
"""

from __future__ import annotations

import json
from typing import Any


class MigrateError(Exception):
    """Base class.  ``message`` is for humans; ``context`` holds the named facts."""

    exit_code = 1
    code = "error"

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        self.context = context

    def __str__(self) -> str:
        return self.message


class UsageError(MigrateError):
    exit_code = 2
    code = "usage"


class SourceError(MigrateError):
    code = "source"


class RedbError(SourceError):
    code = "redb"


class RedbCorrupt(RedbError):
    code = "redb-corrupt"


class RedbUnsupported(RedbError):
    code = "redb-unsupported"


class SignalLogError(SourceError):
    code = "signal-log"


class FrameLogError(SignalLogError):
    code = "frame-log"


class TextArchiveError(SourceError):
    code = "text-archive"


class StoreError(MigrateError):
    code = "store"


class StoreRefused(StoreError):
    code = "store-refused"


class FjallError(StoreError):
    code = "fjall"


class FjallCorrupt(FjallError):
    """A Fjall file contradicts its format: ``path`` (the file), ``offset`` (where in it),
    ``what`` (the structure: block header, data block, journal batch, levels, ...)."""

    exit_code = 3
    code = "fjall-corrupt"


class FjallUnsupported(FjallError):
    code = "fjall-unsupported"


class FjallRefused(FjallError):
    code = "fjall-refused"


class FjallChanged(FjallRefused):
    """A writer session found the keyspace changed in a way only another writer could
    cause (``path`` the file, ``what`` the change); it refuses every later write."""

    code = "fjall-changed"


class StoreCorrupt(StoreError):
    code = "store-corrupt"


class CommitUnknown(StoreError):
    code = "commit-unknown"


class Fenced(StoreError):
    exit_code = 4
    code = "fenced"


class StoreSealed(Fenced):
    code = "store-sealed"


class HeadMismatch(StoreError):
    exit_code = 4
    code = "head-mismatch"


class Conflict(StoreError):
    exit_code = 4
    code = "conflict"


class ValidationFailed(MigrateError):
    exit_code = 3
    code = "validation-failed"


class SubjectNotActivated(ValidationFailed):
    """A mapped run whose subject neuron has no head in the destination: neuron's import
    inspects the subject first and refuses with ``Missing`` (nothing is written)."""

    code = "subject-not-activated"


class OriginNotCellRecord(ValidationFailed):
    """A mapped origin whose history neuron's legacy reader refuses: index 0 must be a
    ``cell/birth/1`` record and each later entry a ``cell/commit/1`` chained to it, each under
    neuron's schema id of its name, and the head's snapshot must name a lifecycle variant and
    the original cell profile."""

    code = "origin-not-cell-record"


class ImportConflict(ValidationFailed):
    """A mapping the subject's ``neuron/root/1`` state (or its request index) already
    answers: neuron's ``prepare_import`` refuses it with ``Conflict`` before it writes."""

    code = "import-conflict"


class ImportStateInvalid(ValidationFailed):
    """A mapping whose post-import ``neuron/root/1`` state neuron's ``prepare_import`` /
    ``prepare`` refuses to encode (an imported prog's step limit, charged and held over the
    root's limit, too many progs, invocations or imports ...): nothing is written."""

    code = "import-state-invalid"


class NotReady(MigrateError):
    """A step whose earlier steps are unfinished (``validate`` before staging is complete,
    ``activate`` before ``validate``), or ``stage --pages N`` that stopped with rows left:
    nothing is wrong; run the step the message names (or the same one again)."""

    exit_code = 5
    code = "not-ready"


class Locked(MigrateError):
    exit_code = 11
    code = "locked"


class Interrupted(MigrateError):
    exit_code = 130
    code = "interrupted"


EXIT_CODES: dict[int, str] = {
    0: "ok",
    1: "failed (corrupt or unreadable input, store error)",
    2: "usage error",
    3: "validation failed (the input breaks a rule, or a Fjall keyspace is damaged; nothing "
    "was written)",
    4: "conflict (head mismatch, fenced namespace or sealed store, same nonce with other inputs)",
    5: "not finished yet (an earlier step is unfinished, or stage --pages N left pages to "
    "stage): run the step the message names; nothing is wrong",
    11: "locked or sealed (another process holds the source or store)",
    130: "interrupted",
}

# Context facts an operator looks for first: lifted to the top of an error document.
WHERE = {"path": str, "table": str, "key": str, "offset": int, "line": int}


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return value.hex()
    result: Any = json.loads(json.dumps(value, default=str))
    return result


def error_document(exc: BaseException) -> dict[str, Any]:
    """The one error document (``schemas/error.schema.json``) of ``exc``: ``code``,
    ``exit_code``, ``message``, the whole ``context``, and ``path``/``table``/``key``/
    ``offset``/``line`` at the top where known.  Used by ``--json`` failures and fleet jobs."""
    if isinstance(exc, MigrateError):
        context = {k: _jsonable(v) for k, v in exc.context.items()}
        doc: dict[str, Any] = {
            "code": exc.code, "exit_code": exc.exit_code, "message": exc.message,
            "context": context,
        }  # fmt: skip
    else:
        doc = {
            "code": "internal", "exit_code": 1, "context": {},
            "message": f"internal error: {type(exc).__name__}: {exc}",
        }  # fmt: skip
    for name, kind in WHERE.items():
        value = doc["context"].get(name)
        if value is None or isinstance(value, bool):
            continue
        if kind is int and isinstance(value, int) and value >= 0:
            doc[name] = value
        elif kind is str:
            doc[name] = value if isinstance(value, str) else json.dumps(value)
    return doc


__all__ = [
    "error_document",
    "MigrateError",
    "UsageError",
    "SourceError",
    "RedbError",
    "RedbCorrupt",
    "RedbUnsupported",
    "SignalLogError",
    "FrameLogError",
    "TextArchiveError",
    "StoreError",
    "StoreRefused",
    "FjallError",
    "FjallCorrupt",
    "FjallUnsupported",
    "FjallRefused",
    "FjallChanged",
    "StoreCorrupt",
    "CommitUnknown",
    "Fenced",
    "StoreSealed",
    "HeadMismatch",
    "Conflict",
    "ValidationFailed",
    "SubjectNotActivated",
    "OriginNotCellRecord",
    "ImportConflict",
    "ImportStateInvalid",
    "Locked",
    "Interrupted",
    "EXIT_CODES",
]
