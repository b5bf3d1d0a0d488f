"""The live view of ``fleet run`` (migrate/cli/_fleet_view.py): each running job in the unit
its stage counts.  A Signal log's seal reads bytes before any row exists; the view says
so instead of "0 rows"."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

from rich.console import Console

from migrate.cli._fleet_view import FleetView
from tests.conftest import FIXTURES


def _text(view: FleetView) -> str:
    console = Console(record=True, width=200, file=io.StringIO())
    console.print(view.render())
    return console.export_text()


def test_a_job_reading_bytes_shows_bytes_not_zero_rows(tmp_path: Path) -> None:
    log = FIXTURES / "legacy" / "signals-small.log"
    job = SimpleNamespace(key="k", name="logs/signals-small.log", source=log)
    view = FleetView(Console(file=io.StringIO()), [job], "fleet run")
    view.started(job)
    assert "running: logs/signals-small.log (starting)" in _text(view)
    size = log.stat().st_size
    view.progress(job, 0, 4096)  # the seal counts the bytes it has read
    text = _text(view)
    assert f"running: logs/signals-small.log (4,096 of {size:,} bytes read)" in text
    assert "0 rows)" not in text
    view.progress(job, 0, 0)  # the next stage starts: what was shown stays
    assert "(4,096 of" in _text(view)
    view.progress(job, 17, 0)  # staging counts rows
    text = _text(view)
    assert "running: logs/signals-small.log (17 rows)" in text and "17 rows;" in text
    view.finished(job, {"exit_code": 0, "rows": 44})
    assert "1/1 done" in _text(view) and "44 rows;" in _text(view)
