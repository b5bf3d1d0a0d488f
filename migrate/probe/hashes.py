"""hemera for operators: the plain hash of files, the tree mode, and nox Data ids.

The verbs behind ``bbg-migrate hemera``: :func:`file_digest` (hemera of a file or stdin,
streaming), :func:`file_digests` (several inputs, hashed on every core, results in input
order), :func:`tree_leaf` (``hash_leaf(chunk, counter, is_root)`` of a file's bytes),
:func:`tree_node` (``hash_node(left, right, is_root)`` of two 32-byte chaining values given
in hex) and :func:`data_id` (the content id of a Data payload: nox Model B or the tagged
scheme, :mod:`hashing.nox`).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO

from bbg_core.errors import SourceError, UsageError, ValidationFailed
from hashing import hemera, nox
from migrate.job.mapping import hex_bytes
from migrate.progress import CountCallback, Observer, counter, file_size, stream_size

#: A leaf is read whole; hemera's tree uses 4 KiB chunks, this is a generous bound.
MAX_LEAF_BYTES = 16 * 1024 * 1024


def file_digest(
    name: str, *, progress: Observer | None = None, stop: threading.Event | None = None
) -> bytes:
    """hemera of the file ``name`` ('-': standard input), read in bounded chunks;
    ``progress`` an observer (stage ``hemera``, bytes out of the file's size; a pipe's total
    is unknown); ``stop`` set: :class:`Stopped` after the chunk being hashed."""
    if name == "-":
        report = counter(progress, "hemera", stream_size(sys.stdin.buffer), "bytes")
        return hemera.hash_stream(sys.stdin.buffer, progress=_stoppable(report, stop))
    report = counter(progress, "hemera", file_size(name), "bytes")
    return hemera.hash_file(name, progress=_stoppable(report, stop))


class Stopped(Exception):
    """A hash given up because its caller stopped waiting (Ctrl-C, a closed output)."""


def _stoppable(report: CountCallback | None, stop: threading.Event | None
               ) -> CountCallback | None:
    if stop is None:
        return report

    def tick(done: int) -> None:
        if stop.is_set():
            raise Stopped
        if report is not None:
            report(done)

    return tick


def hash_threads() -> int:
    """Files :func:`file_digests` hashes at once: the C core's threads (every core, or
    ``BBG_MIGRATE_HEMERA_THREADS``); 1 for the pure-Python twin, which holds the GIL."""
    return int(getattr(hemera.impl, "THREADS", 1)) if hemera.BACKEND == "c" else 1


class _InOrder:
    """An observer for one input that stays silent until its input is next in line, then
    passes on the latest report it held and everything after: inputs hashed at once still
    show their stages one after the other, in input order."""

    def __init__(self, observer: Observer) -> None:
        self._observer = observer
        self._lock = threading.Lock()
        self._held: tuple[str, int, int | None, str] | None = None
        self._live = False

    def __call__(self, stage: str, done: int, total: int | None, unit: str = "rows") -> None:
        with self._lock:
            if self._live:
                self._observer(stage, done, total, unit)
            else:
                self._held = (stage, done, total, unit)

    def go_live(self) -> None:
        with self._lock:
            self._live = True
            if self._held is not None:
                self._observer(*self._held)


def file_digests(
    names: Sequence[str],
    *,
    observers: Callable[[str], Observer | None] | None = None,
    threads: int | None = None,
) -> Generator[tuple[str, bytes | SourceError], None, None]:
    """``(name, hemera digest or the SourceError that made it unreadable)`` of each input,
    in input order, hashing up to ``threads`` files at once (default :func:`hash_threads`;
    the C core releases the GIL).  ``observers(name)``: the observer of one input's stage,
    reported in input order.  '-' (standard input) is read on the calling thread when its
    turn comes.  Each thread holds one read chunk; closing the iterator early stops the
    hashes still running after their current chunk."""
    want = hash_threads() if threads is None else max(1, threads)
    files = [n for n in names if n != "-"]
    workers = min(want, len(files))
    stop = threading.Event()
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hemera-file") \
        if workers > 1 else None
    relays: dict[int, _InOrder] = {}
    futures: dict[int, Future[bytes]] = {}
    try:
        if pool is not None:
            for i, name in enumerate(names):
                if name == "-":
                    continue
                observer = observers(name) if observers is not None else None
                if observer is not None:
                    relays[i] = _InOrder(observer)
                futures[i] = pool.submit(file_digest, name, progress=relays.get(i), stop=stop)
        for i, name in enumerate(names):
            result: bytes | SourceError
            try:
                if i in futures:
                    if i in relays:
                        relays[i].go_live()
                    result = futures.pop(i).result()
                else:
                    observer = observers(name) if observers is not None else None
                    result = file_digest(name, progress=observer)
            except SourceError as exc:
                result = exc
            yield name, result
    finally:
        stop.set()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _read_bounded(stream: BinaryIO, name: str) -> bytes:
    data = stream.read(MAX_LEAF_BYTES + 1)
    if len(data) > MAX_LEAF_BYTES:
        raise UsageError(
            f"{name}: a tree leaf is read whole; this input is over {MAX_LEAF_BYTES} bytes "
            "(hemera's tree hashes 4 KiB chunks)",
            path=name,
        )
    return bytes(data)


def tree_leaf(name: str, counter: int = 0, is_root: bool = False) -> bytes:
    """``hash_leaf(bytes of name, counter, is_root)`` ('-': standard input)."""
    if not 0 <= counter < 1 << 64:
        raise UsageError(f"--counter {counter}: must be 0 ... 2^64-1")
    if name == "-":
        data = _read_bounded(sys.stdin.buffer, "-")
    else:
        try:
            with open(name, "rb") as f:
                data = _read_bounded(f, name)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise SourceError(f"cannot read {name}: {reason}", path=os.fspath(name)) from exc
    return hemera.hash_leaf(data, counter, is_root)


def tree_node(left_hex: str, right_hex: str, is_root: bool = False) -> bytes:
    """``hash_node(left, right, is_root)`` of two chaining values in hex (32 bytes each)."""
    left = hex_bytes(left_hex, "LEFT", hemera.DIGEST_SIZE, empty_ok=True)
    right = hex_bytes(right_hex, "RIGHT", hemera.DIGEST_SIZE, empty_ok=True)
    return hemera.hash_node(left, right, is_root)


def data_id(payload_hex: str) -> tuple[bytes, nox.Node]:
    """The content id of a Data payload in hex (without the codec byte), and what it is.

    ``ValidationFailed`` (exit 3) naming the reason for a payload that is no nox encoding.
    """
    payload = hex_bytes(payload_hex, "PAYLOAD", empty_ok=True)
    try:
        node = nox.decode(payload)
        return nox.particle(payload), node
    except nox.NoxError as exc:
        raise ValidationFailed(f"{payload_hex}: {exc}", payload=payload_hex) from exc
