"""Building TextArchive lines the way the old writer did (raw TAB/CR inside strings)."""

from __future__ import annotations

import hashlib


def sha(data: bytes) -> bytes:
    """A stand-in particle function for rule tests that are not about hemera itself."""
    return hashlib.sha256(data).digest()


def quirky(value: str) -> str:
    """The old writer's string escaping: only backslash, quote and LF are escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def line(text: str, created: int | None = None, *, particle: str | None = None) -> bytes:
    """One archive line (LF included) in the writer's field order, no spaces."""
    pid = particle if particle is not None else sha(text.encode("utf-8")).hex()
    body = f'{{"particle":"{pid}","text":"{quirky(text)}"'
    if created is not None:
        body += f',"created":{created}'
    return (body + "}\n").encode("utf-8")


def raw_line(fields: str) -> bytes:
    """A line from a hand-written JSON body (LF appended)."""
    return (fields + "\n").encode("utf-8")


PID = sha(b"x").hex()
"""The particle of the text ``x`` under :func:`sha`."""
