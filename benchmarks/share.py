"""Throughput of the sharing surfaces: tail, apply, snapshot, restore, backup, doctor.

    .venv/bin/python benchmarks/share.py [--namespaces 100] [--commits 50] [--payload 1024]
                                         [--dir DIR] [--json]

Builds a store of ``namespaces x (commits + 1)`` history entries (through ``graph.publish``,
batched 500 per write transaction to keep setup short), each commit carrying its commit record
and one extra record of ``--payload`` bytes (so half the content rows are "orphans" that
travel in rows events), plus one unique claim per namespace.  Then times each verb on it once.
MB/s means 10^6 bytes of the verb's output stream (tail, snapshot), input stream (apply,
restore) or database file (backup) per second.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hashing import hemera
from migrate.share import apply_stream, backup, doctor, restore, tail, write_snapshot
from migrate.share.common import canonical
from migrate.store import DB_NAME, Head, open_store
from migrate.store.graph import publish


def _h(*parts: bytes) -> bytes:
    return hashlib.sha256(b"".join(parts)).digest()


def _blob(payload: bytes) -> tuple[bytes, bytes]:
    return hemera.hash(payload), b"\x01" + payload


def build(directory: Path, namespaces: int, commits: int, payload: int) -> int:
    """Create the benchmark store; returns the number of history entries."""
    filler = os.urandom(payload)
    writes = []
    for n in range(namespaces):
        # Blob rows (codec 01, id = hemera(payload)): content that apply and restore verify.
        ns, birth = _blob(b"birth/" + str(n).encode())
        writes.append((ns, _h(b"req", ns), None, Head(0, ns), {ns: birth}, {}))
        head = Head(0, ns)
        for i in range(commits):
            commit, record = _blob(b"commit/" + ns + head.commit)
            extra_id, extra = _blob(filler + commit)
            claims = {_h(b"claim", ns): _h(b"holder", ns)} if i == 0 else {}
            new = Head(head.index + 1, commit)
            writes.append((ns, _h(b"req", ns, commit), head, new, {commit: record,
                           extra_id: extra}, claims))  # fmt: skip
            head = new
    with open_store(directory, create=True) as st:
        for start in range(0, len(writes), 500):
            with st.transaction() as tx:
                for ns, req, expected, new, contents, claims in writes[start : start + 500]:
                    publish(tx, reader_generation=st.reader_generation, namespace=ns,
                            request=req, expected=expected, new_head=new, contents=contents,
                            claims=claims, fingerprint=_h(req, new.encode()))  # fmt: skip
    return len(writes)


def _timed(fn: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--namespaces", type=int, default=100)
    ap.add_argument("--commits", type=int, default=50)
    ap.add_argument("--payload", type=int, default=1024)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        base = Path(tmp)
        entries, t_build = _timed(lambda: build(base / "s", args.namespaces, args.commits,
                                                args.payload))  # fmt: skip
        events, t_tail = _timed(lambda: b"".join(canonical(e) for e in tail(base / "s")))
        n_events = events.count(b"\n")

        def do_apply() -> dict[str, Any]:
            with open_store(base / "a", create=True) as st:
                return apply_stream(st, io.BytesIO(events))

        _, t_apply = _timed(do_apply)
        out = io.BytesIO()
        _, t_snap = _timed(lambda: write_snapshot(base / "s", out))
        snap = out.getvalue()
        _, t_restore = _timed(lambda: restore(io.BytesIO(snap), base / "r"))
        _, t_backup = _timed(lambda: backup(base / "s", base / "b"))
        report, t_doctor = _timed(lambda: doctor(base / "s"))
        db_bytes = (base / "s" / DB_NAME).stat().st_size
        doc = {
            "history_entries": entries,
            "events": n_events,
            "event_bytes": len(events),
            "snapshot_bytes": len(snap),
            "db_bytes": db_bytes,
            "build_s": round(t_build, 3),
            "tail_events_per_s": round(n_events / t_tail),
            "tail_mb_per_s": round(len(events) / t_tail / 1e6, 1),
            "apply_events_per_s": round(n_events / t_apply),
            "apply_mb_per_s": round(len(events) / t_apply / 1e6, 1),
            "snapshot_mb_per_s": round(len(snap) / t_snap / 1e6, 1),
            "restore_mb_per_s": round(len(snap) / t_restore / 1e6, 1),
            "backup_mb_per_s": round(db_bytes / t_backup / 1e6, 1),
            "doctor_s": round(t_doctor, 3),
            "doctor_healthy": report["healthy"],
        }
    if args.json:
        print(json.dumps(doc, sort_keys=True))
    else:
        for key, value in doc.items():
            print(f"{key:>22}: {value}")


if __name__ == "__main__":
    main()
