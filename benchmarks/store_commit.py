"""Commit throughput of the BBG store: single small commits, batched commits, bulk rows.

    .venv/bin/python benchmarks/store_commit.py [--commits N] [--batch B] [--dir DIR]

* single: one GraphPort ``commit`` per write transaction (each COMMIT is an fsync'd WAL
  append: synchronous=FULL), 2 content rows per commit;
* batched: the same commits, ``--batch`` of them per write transaction (``graph.publish``
  inside ``store.transaction()``), as a pipeline publishing pages would;
* bulk rows: ``tx.put_many`` of ``--page``-row transactions (a staging-style copy), once with
  keys in order (a source table copied in key order, as the pipeline does) and once with
  scattered keys (every row lands on a different B-tree page, so each COMMIT writes more).

Rows counted per commit: its content rows + history + head + request receipt.
Prints one line per mode; there are no assertions (numbers depend on the disk).
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
import time
from pathlib import Path

from migrate.store import Head, Store, open_store
from migrate.store.graph import publish


def _write(ns: bytes, prev: Head, i: int) -> tuple[bytes, Head, dict[bytes, bytes], bytes]:
    payload = b"\x01commit/" + ns + prev.commit + i.to_bytes(8, "little")
    commit = hashlib.sha256(payload).digest()
    event = b"\x00event/" + i.to_bytes(8, "little") * 8
    contents = {commit: payload, hashlib.sha256(event).digest(): event}
    request = hashlib.sha256(b"req" + ns + i.to_bytes(8, "little")).digest()
    return request, Head(prev.index + 1, commit), contents, hashlib.sha256(request).digest()


def _birth(store: Store, seed: str) -> tuple[bytes, Head]:
    payload = b"\x01birth/" + seed.encode()
    ns = hashlib.sha256(payload).digest()
    head = store.commit(ns, hashlib.sha256(ns).digest(), None, Head(0, ns), {ns: payload}, {}, ns)
    return ns, head


def single(store: Store, n: int) -> tuple[float, int]:
    ns, head = _birth(store, "single")
    rows = 0
    t0 = time.perf_counter()
    for i in range(1, n + 1):
        request, new, contents, fp = _write(ns, head, i)
        head = store.commit(ns, request, head, new, contents, {}, fp)
        rows += len(contents) + 3
    return time.perf_counter() - t0, rows


def batched(store: Store, n: int, batch: int) -> tuple[float, int]:
    ns, head = _birth(store, "batched")
    rows = 0
    t0 = time.perf_counter()
    i = 1
    while i <= n:
        with store.transaction() as tx:
            for _ in range(min(batch, n - i + 1)):
                request, new, contents, fp = _write(ns, head, i)
                head = publish(
                    tx,
                    reader_generation=store.reader_generation,
                    namespace=ns,
                    request=request,
                    expected=head,
                    new_head=new,
                    contents=contents,
                    claims={},
                    fingerprint=fp,
                )
                rows += len(contents) + 3
                i += 1
    return time.perf_counter() - t0, rows


def bulk(store: Store, n_rows: int, page: int, ordered: bool) -> tuple[float, int]:
    """``n_rows`` content rows in ``page``-row transactions; keys in order or scattered."""
    table = "application_content" if ordered else "application_unique_claims"
    t0 = time.perf_counter()
    done = 0
    while done < n_rows:
        count = min(page, n_rows - done)
        keys = (
            [(done + j).to_bytes(32, "big") for j in range(count)]
            if ordered
            else [hashlib.sha256((done + j).to_bytes(8, "little")).digest() for j in range(count)]
        )
        with store.transaction() as tx:
            tx.put_many(table, [(k, b"\x01" + bytes(200)) for k in keys])
        done += count
    return time.perf_counter() - t0, n_rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--page", type=int, default=512, help="rows per bulk transaction")
    ap.add_argument("--dir", type=Path, default=None, help="where to make the store (a temp dir)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        with open_store(Path(tmp) / "bbg", create=True) as store:
            secs, rows = single(store, args.commits)
            print(
                f"single commits : {args.commits / secs:10.0f} commits/s {rows / secs:10.0f} rows/s"
                f"  ({args.commits} commits, {secs:.2f} s)"
            )
            secs, rows = batched(store, args.commits * 10, args.batch)
            print(
                f"batched x{args.batch:<5}: {args.commits * 10 / secs:10.0f} commits/s "
                f"{rows / secs:10.0f} rows/s  ({args.commits * 10} commits, {secs:.2f} s)"
            )
            for ordered, label in ((True, "keys in order "), (False, "keys scattered")):
                secs, rows = bulk(store, args.rows, args.page, ordered)
                print(
                    f"bulk put_many, {label}: {rows / secs:10.0f} rows/s  "
                    f"({rows} rows of 233 B in {args.page}-row transactions, {secs:.2f} s)"
                )


if __name__ == "__main__":
    main()
