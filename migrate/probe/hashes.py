"""hemera for operators: the plain hash of files, the tree mode, and nox Data ids.

The verbs behind ``bbg-migrate hemera``: :func:`file_digest` (hemera of a file or stdin,
streaming), :func:`tree_leaf` (``hash_leaf(chunk, counter, is_root)`` of a file's bytes),
:func:`tree_node` (``hash_node(left, right, is_root)`` of two 32-byte chaining values given
in hex) and :func:`data_id` (the content id of a Data payload: nox Model B or the tagged
scheme, :mod:`hashing.nox`).
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO

from bbg_core.errors import SourceError, UsageError, ValidationFailed
from hashing import hemera, nox
from migrate.job.mapping import hex_bytes
from migrate.progress import Observer, counter, file_size, stream_size

#: A leaf is read whole; hemera's tree uses 4 KiB chunks, this is a generous bound.
MAX_LEAF_BYTES = 16 * 1024 * 1024


def file_digest(name: str, *, progress: Observer | None = None) -> bytes:
    """hemera of the file ``name`` ('-': standard input), read in bounded chunks;
    ``progress`` an observer (stage ``hemera``, bytes out of the file's size; a pipe's total
    is unknown)."""
    if name == "-":
        report = counter(progress, "hemera", stream_size(sys.stdin.buffer), "bytes")
        return hemera.hash_stream(sys.stdin.buffer, progress=report)
    report = counter(progress, "hemera", file_size(name), "bytes")
    return hemera.hash_file(name, progress=report)


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
