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
    view.progress(job, 0, 1024)  # the seal counts the bytes it has read
    text = _text(view)
    pct = 100 * 1024 // size
    assert f"running: logs/signals-small.log (1,024 of {size:,} bytes read ({pct} %))" in text
    assert "0 rows)" not in text
    view.progress(job, 0, 0)  # the next stage starts: what was shown stays
    assert "(1,024 of" in _text(view)
    view.progress(job, 17, 0)  # staging counts rows (its total not heard: none shown)
    text = _text(view)
    assert "running: logs/signals-small.log (17 rows)" in text and "17 rows;" in text
    view.finished(job, {"exit_code": 0, "rows": 44})
    assert "1/1 done" in _text(view) and "44 rows;" in _text(view)


def test_a_running_job_shows_its_stage_total_and_never_passes_it(tmp_path: Path) -> None:
    log = FIXTURES / "legacy" / "signals-small.log"
    job = SimpleNamespace(key="k", name="big", source=log)
    view = FleetView(Console(file=io.StringIO()), [job], "fleet run")
    view.started(job)
    view.progress(job, 17, 0, 44)
    assert "running: big (17 of 44 rows (38 %))" in _text(view)
    view.progress(job, 0, 7_210_207, 2_510_310)  # a counter past its total: no "of"
    text = _text(view)
    assert "running: big (7,210,207 bytes read)" in text and " of 2,510,310" not in text


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_eta_counts_down_while_one_large_job_runs(tmp_path: Path) -> None:
    """Two jobs: a small one finishes after 10 s; the large one (nine times its size) then
    runs.  The ETA is what is left at the finished jobs' speed, counted down from that
    finish -- it never grows with the elapsed time (8:37 -> 57:38 before)."""
    small, large = tmp_path / "small", tmp_path / "large"
    small.write_bytes(b"x" * 1000)
    large.write_bytes(b"x" * 9000)
    jobs = [SimpleNamespace(key=k, name=k, source=p) for k, p in (("s", small), ("l", large))]
    clock = _Clock()
    view = FleetView(Console(file=io.StringIO()), jobs, "fleet run", clock=clock)
    view.started(jobs[0])
    view.started(jobs[1])
    assert view.eta() == "?"  # no speed yet
    clock.now += 10
    view.finished(jobs[0], {"exit_code": 0, "rows": 5})
    assert view.eta() == "0:01:30"  # 9000 bytes at 1000 bytes / 10 s
    etas = []
    for _ in range(8):
        clock.now += 10
        etas.append(view.eta())
    assert etas[:3] == ["0:01:20", "0:01:10", "0:01:00"]
    assert etas == sorted(etas, reverse=True)
    clock.now += 200  # longer than foreseen: unknown, never a growing number
    assert view.eta() == "?"
    view.finished(jobs[1], {"exit_code": 0, "rows": 50})
    assert view.eta() == "0:00:00"
