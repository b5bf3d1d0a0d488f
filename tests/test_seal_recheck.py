"""The seal's checks (:mod:`fences.seal`): the cheap check sees every write, even one that
puts the mtime back (ctime); the seal's first hash and its full re-check may each run on a
thread of its own (:class:`fences.seal.BackgroundDigest`), giving the digest the inline hash
gives."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from bbg_core.errors import SourceError, ValidationFailed
from fences import seal as seal_mod
from fences.seal import seal
from tests.conftest import FIXTURES


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


def _slow_hashing(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make the seal's hashing take 2 ms a 1 MiB chunk; the list gets each chunk's count."""
    real = seal_mod.file_sha256
    chunks: list[int] = []

    def slow(p: Path, progress: object = None, *, size: int | None = None) -> str:
        def each(done: int) -> None:
            chunks.append(done)
            time.sleep(0.002)
            progress(done)  # type: ignore[operator]

        return real(p, each if progress is not None else None, size=size)

    monkeypatch.setattr(seal_mod, "file_sha256", slow)
    return chunks


def test_releasing_the_seal_stops_its_recheck(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _source(tmp_path, 64 << 20)
    with seal(path, "bin") as held:
        chunks = _slow_hashing(monkeypatch)
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


def test_a_background_seal_gives_the_inline_fingerprint(tmp_path: Path) -> None:
    """The same document, keys in the same order (receipts carry it as it is)."""
    path = _source(tmp_path)
    with seal(path, "bin") as inline:
        expected = inline.fingerprint
    with seal(path, "bin", background=True) as held:
        assert held.size == 3 << 20  # known before the hash ends
        got = held.fingerprint
        assert list(got) == list(expected) and got == expected
        held.check_unchanged(full=True)


def test_a_background_seal_of_a_redb_file_keeps_its_header_facts(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "cell.redb"
    path.write_bytes(gzip.decompress((FIXTURES / "legacy" / "cell-small.redb.gz").read_bytes()))
    with seal(path, "redb") as inline:
        expected = inline.fingerprint
    with seal(path, "redb", background=True) as held:
        assert list(held.fingerprint) == list(expected) == ["kind", "size_bytes", "sha256", "redb"]
        assert held.fingerprint == expected


def test_a_background_seal_sees_bytes_changed_while_it_hashed(tmp_path: Path) -> None:
    """A write after the seal took the source's identity (the mtime put back) is refused at
    the full check, whether the background hash read the byte before or after it changed."""
    path = _source(tmp_path)
    with seal(path, "bin", background=True) as held:
        _flip_keeping_mtime(path, 7)
        held.fingerprint  # noqa: B018 (wait for the hash)
        with pytest.raises(ValidationFailed, match="changed after it was sealed"):
            held.check_unchanged(full=True)


def test_a_background_seal_hands_its_error_to_whoever_needs_the_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _source(tmp_path)

    def unreadable(p: Path, progress: object = None, *, size: int | None = None) -> str:
        raise SourceError(f"{p}: cannot read", path=str(p))

    monkeypatch.setattr(seal_mod, "file_sha256", unreadable)
    with seal(path, "bin", background=True) as held:
        with pytest.raises(SourceError, match="cannot read"):
            held.fingerprint  # noqa: B018


def test_releasing_a_background_seal_stops_its_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _source(tmp_path, 64 << 20)
    chunks = _slow_hashing(monkeypatch)
    held = seal(path, "bin", background=True)
    held.release()
    with pytest.raises(RuntimeError, match="stopped"):
        held.fingerprint  # noqa: B018
    assert len(chunks) < 64
