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


def run_demo() -> None:
    """Unpack the demo store to a temporary directory and show what the reader sees."""
    from importers.redb import open_redb

    with tempfile.TemporaryDirectory(prefix="bbg-migrate-demo-") as tmp:
        path = unpack_demo(Path(tmp))
        with open_redb(path) as db:
            h = db.header
            out.print(
                f"demo cell.redb: redb file format {h.format_version}, page size {h.page_size}, "
                f"transaction {h.transaction_id}, recovery required: {h.recovery_required}"
            )
            table = Table("table", "kind", "key type", "value type", "rows")
            for t in db.tables():
                table.add_row(t.name, t.kind, t.key_type, t.value_type, str(t.length))
            out.print(table)
