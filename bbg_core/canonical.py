"""The one canonical JSON text of the project: sorted keys, no spaces.

What the store records and hashes (seals, receipts, journal details, manifests, records,
event and snapshot lines) keeps non-ASCII characters as they are; what goes to stdout, to
progress lines and to fleet files escapes them (``ascii=True``), as it always has.  A
document for people to read (a receipt file) takes an ``indent``; its keys are sorted too.
"""

from __future__ import annotations

import json
from typing import Any


def canonical_json(doc: Any, *, ascii: bool = False, indent: int | None = None) -> str:
    """``doc`` as JSON text with sorted keys: compact, or indented by ``indent`` spaces."""
    separators = (",", ":") if indent is None else (",", ": ")
    return json.dumps(
        doc, sort_keys=True, separators=separators, indent=indent, ensure_ascii=ascii
    )
