"""Shared helpers of the pipeline tests: fixtures, CLI runs, tree hashes."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES, shared_fixtures

LEGACY = FIXTURES / "legacy"


def cell_fixtures(pattern: str = "cell-*.redb.gz") -> list[Path]:
    """Local cell fixtures, plus the full shared set's extra files when available."""
    found = {p.name: p for p in sorted(LEGACY.glob(pattern))}
    shared = shared_fixtures()
    if shared is not None:
        for p in sorted((shared / "legacy").glob(pattern)):
            found.setdefault(p.name, p)
    return [found[k] for k in sorted(found)]


def expected(gz: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(
        gz.with_name(gz.name.replace(".redb.gz", ".expected.json")).read_text()
    )
    return doc


def unpack(gz: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / "cell.redb"
    path.write_bytes(gzip.decompress(gz.read_bytes()))
    return path


def cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=full,
    )


def tree_state(*roots: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``roots`` -> (sha256, mtime_ns); directories as markers."""
    out: dict[str, tuple[str, int]] = {}
    for root in roots:
        if not root.exists():
            out[str(root)] = ("absent", 0)
            continue
        for dirpath, _dirnames, filenames in os.walk(root):
            out[dirpath] = ("dir", 0)
            for name in filenames:
                p = Path(dirpath) / name
                st = p.stat()
                out[str(p)] = (hashlib.sha256(p.read_bytes()).hexdigest(), st.st_mtime_ns)
    return out
