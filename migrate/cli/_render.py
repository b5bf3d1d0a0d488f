"""Output helpers shared by every command: JSON on stdout, humans on stderr."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

import schemas

# rich honours NO_COLOR by itself; human output goes to stderr so stdout stays parseable.
err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


def emit_json(doc: Any, schema: str | None = None) -> None:
    """Print one JSON document on stdout, after validating it against ``schema``."""
    if schema is not None:
        schemas.validate(doc, schema)
    sys.stdout.write(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n")
    sys.stdout.flush()
