"""Which implementation (C via cffi, or pure Python) each hot path uses in this process."""

from __future__ import annotations

import importlib

#: The interface version of the Fjall C twin this build speaks (``_fjall.c``'s ``FJ_ABI``,
#: also ``migrate.store.fjall._c.ABI``; a test keeps the three equal).
FJALL_ABI = 4


def fjall_backend() -> str:
    """``c`` or ``python``: the Fjall twin this process uses, found without importing
    ``migrate.store`` (``--version`` loads no store code): the extension beside the package
    is loaded on its own and asked its interface version."""
    import sys
    from importlib import machinery, util
    from pathlib import Path

    from bbg_core.twins import pure

    loaded = sys.modules.get("migrate.store.fjall.backend")
    if loaded is not None:
        return str(loaded.BACKEND)
    if pure():
        return "python"
    folder = Path(__file__).resolve().parent.parent / "store" / "fjall"
    for suffix in machinery.EXTENSION_SUFFIXES:
        path = folder / f"_fjall_c{suffix}"
        if not path.exists():
            continue
        try:
            spec = util.spec_from_file_location("migrate.store.fjall._fjall_c", path)
            if spec is None or spec.loader is None:
                continue
            module = util.module_from_spec(spec)
            if module.abi() == FJALL_ABI:
                return "c"
        except (ImportError, AttributeError, OSError):
            continue
    return "python"


def active() -> dict[str, str]:
    """``{"redb reader": "c"|"python", "hemera": "c"|"python", "fjall reader": ...}`` for
    this process, and
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
    found["fjall reader"] = fjall_backend()
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
