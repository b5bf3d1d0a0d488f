"""``bbg-migrate demo``: the main job on a bundled legacy store (cell-small, redb 2.6.3).

:func:`run_demo` is a library function (no printing): it migrates the bundled ``cell.redb``
into a temporary store with the same stages as ``run``, inspects the result, and raises
:class:`~bbg_core.errors.ValidationFailed` unless the store's archive digest equals the
source's and its links are valid, so a broken build can never pass the demo.
"""

from __future__ import annotations

import gzip
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from bbg_core.errors import ValidationFailed


def unpack_demo(dest_dir: Path) -> Path:
    """Write the bundled demo ``cell.redb`` into ``dest_dir`` and return its path."""
    data = resources.files(__package__).joinpath("cell-small.redb.gz").read_bytes()
    path = dest_dir / "cell.redb"
    path.write_bytes(gzip.decompress(data))
    return path


def check(
    receipt: dict[str, Any], after: dict[str, Any], health: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The demo's verdict on a migration: its document, or ValidationFailed naming the gap.
    ``health``: the store's ``doctor`` report (on the Fjall engine: every checksum and bbg's
    open checks), whose problems are the demo's too."""
    source = receipt["digests"]["source_archive_sha256"]
    store = after["archive_digest_sha256"]
    doc = {
        "receipt": receipt,
        "tables": {name: t["rows"] for name, t in after["tables"].items()},
        "source_archive_sha256": source,
        "store_archive_sha256": store,
        "links_valid": after["valid"],
        "engine": (health or {}).get("engine", "sqlite"),
        "healthy": None if health is None else health["healthy"],
    }
    problems = [] if health is None else list(health["problems"])
    if store != source:
        problems.append(
            {"code": "digest-mismatch", "detail": f"store {store} differs from source {source}"}
        )
    if not after["valid"]:
        problems.append({"code": "links-invalid", "detail": str(after["errors"][:3])})
    if problems:
        raise ValidationFailed(
            f"demo failed: {problems[0]['code']}: {problems[0]['detail']}",
            errors=problems,
        )
    return doc


def run_demo() -> dict[str, Any]:
    """Migrate the bundled demo store into a temporary BBG store and check the result.

    The same stages as ``bbg-migrate run`` (seal, stage, validate, activate), into a store of
    the default engine (the real BBG database), then an ``inspect`` of the destination, whose
    archive digest must equal the source's, and its ``doctor`` report, which must be healthy
    (on the Fjall engine: every checksum, and bbg's open checks accept it).
    """
    from migrate import pipeline
    from migrate.probe.inspect import inspect_bbg
    from migrate.share.health import doctor

    with tempfile.TemporaryDirectory(prefix="bbg-migrate-demo-") as tmp:
        path = unpack_demo(Path(tmp))
        store = Path(tmp) / "bbg"
        outcome = pipeline.run(pipeline.Job(source=path, store=store))
        assert outcome.receipt is not None
        return check(outcome.receipt, inspect_bbg(store), doctor(store))
