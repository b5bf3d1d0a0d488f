"""Hostile streams for ``apply`` and ``restore``.

* 18.2: every content row is checked exactly as a migration's content check does (Blob id =
  hemera(payload), and Data ids through the same function); one changed hex digit refuses the
  whole stream, naming its line, and leaves nothing behind.
* 18.3: memory is bounded by the per-event caps, not by the stream: the peak RSS of a child
  process applying a stream of big events grows with the event, not with the stream.
* 18.9: nesting deeper than the JSON parser goes and integers of thousands of digits are
  named refusals (exit 3), not ``internal error``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bbg_core.errors import ValidationFailed
from hashing import hemera
from migrate.share import apply, restore, write_snapshot
from migrate.share.common import canonical
from migrate.share.snapshot import line_hash
from migrate.store import open_store
from migrate.store.codec import ARCHIVE_ORDER
from tests.conftest import ROOT
from tests.share.conftest import run_cli
from tests.share.helpers import logical, stream, tail_bytes


def _blob_line(lines: list[bytes]) -> int:
    """Index of the first rows event carrying a Blob content row."""
    for i, line in enumerate(lines):
        doc = json.loads(line)
        if doc["kind"] == "rows" and any(a["value"].startswith("01") for a in doc["asserted"]):
            return i
    raise AssertionError("no Blob content in the stream")


def _flip_blob(line: bytes) -> bytes:
    """The same rows event with one hex digit of one Blob payload changed (still canonical)."""
    doc = json.loads(line)
    fact = next(a for a in doc["asserted"] if a["value"].startswith("01"))
    value = fact["value"]
    fact["value"] = value[:-1] + ("0" if value[-1] != "0" else "1")
    return canonical(doc)


# -- 18.2 -------------------------------------------------------------------------------------
def test_apply_refuses_a_blob_whose_bytes_do_not_match_its_id(
    cell_store: Path, tmp_path: Path
) -> None:
    lines = tail_bytes(cell_store).splitlines(keepends=True)
    n = _blob_line(lines)
    lines[n] = _flip_blob(lines[n])
    dest = tmp_path / "new"
    with pytest.raises(ValidationFailed) as info:
        apply(dest, stream(b"".join(lines)))
    assert info.value.context["line"] == n + 1
    assert info.value.context["errors"][0]["code"] == "content-id-mismatch"
    assert f"line {n + 1}" in info.value.message and "nothing was applied" in info.value.message
    assert not dest.exists()
    done = run_cli("apply", "-", "--store", str(dest), stdin=b"".join(lines))
    assert done.returncode == 3, done.stderr
    assert f"line {n + 1}".encode() in done.stderr


def test_apply_into_an_existing_store_changes_nothing_on_a_bad_blob(
    cell_store: Path, graph: Path
) -> None:
    lines = tail_bytes(cell_store).splitlines(keepends=True)
    n = _blob_line(lines)
    lines[n] = _flip_blob(lines[n])
    before = tail_bytes(graph)
    with pytest.raises(ValidationFailed):
        apply(graph, stream(b"".join(lines)))
    assert tail_bytes(graph) == before


def test_the_earliest_bad_line_is_named(cell_store: Path, tmp_path: Path) -> None:
    lines = tail_bytes(cell_store).splitlines(keepends=True)
    n = _blob_line(lines)
    lines[n] = _flip_blob(lines[n])
    lines.append(b"{not json\n")  # a later, different error
    with pytest.raises(ValidationFailed) as info:
        apply(tmp_path / "new", stream(b"".join(lines)))
    assert info.value.context["line"] == n + 1


def test_a_good_stream_still_applies_and_replays(cell_store: Path, tmp_path: Path) -> None:
    data = tail_bytes(cell_store)
    first = apply(tmp_path / "a", stream(data))
    again = apply(tmp_path / "a", stream(data))
    assert first["applied"] == first["events"] and again["replayed"] == again["events"]
    assert logical(tail_bytes(tmp_path / "a")) == logical(data)


def _reseal(lines: list[bytes]) -> list[bytes]:
    """Recompute every ``h``, the footer's counts, sha256 and archive digest (a snapshot
    doctored by someone who knows the format: only the content check can catch it)."""
    docs = [json.loads(x) for x in lines]
    rows: dict[str, list[tuple[bytes, bytes]]] = {t: [] for t in ARCHIVE_ORDER}
    for d in docs[1:-1]:
        if d.get("table") in rows:
            rows[d["table"]].append((bytes.fromhex(d["key"]), bytes.fromhex(d["value"])))
    digest = hashlib.sha256()
    for ordinal, table in enumerate(ARCHIVE_ORDER):
        digest.update(bytes([ordinal]))
        for key, value in sorted(rows[table]):
            digest.update(len(key).to_bytes(8, "little") + key)
            digest.update(len(value).to_bytes(8, "little") + value)
    out = []
    for d in docs[:-1]:
        d.pop("h", None)
        out.append(canonical({**d, "h": line_hash(d)}))
    footer = docs[-1]
    footer.pop("h")
    # every line but the creation time (line 2)
    footer["sha256"] = hashlib.sha256(b"".join(out[:1] + out[2:])).hexdigest()
    footer["archive_digest_sha256"] = digest.hexdigest()
    out.append(canonical({**footer, "h": line_hash(footer)}))
    return out


def test_restore_refuses_a_blob_whose_bytes_do_not_match_its_id(
    cell_store: Path, tmp_path: Path
) -> None:
    out = io.BytesIO()
    write_snapshot(cell_store, out, created_at=1)
    lines = out.getvalue().splitlines(keepends=True)
    n = next(
        i for i, x in enumerate(lines)
        if b'"table":"application_content"' in x and b'"value":"01' in x
    )  # fmt: skip
    doc = json.loads(lines[n])
    doc["value"] = doc["value"][:-1] + ("0" if doc["value"][-1] != "0" else "1")
    lines[n] = canonical(doc)
    doctored = b"".join(_reseal(lines))
    dest = tmp_path / "r"
    with pytest.raises(ValidationFailed) as info:
        restore(stream(doctored), dest)
    assert info.value.context["line"] == n + 1
    assert info.value.context["errors"][0]["code"] == "content-id-mismatch"
    assert not dest.exists()
    # the resealing itself is sound: the undamaged snapshot resealed restores
    restore(stream(b"".join(_reseal(out.getvalue().splitlines(keepends=True)))), tmp_path / "ok")


# -- 18.9 (streams) ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "line",
    [
        b"[" * 100_000 + b"]" * 100_000 + b"\n",
        b'{"a":' * 50_000 + b"1" + b"}" * 50_000 + b"\n",
        b'{"bbg":"event/1","index":' + b"7" * 5000 + b"}\n",
        b'{"index":' + b"9" * 4000 + b"}\n",
        b"[" * 900 + b"]" * 900 + b"\n",
    ],
    ids=["deep-list", "deep-object", "5000-digits", "4000-digits", "900-deep"],
)
def test_absurd_json_is_a_named_refusal(tmp_path: Path, line: bytes) -> None:
    for command in ("apply", "restore"):
        dest = tmp_path / command
        done = run_cli(command, "-", "--store", str(dest), stdin=line)
        assert done.returncode == 3, done.stderr
        assert b"internal error" not in done.stderr and b"line 1" in done.stderr
        assert not dest.exists()


# -- 18.3 --------------------------------------------------------------------------------------
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the (large) test process.
_PEAK = (
    "import sys\n"
    "from migrate.cli import main\n"
    "try:\n    main()\nfinally:\n"
    "    hwm = open('/proc/self/status').read().split('VmHWM:')[1].split()[0]\n"
    "    print('peak', hwm, file=sys.stderr)\n"
)


def _peak_kib(*args: str) -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, *args], capture_output=True, env=env, timeout=600,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return int(done.stderr.decode().rsplit("peak ", 1)[1].split()[0])


def _big_blob_store(directory: Path, count: int, size: int) -> Path:
    """A store of ``count`` Blob rows of ``size`` bytes (no history: each travels in a rows
    event of its own, its key group holding one row)."""
    rng = __import__("random").Random(count)
    with open_store(directory, create=True) as st, st.transaction() as tx:
        for _ in range(count):
            payload = rng.randbytes(size)
            tx.put("application_content", hemera.hash(payload), b"\x01" + payload)
    return directory


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
@pytest.mark.parametrize("command", ["apply", "restore"])
def test_memory_is_bounded_by_the_event_not_the_stream(tmp_path: Path, command: str) -> None:
    size = 3 << 20  # one row per event / record: a line of ~6 MiB of hex
    streams = {}
    for count in (0, 4, 16):
        store = _big_blob_store(tmp_path / f"s{count}", count, size)
        if command == "apply":
            data = tail_bytes(store)
        else:
            out = io.BytesIO()
            write_snapshot(store, out, created_at=1)
            data = out.getvalue()
        streams[count] = tmp_path / f"e{count}.ndjson"
        streams[count].write_bytes(data)
    longest = max(len(x) for x in streams[16].read_bytes().splitlines())
    assert longest > 2 * size
    peak = {n: _peak_kib(command, str(p), "--store", str(tmp_path / f"a{n}"))
            for n, p in streams.items()}  # fmt: skip
    mib = {n: k / 1024 for n, k in peak.items()}
    line_mib = longest / (1 << 20)
    # A stream four times as long needs no noticeably more memory: keeping the 12 extra
    # events would cost at least 36 MiB; the allowance is a couple of lines' worth for the
    # allocator's fragmentation (glibc moves its mmap threshold as big blocks are freed).
    assert mib[16] <= mib[4] + 2 * line_mib + 8, (mib, line_mib)
    # ... and one event costs a small multiple of its line, not the ~20x a regex took.
    assert mib[4] - mib[0] <= 8 * line_mib + 16, (mib, line_mib)
