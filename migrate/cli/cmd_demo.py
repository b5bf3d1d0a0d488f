"""``bbg-migrate demo``: run the main job on a bundled legacy cell store."""

from __future__ import annotations

from migrate import demo
from migrate.cli import app


@app.command("demo")
def demo_cmd() -> None:
    """Unpack the bundled demo cell.redb into a temp directory and run the main job on it."""
    demo.run_demo()
