"""``bbg-migrate demo``: the main job on a bundled legacy store (cell-small, redb 2.6.3)."""

from __future__ import annotations

import gzip
import tempfile
from importlib import resources
from pathlib import Path

from rich.table import Table

from migrate.cli._render import out


def unpack_demo(dest_dir: Path) -> Path:
    """Write the bundled demo ``cell.redb`` into ``dest_dir`` and return its path."""
    data = resources.files(__package__).joinpath("cell-small.redb.gz").read_bytes()
    path = dest_dir / "cell.redb"
    path.write_bytes(gzip.decompress(data))
    return path


def run_demo() -> dict[str, object]:
    """Migrate the bundled demo store into a temporary BBG store and show the receipt.

    The same stages as ``bbg-migrate run`` (seal, stage, validate, activate), then an
    ``inspect`` of the destination, whose archive digest must equal the source's.
    """
    from migrate import pipeline
    from migrate.inspect import inspect_bbg

    with tempfile.TemporaryDirectory(prefix="bbg-migrate-demo-") as tmp:
        path = unpack_demo(Path(tmp))
        store = Path(tmp) / "bbg"
        out.print(f"demo: migrating the bundled legacy store {path.name} into {store.name}/ ...")
        outcome = pipeline.run(pipeline.Job(source=path, store=store))
        receipt = outcome.receipt
        assert receipt is not None
        after = inspect_bbg(store)
        table = Table("table", "rows", title="BBG store after the migration")
        for name, t in after["tables"].items():
            table.add_row(name, str(t["rows"]))
        out.print(table)
        same = after["archive_digest_sha256"] == receipt["digests"]["source_archive_sha256"]
        out.print(
            f"archive digest {after['archive_digest_sha256']} "
            f"{'equals' if same else 'DIFFERS FROM'} the source's; links valid: {after['valid']}"
        )
        out.print_json(data=receipt)
        return receipt
