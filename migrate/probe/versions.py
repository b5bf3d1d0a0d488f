"""Which implementation (C via cffi, or pure Python) each hot path uses in this process."""

from __future__ import annotations

import importlib


def active() -> dict[str, str]:
    """``{"redb reader": "c"|"python", "hemera": "c"|"python"}`` for this process, and
    ``"hemera C core"``: its permutation and threads (e.g. ``avx512, 2 threads``) when the
    C core is active."""
    found: dict[str, str] = {}
    for label, module in (("redb reader", "importers.redb"), ("hemera", "hashing.hemera")):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            found[label] = "unavailable"
            continue
        found[label] = getattr(mod, "BACKEND", "python")
        details = getattr(mod, "details", None)
        if callable(details) and (text := details()):
            found[f"{label} C core"] = str(text)
    return found


def versions() -> dict[str, str]:
    """``{"bbg-migrate": version, "redb reader": ..., "hemera": ...}``."""
    from migrate import __version__

    return {"bbg-migrate": __version__, **active()}


def version_text() -> str:
    """What ``bbg-migrate --version`` prints (also its fast path in :mod:`migrate.entry`)."""
    found = versions()
    lines = [f"bbg-migrate {found.pop('bbg-migrate')}"]
    lines += [f"{name}: {impl}" for name, impl in found.items()]
    return "\n".join(lines)
