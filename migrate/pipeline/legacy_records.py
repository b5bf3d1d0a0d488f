"""The records a legacy Signal log or TextArchive becomes in BBG (canonical JSON Blobs).

One source = one namespace.  A log's index-0 commit is the **import record** (a TextArchive
becomes cybergraph's observations instead, :mod:`migrate.pipeline.legacy_text`, and its
import record is kept in the receipt)
(``schemas/legacy-import-record.schema.json``)::

    {"format": "bbg-migrate/legacy-import/1",
     "kind": "signal-log" | "bbg-frame-log" | "text-archive",
     "source": {"sha256", "size_bytes", "hemera_source_digest" (logs) | "hemera_file" (archives)},
     "items": N, "torn_tail": null | {code, offset, valid_prefix_events, valid_prefix_end,
                                      discarded_bytes}}

and the namespace id is hemera(its payload), so history[ns‖0] = ns (the birth rule).  Each
event / line is one commit at index i (= event index + 1, or the 1-based line) whose
**item record** (``schemas/legacy-item-record.schema.json``) is::

    {"format": "bbg-migrate/legacy-item/1", "kind", "namespace", "index", "previous",
     "raw": {"id", "size"}, "provenance": {"source_sha256", "ordinal", "span": [start, end)},
     "summary": {sigil, neuron, step, height, links, suffix} | {sigil, neuron, h0}
                | {sigil, neuron, height, links, box_moves} | {sigil: "."}
                | {particle, created}}

``raw.id`` = hemera(the exact raw bytes: the frame incl. its header, or the line incl. LF),
stored as a Blob of its own; the commit id = hemera(item record payload).  u64 fields are
JSON integers (canonical JSON keeps them exact; the raw bytes are the authority anyway).
"""

from __future__ import annotations

from typing import Any

import schemas
from bbg_core.canonical import canonical_json
from importers.frame_log import CliSignal, Finalize
from importers.signal_log import Intent, Signal
from importers.text_archive import TextRecord

IMPORT_FORMAT = "bbg-migrate/legacy-import/1"
ITEM_FORMAT = "bbg-migrate/legacy-item/1"
IMPORT_SCHEMA = "legacy-import-record"
ITEM_SCHEMA = "legacy-item-record"
# The hemera digest of the whole file, under the name each format's fixtures use.
HEMERA_NAME = {
    "signal-log": "hemera_source_digest",
    "bbg-frame-log": "hemera_source_digest",
    "text-archive": "hemera_file",
}


def import_record(
    kind: str,
    fingerprint: dict[str, Any],
    hemera_digest: str,
    items: int,
    torn_tail: dict[str, Any] | None,
    lenient: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The import record of a source (validated against its schema).  ``lenient``: what bbg's
    reader skipped or read leniently in a bbg frame log (the key is left out when empty)."""
    doc = {
        "format": IMPORT_FORMAT,
        "kind": kind,
        "source": {
            "sha256": fingerprint["sha256"],
            "size_bytes": fingerprint["size_bytes"],
            HEMERA_NAME[kind]: hemera_digest,
        },
        "items": items,
        "torn_tail": torn_tail,
    }
    if lenient:
        doc["lenient_frames"] = lenient
    schemas.validate(doc, IMPORT_SCHEMA)
    return doc


def summary(body: Signal | CliSignal | Intent | Finalize | TextRecord) -> dict[str, Any]:
    """The decoded facts an item record carries (enough to find and read it, not all of it)."""
    if isinstance(body, CliSignal):
        return {
            "sigil": "!",
            "neuron": body.neuron.hex(),
            "height": body.height,
            "links": len(body.links),
            "box_moves": len(body.box_moves),
        }
    if isinstance(body, Finalize):
        return {"sigil": "."}
    if isinstance(body, Signal):
        return {
            "sigil": "!",
            "neuron": body.neuron.hex(),
            "step": body.step,
            "height": body.height,
            "links": len(body.links),
            "suffix": body.suffix,
        }
    if isinstance(body, Intent):
        return {"sigil": "^", "neuron": body.neuron.hex(), "h0": body.h0}
    return {"particle": body.particle, "created": body.created}


def item_record(
    kind: str,
    namespace: bytes,
    index: int,
    previous: bytes,
    raw_id: bytes,
    raw_size: int,
    source_sha256: str,
    ordinal: int,
    span: tuple[int, int],
    facts: dict[str, Any],
) -> dict[str, Any]:
    """The item record of history ``index`` (not validated here: see :func:`payload`)."""
    return {
        "format": ITEM_FORMAT,
        "kind": kind,
        "namespace": namespace.hex(),
        "index": index,
        "previous": previous.hex(),
        "raw": {"id": raw_id.hex(), "size": raw_size},
        "provenance": {"source_sha256": source_sha256, "ordinal": ordinal, "span": list(span)},
        "summary": facts,
    }


def payload(doc: dict[str, Any], schema: str | None = None) -> bytes:
    """The canonical JSON payload of a record, validated against ``schema`` when named.

    Records are validated when first built in preflight; the later rebuilds (staging, the
    digest pass) are checked by id instead -- a different payload cannot hash to the id.
    """
    if schema is not None:
        schemas.validate(doc, schema)
    return canonical_json(doc).encode()
