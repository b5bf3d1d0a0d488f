"""Byte counts as people write them: ``256GiB``, ``1.5 MB``, ``4096``."""

from __future__ import annotations

import re

import typer

_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "kib": 1024,
    "m": 1000**2, "mb": 1000**2, "mib": 1024**2,
    "g": 1000**3, "gb": 1000**3, "gib": 1024**3,
    "t": 1000**4, "tb": 1000**4, "tib": 1024**4,
}  # fmt: skip
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")


def parse_size(text: str | int) -> int:
    """Bytes from ``text``: a whole number, or a number and a unit (B; kB, MB, GB, TB = powers
    of 1000; KiB, MiB, GiB, TiB = powers of 1024; K, M, G, T as the SI ones); a usage error
    (exit 2) for anything else, a fraction of a byte included."""
    if isinstance(text, int):
        return text
    m = _SIZE.fullmatch(text)
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _UNITS:
        raise typer.BadParameter(
            f"{text!r} is not a size: write bytes (4096) or a number and a unit "
            "(512KiB, 1.5GB, 256GiB)"
        )
    number = m.group(1)
    whole, _, frac = number.partition(".")
    scale = _UNITS[unit]
    # Exact arithmetic: 1.5GiB is 1610612736 bytes, 0.5B is refused.
    value = int(whole) * scale + (int(frac) * scale // 10 ** len(frac) if frac else 0)
    if frac and int(frac) * scale % 10 ** len(frac):
        raise typer.BadParameter(f"{text!r} is not a whole number of bytes")
    return value


def show_size(n: int) -> str:
    """``n`` bytes the shortest exact way (``256GiB``, ``1000``)."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        scale = _UNITS[unit.lower()]
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)
