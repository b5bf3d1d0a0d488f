"""`bbg-migrate mcp` without the optional `mcp` package: a named usage error (runs whether or
not the extra is installed: the import of `mcp` is blocked in the child)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.procs import cli_env


def _db_bytes(store: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(store.iterdir())}


def test_missing_extra_is_a_named_usage_error(graph: Path) -> None:
    """Without the extra, `mcp` says which package to install (exit 2), and writes nothing."""
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'mcp' or name.startswith('mcp.'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "for m in [m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')]:\n"
        "    del sys.modules[m]\n"
        "from migrate.entry import main\n"
        "sys.argv = ['bbg-migrate', '--store', sys.argv[1], 'mcp']\n"
        "main()\n"
    )
    before = _db_bytes(graph)
    done = subprocess.run([sys.executable, "-c", code, str(graph)], capture_output=True,
                          stdin=subprocess.DEVNULL, env=cli_env(), cwd=ROOT, timeout=120)
    assert done.returncode == 2, done.stderr
    assert b"pip install 'bbg-migrate[mcp]'" in done.stderr
    assert _db_bytes(graph) == before
