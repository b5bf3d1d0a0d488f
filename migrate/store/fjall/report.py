"""The documents made from an open keyspace: the dump lines, ``info`` and ``check``.

* :func:`dump_lines` -- one JSON object per live row, exactly the real crate's dump format
  (``{"partition":"…","key":"<hex>","value":"<hex>"}``, sorted by partition name then key,
  both bytewise);
* :func:`info` -- journals (role, bytes, data bytes, batches, items, seqnos, torn tail),
  segments per level per partition, live rows, bytes, seqno range (``schemas/fjall-info``);
* :func:`check` -- everything :func:`info` reads plus every block of every segment against
  its index, metadata and bloom filter, the levels against the files on disk, and the key
  order of levels 1 and deeper; problems listed, the first one named (``schemas/fjall-check``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any

from bbg_core.errors import FjallCorrupt
from migrate.store.fjall import layout, levels
from migrate.store.fjall.reader import Keyspace

Progress = Callable[[int, int], None]  # (rows, bytes) so far


def dump_lines(ks: Keyspace, progress: Progress | None = None) -> Iterator[str]:
    """The dump of every partition's live rows (lines without their newline)."""
    rows = nbytes = 0
    for name in ks.partitions():
        head = '{"partition":' + json.dumps(name, ensure_ascii=False) + ',"key":"'
        for run in ks.scan_runs(name):
            for key, value in run:
                yield f'{head}{key.hex()}","value":"{value.hex()}"}}'
            if progress is not None:
                rows += len(run)
                nbytes += sum(len(k) + len(v) for k, v in run)
                progress(rows, nbytes)


def _levels_doc(ids: list[list[int]]) -> dict[str, list[int]]:
    return {f"L{n}": level for n, level in enumerate(ids) if level}


def _seqnos(values: list[int]) -> list[int] | None:
    return [min(values), max(values)] if values else None


def info(ks: Keyspace, progress: Progress | None = None) -> dict[str, Any]:
    """The ``info`` document (reads every live row to count them)."""
    parts: dict[str, Any] = {}
    total_rows = total_bytes = 0
    all_seqnos: list[int] = []
    done_rows = done_bytes = 0
    for name in ks.partitions():
        view = ks.view(name)
        rows = kv_bytes = 0
        for run in ks.scan_runs(name):
            rows += len(run)
            kv_bytes += sum(len(k) + len(v) for k, v in run)
            if progress is not None:
                progress(done_rows + rows, done_bytes + kv_bytes)
        done_rows += rows
        done_bytes += kv_bytes
        segs = [seg for _, seg in view.segments()]
        seqnos = [s.meta.seqno_min for s in segs] + [s.meta.seqno_max for s in segs]
        seqnos += [e[2] for e in view.journal]
        all_seqnos += seqnos
        seg_bytes = sum(s.size for s in segs)
        total_rows += rows
        total_bytes += seg_bytes
        parts[name] = {
            "rows": rows, "key_value_bytes": kv_bytes, "levels": _levels_doc(view.level_ids),
            "segments": len(segs), "segment_bytes": seg_bytes,
            "segment_items": sum(s.meta.item_count for s in segs),
            "journal_items": len(view.journal), "seqnos": _seqnos(seqnos),
        }  # fmt: skip
    journals = [j.doc() for j in ks.journals]
    for j in ks.journals:
        total_bytes += j.bytes
        if j.seqno_min is not None and j.seqno_max is not None:
            all_seqnos += [j.seqno_min, j.seqno_max]
    return {
        "kind": "fjall-info", "path": ks.path, "reader": ks.twin.NAME, "journals": journals,
        "journal_count": len(journals), "torn_tail": any(j.torn for j in ks.journals),
        "partition_count": len(parts), "partitions": parts, "rows": total_rows,
        "bytes": total_bytes, "seqnos": _seqnos(all_seqnos), "ignored": ks.ignored,
    }  # fmt: skip


def problem_of(exc: FjallCorrupt) -> dict[str, Any]:
    ctx = exc.context
    return {"path": str(ctx.get("path", "")), "offset": int(ctx.get("offset", 0)),
            "what": str(ctx.get("what", "")), "message": exc.message}  # fmt: skip


def check(ks: Keyspace, progress: Progress | None = None) -> dict[str, Any]:
    """The ``check`` document of an open keyspace (see the module docstring)."""
    problems: list[dict[str, Any]] = []
    notes: list[str] = []
    segments = blocks = items = 0
    for name in ks.partitions():
        view = ks.view(name)
        seg_folder = os.path.join(view.path, layout.SEGMENTS)
        listed = {sid for level in view.level_ids for sid in level}
        for fname in view.segment_files:
            if fname == ".DS_Store" or fname.startswith("._"):
                continue
            if not fname.isascii() or not fname.isdigit():
                problems.append({
                    "path": os.path.join(seg_folder, fname), "offset": 0, "what": "segment",
                    "message": f"{os.path.join(seg_folder, fname)}: a file that is not a "
                    "segment id in a segments folder (fjall refuses to open the partition)",
                })  # fmt: skip
            elif int(fname) not in listed:
                notes.append(f"{os.path.join(seg_folder, fname)}: not listed in levels (an "
                             "unfinished segment: fjall deletes it when it opens the keyspace)")
        for n, level in enumerate(view.levels):
            summary = [levels.Summary(s.id, s.meta.key_min, s.meta.key_max, 0) for s in level]
            if n > 0 and not levels.is_disjoint(summary):
                problems.append({
                    "path": os.path.join(view.path, layout.LEVELS), "offset": 0,
                    "what": "levels file",
                    "message": f"partition {name!r}: the key ranges of L{n}'s segments "
                    "overlap (leveled compaction keeps levels 1 and deeper disjoint)",
                })  # fmt: skip
            for seg in level:
                segments += 1
                try:
                    got = seg.verify()
                except FjallCorrupt as exc:
                    problems.append(problem_of(exc))
                    continue
                blocks += got["blocks"]
                items += got["items"]
                if progress is not None:
                    progress(items, blocks)
        try:
            for _run in ks.scan_runs(name):
                pass
        except FjallCorrupt as exc:
            problems.append(problem_of(exc))
    problems += _seqno_problems(ks)
    batches = sum(j.batches for j in ks.journals)
    return {
        "kind": "fjall-check", "path": ks.path, "reader": ks.twin.NAME, "ok": not problems,
        "problems": problems,
        "first_problem": problems[0]["message"] if problems else None,
        "notes": notes,
        "checked": {"journals": len(ks.journals), "journal_batches": batches,
                    "partitions": len(ks.partitions()), "segments": segments,
                    "blocks": blocks, "items": items},
    }  # fmt: skip


def _seqno_problems(ks: Keyspace) -> list[dict[str, Any]]:
    """What fjall's seqno counter guarantees and no checksum covers (a batch's seqno sits in
    its Start marker, outside the checksum): batches take ever higher seqnos, journal after
    journal; and an item in the active journal is newer than every segment of its
    partition (a flush seals the journal first).  fjall reads a keyspace that breaks these
    without complaint, so they are problems of ``check`` only."""
    out: list[dict[str, Any]] = []
    folder = os.path.join(ks.path, layout.JOURNALS)
    before: int | None = None
    for j in ks.journals:
        path = os.path.join(folder, j.name)
        if j.disorder is not None:
            at, seqno, prev = j.disorder
            out.append({"path": path, "offset": at, "what": "journal batch",
                        "message": f"{path}: batch seqno {seqno} at offset {at} is not above "
                        f"the one before it ({prev})"})  # fmt: skip
        elif before is not None and j.seqno_min is not None and j.seqno_min <= before:
            out.append({"path": path, "offset": 0, "what": "journal batch",
                        "message": f"{path}: its first batch seqno {j.seqno_min} is not above "
                        f"the previous journal's last ({before})"})  # fmt: skip
        if j.seqno_max is not None:
            before = j.seqno_max
    active = ks.active_journal_fd()
    for name in ks.partitions():
        view = ks.view(name)
        persisted = view.persisted_seqno
        if persisted is None or active is None:
            continue
        stale = [e for e in view.journal if e[7] == active and e[2] <= persisted]
        if stale:
            path = os.path.join(folder, ks.journals[-1].name)
            out.append({"path": path, "offset": stale[0][5], "what": "journal batch",
                        "message": f"{path}: partition {name!r} has an item with seqno "
                        f"{stale[0][2]} in the active journal, not above its segments' "
                        f"{persisted}"})  # fmt: skip
    return out


def check_path(path: str | os.PathLike[str], progress: Progress | None = None,
               **kwargs: Any) -> dict[str, Any]:
    """``check`` of the keyspace at ``path``, where failing to open is the first problem."""
    from migrate.store.fjall.reader import open_keyspace

    try:
        ks = open_keyspace(path, **kwargs)
    except FjallCorrupt as exc:
        problem = problem_of(exc)
        return {"kind": "fjall-check", "path": os.fspath(path), "reader": None, "ok": False,
                "problems": [problem],
                "first_problem": problem["message"], "notes": [],
                "checked": {"journals": 0, "journal_batches": 0, "partitions": 0,
                            "segments": 0, "blocks": 0, "items": 0}}  # fmt: skip
    with ks:
        return check(ks, progress)


def dump_path(path: str | os.PathLike[str], progress: Progress | None = None,
              **kwargs: Any) -> Iterator[str]:
    """The dump lines of the keyspace at ``path`` (opened for as long as they are read)."""
    from migrate.store.fjall.reader import open_keyspace

    with open_keyspace(path, **kwargs) as ks:
        yield from dump_lines(ks, progress)


def info_path(path: str | os.PathLike[str], progress: Progress | None = None,
              **kwargs: Any) -> dict[str, Any]:
    """The ``info`` document of the keyspace at ``path``."""
    from migrate.store.fjall.reader import open_keyspace

    with open_keyspace(path, **kwargs) as ks:
        return info(ks, progress)
