"""The seal's checks (:mod:`fences.seal`): the cheap check sees every write, even one that
puts the mtime back (ctime), and the full re-check may run on a thread of its own once the
rows are read (:class:`fences.seal.Recheck`), giving the digest the inline re-hash gives."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from bbg_core.errors import SourceError, ValidationFailed
from fences import seal as seal_mod
from fences.seal import seal


def _source(tmp_path: Path, size: int = 3 << 20) -> Path:
    path = tmp_path / "source.bin"
    path.write_bytes(os.urandom(size))
    return path


def _flip_keeping_mtime(path: Path, at: int) -> None:
    st = path.stat()
    with open(path, "r+b") as fh:
        fh.seek(at)
        byte = fh.read(1)
        fh.seek(at)
        fh.write(bytes([byte[0] ^ 1]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns


def test_the_cheap_check_sees_a_write_that_puts_the_mtime_back(tmp_path: Path) -> None:
    path = _source(tmp_path)
    with seal(path, "bin") as held:
        held.check_unchanged()
        time.sleep(0.01)  # ctime has the clock's resolution
        _flip_keeping_mtime(path, 5)
        with pytest.raises(ValidationFailed, match="changed after it was sealed"):
            held.check_unchanged()


def test_a_background_recheck_gives_the_inline_digest(tmp_path: Path) -> None:
    path = _source(tmp_path)
    with seal(path, "bin") as held:
        recheck = held.recheck_in_background()
        assert recheck.digest() == held.fingerprint["sha256"]
        held.check_unchanged(full=True, recheck=recheck)


def test_a_background_recheck_sees_bytes_changed_before_it_read_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bytes flipped (the mtime put back) after sealing and before the re-hash: its digest
    differs, so the full check refuses even where the stat fields were made to match."""
    path = _source(tmp_path)
    with seal(path, "bin") as held:
        _flip_keeping_mtime(path, (3 << 20) - 1)
        recheck = held.recheck_in_background()
        assert recheck.digest() != held.fingerprint["sha256"]
        monkeypatch.setattr(seal_mod, "_identity", lambda st: held._stat)  # stat looks sealed
        with pytest.raises(ValidationFailed, match="changed after it was sealed"):
            held.check_unchanged(full=True, recheck=recheck)
        held.check_unchanged()  # the cheap check alone is fooled here: the bytes are not


def test_releasing_the_seal_stops_its_recheck(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _source(tmp_path, 64 << 20)
    real = seal_mod.file_sha256
    chunks: list[int] = []

    def slow(p: Path, progress: object = None, *, size: int | None = None) -> str:
        def each(done: int) -> None:
            chunks.append(done)
            time.sleep(0.002)
            progress(done)  # type: ignore[operator]

        return real(p, each if progress is not None else None, size=size)

    with seal(path, "bin") as held:
        monkeypatch.setattr(seal_mod, "file_sha256", slow)
        recheck = held.recheck_in_background()
    # Released: the thread stops at its next chunk, long before the 64 chunks.
    with pytest.raises(RuntimeError, match="stopped"):
        recheck.digest()
    assert len(chunks) < 64


def test_the_recheck_hands_its_error_to_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _source(tmp_path)

    def unreadable(p: Path, progress: object = None, *, size: int | None = None) -> str:
        raise SourceError(f"{p}: cannot read", path=str(p))

    with seal(path, "bin") as held:
        monkeypatch.setattr(seal_mod, "file_sha256", unreadable)
        recheck = held.recheck_in_background()
        with pytest.raises(SourceError, match="cannot read"):
            held.check_unchanged(full=True, recheck=recheck)
