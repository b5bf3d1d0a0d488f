"""Where the reference programs (development tools built from the real crates) are, if
anywhere: ``$BBG_SHARED_TOOLS``, else ``tools/`` beside ``$BBG_SHARED_FIXTURES``, else
``../shared/tools`` next to the checkout.  Tests that use them skip, visibly, without them;
nothing in the project needs them."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def reference_program(name: str) -> Path | None:
    """The executable ``name`` among the reference programs, or None."""
    places = []
    if os.environ.get("BBG_SHARED_TOOLS"):
        places.append(Path(os.environ["BBG_SHARED_TOOLS"]))
    if os.environ.get("BBG_SHARED_FIXTURES"):
        places.append(Path(os.environ["BBG_SHARED_FIXTURES"]).parent / "tools")
    places.append(ROOT.parent / "shared" / "tools")
    for place in places:
        program = place / name
        if os.access(program, os.X_OK):
            return program
    return None
