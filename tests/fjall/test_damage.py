"""Damaged keyspaces: truncated, bit-flipped, spliced and length-edited journals, segments,
levels, config, manifest and version files (seeded; a few hundred in the default run,
thousands with ``-m slow``).

Each one must give a named error with the file, offset and structure -- or, where the
damage hit bytes no reader depends on, the same rows as before; rows that differ are only
allowed when the damage is a torn journal tail (a truncated journal is one: fjall drops its
cut batch, and ``info`` reports it) or when ``check`` reports a problem (a field no checksum
covers, such as a batch's seqno, which fjall reads the same way).  Never another
exception, never a hang (an alarm per case), never memory beyond the bound; and both twins
give the same outcome.  Torn journal tails are cut at many positions of the last batch
(plain and zero-padded) and read as fjall reads them.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bbg_core.errors import FjallCorrupt, FjallError, FjallUnsupported, MigrateError
from migrate.store.fjall import backend, open_keyspace
from migrate.store.fjall import report as fjreport
from migrate.store.fjall.report import dump_lines
from tests.fjall.conftest import extract

CASES = ["keys-edge", "l0-overlap", "tombstones", "torn-tail", "many-partitions",
         "bbg-small", "one-segment", "value-sizes"]  # fmt: skip
TWINS = backend.available()
#: Peak Python allocations while reading (scan and check) one damaged keyspace: a few
#: copies of its largest block (value-sizes: one value of 16 MiB + 1 -- the block as read,
#: decompressed, and the value itself), plus read-ahead and journal windows.
BIGGEST_BLOCK = (16 << 20) + 64
MEMORY_BOUND = 4 * BIGGEST_BLOCK + (8 << 20)


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def outcome(path: Path, twin: str) -> tuple[Any, ...]:
    """What reading ``path`` gives: ("rows", dump sha256, check ok) or ("error", ...)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(20)
    try:
        with open_keyspace(path, backend_name=twin) as ks:
            h = hashlib.sha256()
            for line in dump_lines(ks):
                h.update(line.encode() + b"\n")
            ok = fjreport.check(ks)["ok"]
            torn = any(j.torn is not None for j in ks.journals)
        return ("rows", h.hexdigest(), ok, torn)
    except MigrateError as exc:
        return ("error", type(exc).__name__, exc.message, tuple(sorted(
            (k, str(v)) for k, v in exc.context.items())))  # fmt: skip
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def read_only(path: Path, twin: str) -> None:
    """Read every row and check everything, keeping nothing (for memory measurements)."""
    try:
        with open_keyspace(path, backend_name=twin) as ks:
            for name in ks.partitions():
                for run in ks.scan_runs(name):
                    del run
            fjreport.check(ks)
    except MigrateError:
        pass


def _targets(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _data_end(data: bytes) -> int:
    """Where a pre-allocated journal's non-zero bytes end (mutations aim before it)."""
    stripped = data.rstrip(b"\0")
    return len(stripped)


def mutations(rng: random.Random, files: list[Path]) -> Iterator[tuple[Path, str, bytes]]:
    """Endless seeded mutations: (file, description, new content)."""
    contents = {f: f.read_bytes() for f in files}
    while True:
        f = rng.choice(files)
        data = contents[f]
        end = max(1, min(len(data), _data_end(data) + 64)) if "journals" in f.parts else len(data)
        kind = rng.choice(["truncate", "flip", "flip", "splice", "length", "zero"])
        if not data:
            yield f, "append", b"\x01"
            continue
        pos = rng.randrange(end)
        if kind == "truncate":
            yield f, f"truncate at {pos}", data[:pos]
        elif kind == "flip":
            bit = rng.randrange(8)
            out = bytearray(data)
            out[pos] ^= 1 << bit
            yield f, f"flip bit {bit} at {pos}", bytes(out)
        elif kind == "splice":
            n = rng.randrange(1, 64)
            src = rng.randrange(max(1, end - n))
            out = bytearray(data)
            out[pos : pos + n] = data[src : src + n]
            yield f, f"splice {n} bytes from {src} at {pos}", bytes(out)
        elif kind == "length":
            width = rng.choice([1, 2, 4, 8])
            pos = min(pos, max(0, len(data) - width))
            field = int.from_bytes(data[pos : pos + width], "big")
            delta = rng.choice([-1, 1, 2, -2, 1 << 16, 1 << 31])
            field = (field + delta) % (1 << (8 * width))
            yield f, f"length {width}B at {pos} {delta:+}", (
                data[:pos] + field.to_bytes(width, "big") + data[pos + width :])
        else:
            n = rng.randrange(1, 32)
            yield f, f"zero {n} bytes at {pos}", data[:pos] + bytes(n) + data[pos + n :]


def _check_outcome(root: Path, what: str, got: tuple[Any, ...], clean: tuple[Any, ...]) -> None:
    if got[0] == "rows":
        # other rows only as fjall reads a torn journal tail (a cut file is one), or with a
        # problem that check names
        assert got[1] == clean[1] or got[3] or got[2] is False, f"{what}: other rows"
        return
    kind, message, context = got[1], got[2], dict(got[3])
    assert kind in {"FjallCorrupt", "FjallUnsupported", "FjallError", "SourceError"}, (what, got)
    assert "path" in context, (what, got)
    assert context["path"].startswith(str(root)), (what, got)
    if kind == "FjallCorrupt":
        assert int(context["offset"]) >= 0 and context["what"], (what, got)
        assert "damaged" in message and context["path"] in message, (what, got)


def _run(case: str, tmp_path: Path, seed: int, count: int) -> None:
    root = extract(case, tmp_path)
    for jpath in (root / "journals").iterdir():  # pre-allocation: keep 4 KiB of its zeros
        data = jpath.read_bytes()
        jpath.write_bytes(data[: _data_end(data) + 4096])
    clean = outcome(root, TWINS[-1])
    assert clean[0] == "rows" and clean[2], clean
    files = _targets(root)
    rng = random.Random(f"{case}/{seed}")
    gen = mutations(rng, files)
    for _ in range(count):
        f, desc, content = next(gen)
        original = f.read_bytes()
        f.write_bytes(content)
        try:
            what = f"{case}: {f.relative_to(root)}: {desc}"
            results = [outcome(root, twin) for twin in TWINS]
            assert all(r == results[0] for r in results), (what, results)
            _check_outcome(root, what, results[0], clean)
        finally:
            f.write_bytes(original)


@pytest.mark.parametrize("case", CASES)
def test_damage_gives_named_errors_or_the_same_rows(case: str, tmp_path: Path) -> None:
    _run(case, tmp_path, seed=1, count=40)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("seed", range(2, 12))
def test_damage_many(case: str, seed: int, tmp_path: Path) -> None:
    _run(case, tmp_path, seed=seed, count=60)


def test_memory_stays_bounded_on_damage(tmp_path: Path) -> None:
    root = extract("value-sizes", tmp_path)
    gen = mutations(random.Random("memory"), _targets(root))
    tracemalloc.start()
    try:
        for _ in range(25):
            f, desc, content = next(gen)
            original = f.read_bytes()
            f.write_bytes(content)
            try:
                tracemalloc.reset_peak()
                read_only(root, TWINS[0])
                peak = tracemalloc.get_traced_memory()[1]
                assert peak < MEMORY_BOUND, (desc, peak)
            finally:
                f.write_bytes(original)
    finally:
        tracemalloc.stop()


def test_length_fields_never_drive_allocations(tmp_path: Path) -> None:
    """Huge lengths in every length field a reader meets: named errors, little memory."""
    root = extract("keys-edge", tmp_path)
    seg = root / "partitions" / "keys" / "segments" / "1"
    jr = root / "journals" / "1"
    cases = []
    data = seg.read_bytes()
    # the first data block's stored length, and the metadata's key-range lengths
    cases.append((seg, data[:22] + b"\xff\xff\xff\xf0" + data[26:]))
    meta_at = int.from_bytes(data[-256:-248], "big")
    cases.append((seg, data[: meta_at + 111] + b"\xff\xff" + data[meta_at + 113 :]))
    j = jr.read_bytes()
    # the first item's value length
    plen = j[17]
    klen_at = 15 + 3 + plen
    klen = int.from_bytes(j[klen_at : klen_at + 2], "big")
    vlen_at = klen_at + 2 + klen
    cases.append((jr, j[:vlen_at] + b"\xff\xff\xff\xff" + j[vlen_at + 4 :]))
    levels = root / "partitions" / "keys" / "levels"
    lv = levels.read_bytes()
    cases.append((levels, lv[:5] + b"\xff\xff\xff\xff" + lv[9:]))
    tracemalloc.start()
    try:
        for f, content in cases:
            original = f.read_bytes()
            f.write_bytes(content)
            try:
                tracemalloc.reset_peak()
                for twin in TWINS:
                    got = outcome(root, twin)
                    assert got[0] == "error" and got[1] == "FjallCorrupt", got
                assert tracemalloc.get_traced_memory()[1] < 8 << 20
            finally:
                f.write_bytes(original)
    finally:
        tracemalloc.stop()


def _batches(journal: bytes) -> list[int]:
    """The offsets where batches start, and the end of the last complete one."""
    from migrate.store.fjall import journal as jmod

    found, _stop, _code = jmod.markers(journal, 0)
    starts = [m[1] for m in found if m[0] == jmod.START]
    ends = [m[2] for m in found if m[0] == jmod.END]
    return starts + ends[-1:]


@pytest.mark.parametrize("case", ["many-partitions", "tombstones", "keys-edge"])
def test_a_torn_tail_reads_as_fjall_reads_it(case: str, tmp_path: Path) -> None:
    root = extract(case, tmp_path)
    (jpath,) = sorted((root / "journals").iterdir())
    data = jpath.read_bytes()
    offsets = _batches(data)
    last_start, data_end = offsets[-2], offsets[-1]
    # the state without the last batch: the journal cut at its start
    jpath.write_bytes(data[:last_start])
    before = outcome(root, TWINS[0])
    rng = random.Random(case)
    inner = range(last_start + 1, data_end)
    cuts = sorted({last_start + 1, last_start + 15, data_end - 13, data_end - 1,
                   *rng.sample(inner, min(8, len(inner)))})  # fmt: skip
    for cut in cuts:
        for padded in (False, True):
            content = data[:cut] + (bytes(64 << 10) if padded else b"")
            jpath.write_bytes(content)
            for twin in TWINS:
                assert outcome(root, twin)[:3] == before[:3], (cut, padded, twin)
            with open_keyspace(root) as ks:
                (j,) = ks.journals
                assert j.torn is not None and j.torn.batch_start == last_start, (cut, padded)
                assert j.data_bytes == last_start
                assert fjreport.info(ks)["torn_tail"] is True
    jpath.write_bytes(data)


def test_mid_journal_damage_is_not_read_as_a_torn_tail(tmp_path: Path) -> None:
    root = extract("many-partitions", tmp_path)
    (jpath,) = sorted((root / "journals").iterdir())
    data = jpath.read_bytes()
    second = _batches(data)[1]
    jpath.write_bytes(data[:second] + b"\x07" + data[second + 1 :])  # an unknown tag
    with pytest.raises(FjallCorrupt, match="not a torn tail") as err:
        open_keyspace(root)
    assert err.value.context["offset"] == second
    assert err.value.context["what"].startswith("journal")


def test_unsupported_and_missing_things_are_named(tmp_path: Path) -> None:
    root = extract("one-segment", tmp_path)
    (root / "version").write_bytes(b"FJL\x01")
    with pytest.raises(FjallUnsupported, match="version 1"):
        open_keyspace(root)
    (root / "version").write_bytes(b"FJL\x02")
    (root / "partitions" / "data" / "blobs").mkdir()
    with pytest.raises(FjallUnsupported, match="'data' separates keys and values"):
        open_keyspace(root)
    (root / "partitions" / "data" / "blobs").rmdir()
    (root / "partitions" / "data" / "segments" / "1").unlink()
    with pytest.raises(FjallCorrupt, match="listed in levels but missing"):
        open_keyspace(root)
    shutil.rmtree(root / "partitions")
    with pytest.raises(FjallCorrupt, match="partitions folder"):
        open_keyspace(root)
    (root / "version").unlink()
    with pytest.raises(FjallError, match="not a Fjall keyspace"):
        open_keyspace(root)
    assert not os.path.exists(root / "version")


@pytest.mark.parametrize(("target", "edit", "code"), [
    ("journals/2", lambda d: d[:100] + bytes([d[100] ^ 1]) + d[101:], 3),  # batch checksum
    ("partitions/tomb/levels", lambda d: d[:-3], 3),
    ("partitions/tomb/config", lambda d: d[:-1], 3),
    ("partitions/tomb/manifest", lambda d: d[:4] + b"\x07" + d[5:], 3),
    ("partitions/tomb/segments/1", lambda d: d[:-1], 3),
    ("version", lambda d: b"FJL\x01", 1),
])  # fmt: skip
def test_the_cli_names_damage_without_a_traceback(
    target: str, edit: Any, code: int, tmp_path: Path
) -> None:
    import subprocess
    import sys

    from tests.conftest import ROOT

    root = extract("tombstones", tmp_path)
    path = root / target
    path.write_bytes(edit(path.read_bytes()))
    for command in ("dump", "info", "check"):
        res = subprocess.run([sys.executable, "-m", "migrate", "fjall", command, str(root)],
                             capture_output=True, text=True, cwd=ROOT, timeout=120,
                             check=False)  # fmt: skip
        assert res.returncode == code, (command, res.stderr)
        assert "Traceback" not in res.stderr, res.stderr
        (line,) = [x for x in res.stderr.splitlines() if x.startswith("error: ")]
        assert str(path) in line, res.stderr
