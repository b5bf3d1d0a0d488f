"""Stores our writer made, read by the real crate: when ``BBG_FJALL_ORACLE`` names a program
(``$BBG_FJALL_ORACLE dump DIR`` prints the dump format on stdout, read with the real fjall),
its dump of each store must equal ours byte for byte.  Without it these tests say so and
skip: the evidence that does not need the oracle is in test_writer_evidence.py."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from migrate.store.fjall import open_keyspace
from migrate.store.fjall.report import dump_lines
from migrate.store.fjall.writer import append_batch, build_keyspace, publish_segments
from tests.fjall.conftest import extract


def oracle_or_skip() -> str:
    """The real-crate program ``BBG_FJALL_ORACLE`` names, or a skip that says so."""
    name = os.environ.get("BBG_FJALL_ORACLE")
    found = shutil.which(name) if name else None
    if not found:
        pytest.skip("BBG_FJALL_ORACLE not set: real-crate reader not available")
    return found


_oracle = oracle_or_skip


def oracle_dump(oracle: str, store: Path, scratch: Path) -> str:
    """The real crate's dump of ``store``, read from a copy (fjall changes what it opens)."""
    copy = scratch / f"copy-{len(list(scratch.glob('copy-*'))) if scratch.exists() else 0}"
    shutil.copytree(store, copy)
    try:
        res = subprocess.run([oracle, "dump", str(copy)], capture_output=True, text=True,
                             timeout=600, check=False)  # fmt: skip
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    assert res.returncode == 0, res.stderr
    return res.stdout


def _stores(tmp_path: Path) -> list[Path]:
    built = tmp_path / "built"
    rows = [(b"%06d" % i, bytes([i % 251]) * (i % 700)) for i in range(20000)]
    build_keyspace(built, {"data": rows, "empty": [], "one": [(b"k", b"v")]})
    published = tmp_path / "published"
    shutil.copytree(built, published)
    publish_segments(published, "data", [(b"%06d" % i, b"new") for i in range(0, 20000, 7)])
    publish_segments(published, "fresh", [(b"a", b"1"), (b"b", b"")])
    appended = tmp_path / "appended"
    shutil.copytree(published, appended)
    append_batch(appended, [("data", b"000000", None), ("one", b"k", b"v2"),
                            ("fresh", b"c", b"3")])  # fmt: skip
    real = extract("l0-overlap", tmp_path / "real")
    append_batch(real, [("overlap", b"\x00new", b"x")])
    return [built, published, appended, real]


def test_the_real_crate_reads_what_we_wrote(tmp_path: Path) -> None:
    oracle = _oracle()
    for store in _stores(tmp_path):
        with open_keyspace(store) as ks:
            ours = "".join(line + "\n" for line in dump_lines(ks))
        scratch = tmp_path / "oracle" / store.name
        shutil.copytree(store, scratch)  # opening with fjall changes the directory
        res = subprocess.run([oracle, "dump", str(scratch)], capture_output=True, text=True,
                             timeout=600, check=False)  # fmt: skip
        assert res.returncode == 0, res.stderr
        assert res.stdout == ours, store.name
