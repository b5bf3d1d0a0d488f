"""``file_digests`` (``bbg-migrate hemera`` with several files): the same digests and the
same order as one file at a time, several files hashed at once, progress in input order."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from bbg_core.errors import SourceError
from hashing import hemera
from migrate.probe import hashes


def _files(tmp_path: Path, big: bool = hemera.BACKEND == "c") -> list[str]:
    names = []
    for i, size in enumerate((3 << 20, 1, 0, (2 << 20) + 55, 100) if big else (5000, 1, 0, 4153)):
        p = tmp_path / f"f{i}"
        p.write_bytes(bytes((i * 7 + k) % 251 for k in range(min(size, 4096))) * (size // 4096)
                      + b"x" * (size % 4096))
        names.append(str(p))
    return names


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_same_digests_in_input_order(tmp_path: Path, threads: int) -> None:
    names = _files(tmp_path)
    missing = str(tmp_path / "missing")
    names.insert(2, missing)
    got = list(hashes.file_digests(names, threads=threads))
    assert [n for n, _ in got] == names
    for name, result in got:
        if name == missing:
            assert isinstance(result, SourceError) and "cannot read" in result.message
        else:
            assert result == hemera.hash(Path(name).read_bytes())


@pytest.mark.skipif(hemera.BACKEND != "c", reason="the twin holds the GIL: one file at a time")
def test_files_are_hashed_off_thread_and_reported_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = _files(tmp_path)
    hashed_on: list[str] = []
    real = hemera.hash_file

    def hash_file(path: str, **kw: object) -> bytes:
        hashed_on.append(threading.current_thread().name)
        return real(path, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(hashes.hemera, "hash_file", hash_file)
    calls: list[tuple[str, str, int]] = []
    lock = threading.Lock()

    def observers(name: str) -> hashes.Observer:
        def report(stage: str, done: int, total: int | None, unit: str = "rows") -> None:
            with lock:
                calls.append((name, threading.current_thread().name, done))

        return report

    got = dict(hashes.file_digests(names, observers=observers, threads=2))
    assert got == {n: hemera.hash(Path(n).read_bytes()) for n in names}
    # Every file was hashed on a pool thread, not the caller's ...
    assert {t.split("_")[0] for t in hashed_on} == {"hemera-file"}
    # ... and its reports arrived in input order, each file's done counts never falling.
    order = [n for i, (n, _, _) in enumerate(calls) if i == 0 or calls[i - 1][0] != n]
    assert order == names
    for n in names:
        done = [d for m, _, d in calls if m == n]
        assert done == sorted(done) and done[-1] == Path(n).stat().st_size


def test_closing_early_stops_the_rest(tmp_path: Path) -> None:
    names = _files(tmp_path)
    digests = hashes.file_digests(names, threads=2)
    first = next(digests)
    digests.close()  # waits for the running hashes to stop after their current chunk
    assert first == (names[0], hemera.hash(Path(names[0]).read_bytes()))
    assert not any(t.name.startswith("hemera-file") for t in threading.enumerate())


def test_hash_threads_follows_the_backend() -> None:
    if hemera.BACKEND == "c":
        assert hashes.hash_threads() == hemera.impl.THREADS  # type: ignore[attr-defined]
    else:
        assert hashes.hash_threads() == 1
