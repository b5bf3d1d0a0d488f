"""Shared helpers of the legacy pipeline tests: fixtures, and reading records back."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from migrate.store import open_store
from migrate.store.codec import CONTENT, Head, history_key
from tests.legacy._support import LOCAL, expected, legacy_files

__all__ = [
    "LOCAL", "ONE_OF_EACH", "REFUSAL_OF_EACH", "copy_fixture", "expected", "legacy_files",
    "namespace_history", "records",
]  # fmt: skip

#: One local fixture of each legacy kind: Signal log, bbg frame log, TextArchive.
ONE_OF_EACH = ("signals-small.log", "bbg-cli-small.log", "texts-small.jsonl")
#: A refusal of each kind, with the flags it is read with (the bbg frame log: strictly).
REFUSAL_OF_EACH = (
    ("signals-overlong-leb.log", ()),
    ("bbg-cli-bad-flag.log", ("--strict",)),
    ("texts-invalid-particle.jsonl", ()),
)


def copy_fixture(name: str, dest: Path) -> Path:
    """A private copy of a local fixture and its expected JSON (the pipeline locks it)."""
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / name
    shutil.copyfile(LOCAL / name, target)
    shutil.copyfile(LOCAL / f"{name}.expected.json", dest / f"{name}.expected.json")
    return target


def namespace_history(store: Path, namespace: str) -> list[bytes]:
    """Every commit id of ``namespace`` in history order, read from the live store."""
    ns = bytes.fromhex(namespace)
    with open_store(store, maintenance=True) as s, s.snapshot() as tables:
        head = tables.get("application_heads", ns)
        assert head is not None
        last = Head.decode(head).index
        out = []
        for i in range(last + 1):
            commit = tables.get("application_history", history_key(ns, i))
            assert commit is not None, f"history index {i} missing"
            out.append(commit)
    return out


def records(store: Path, namespace: str) -> list[tuple[bytes, dict[str, Any], bytes]]:
    """(commit id, record document, exact Blob payload) for every history index."""
    commits = namespace_history(store, namespace)
    out = []
    with open_store(store, maintenance=True) as s, s.snapshot() as tables:
        for commit in commits:
            value = tables.get(CONTENT, commit)
            assert value is not None and value[0] == 1, "commit records are Blobs"
            out.append((commit, json.loads(value[1:]), bytes(value[1:])))
    return out


@contextmanager
def content_of(store: Path) -> Iterator[Callable[[bytes], bytes | None]]:
    """Reads content values of the live store from one snapshot, while the block runs (one
    opening of the store for many reads)."""
    with open_store(store, maintenance=True) as s, s.snapshot() as tables:

        def get(key: bytes) -> bytes | None:
            value: bytes | None = tables.get(CONTENT, key)
            return value

        yield get
