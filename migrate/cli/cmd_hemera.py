"""``bbg-migrate hemera``: hemera digests printed like ``sha256sum``, and the tree mode.

    bbg-migrate hemera [FILE...|-]                                  plain hash of each input
    bbg-migrate hemera --tree leaf [--counter N] [--root] [FILE...|-]   hash_leaf of each input
    bbg-migrate hemera --tree node [--root] LEFT RIGHT              hash_node of two values
    bbg-migrate hemera --tree data PAYLOAD...                       nox Data id of each payload
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from contextlib import closing
from typing import Annotated, Any

import typer

from bbg_core.errors import SourceError, UsageError
from migrate import api
from migrate.cli import app
from migrate.cli._progress import labelled, watch, working
from migrate.cli._render import err

TREE_MODES = ("leaf", "node", "data")


def _line(digest: bytes, name: str) -> bytes:
    """``<hex>  <name>``; like sha256sum, a name with \\ or a newline is escaped and flagged."""
    raw = os.fsencode(name)  # bytes, so names that are not UTF-8 print unchanged
    if any(c in raw for c in b"\\\n\r"):
        raw = raw.replace(b"\\", b"\\\\").replace(b"\n", b"\\n").replace(b"\r", b"\\r")
        return b"\\" + digest.hex().encode() + b"  " + raw + b"\n"
    return digest.hex().encode() + b"  " + raw + b"\n"


@app.command("hemera")
def hemera_cmd(
    files: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="INPUT",
            help="Files to hash ('-' or none: standard input); with --tree node: LEFT RIGHT "
            "(64 hex each); with --tree data: Data payloads in hex.",
        ),
    ] = None,
    tree: Annotated[
        str | None,
        typer.Option(
            "--tree",
            metavar="MODE",
            help="Tree mode: leaf = hash_leaf(input, --counter, --root) of each file; node = "
            "hash_node(LEFT, RIGHT, --root); data = the nox Data id of each payload (an 8-byte "
            "atom: hash_leaf(v LE, 0, false); a 64-byte pair: hash_node(left, right, false); "
            "or the tagged-v0 scheme).",
        ),
    ] = None,
    counter: Annotated[
        int, typer.Option("--counter", min=0, metavar="N", help="--tree leaf: the chunk counter.")
    ] = 0,
    root: Annotated[bool, typer.Option("--root", help="--tree leaf/node: the ROOT flag.")] = False,
) -> None:
    """Print the hemera hash of each input as `<hex>  <name>`, like sha256sum (streaming);
    --tree for hemera's tree mode and nox Data ids."""
    if tree is not None and tree not in TREE_MODES:
        raise typer.BadParameter(f"must be one of {', '.join(TREE_MODES)}", param_hint="--tree")
    if tree != "leaf" and (counter or (root and tree is None)):
        raise UsageError("--counter applies to --tree leaf; --root to --tree leaf or node")
    if tree == "node":
        _node(files or [], root)
    elif tree == "data":
        _data(files or [], root)
    else:
        _files(files or ["-"], tree, counter, root)


def _node(values: list[str], root: bool) -> None:
    if len(values) != 2:
        raise UsageError("--tree node takes two chaining values: LEFT RIGHT (64 hex each)")
    digest = api.hemera_node(values[0], values[1], root)
    sys.stdout.buffer.write(digest.hex().encode() + b"\n")


def _data(payloads: list[str], root: bool) -> None:
    if root:
        raise UsageError("--root does not apply to --tree data (ids are never roots)")
    if not payloads:
        raise UsageError("--tree data takes one or more Data payloads in hex")
    for payload in payloads:
        got, node = api.nox_data_id(payload)
        sys.stdout.buffer.write(f"{got.hex()}  {node.scheme} {node.kind}\n".encode())


def _files(names: list[str], tree: str | None, counter: int, root: bool) -> None:
    if tree == "leaf":
        _each(names, lambda name: _leaf(name, counter, root))
        return
    # Several files are hashed at once (every core); results and progress come in order.
    watcher: list[Any] = [None]  # the watcher of the file whose turn it is

    def observe(name: str) -> Any:
        def report(stage: str, done: int, total: int | None, unit: str = "rows") -> None:
            shown = labelled(watcher[0], name)
            if shown is not None:
                shown(stage, done, total, unit)

        return report

    with closing(api.hemera_files(names, observers=observe)) as digests:

        def next_digest(name: str) -> bytes:
            with watch() as progress:  # one watcher, so one task, per file
                watcher[0] = progress
                got, result = next(digests)
                assert got == name
                if isinstance(result, SourceError):
                    raise result
                return result

        _each(names, next_digest)


def _leaf(name: str, counter: int, root: bool) -> bytes:
    with working(f"hemera {name}"):
        return api.hemera_leaf(name, counter, root)


def _each(names: list[str], digest_of: Callable[[str], bytes]) -> None:
    """``<hex>  <name>`` of each input in order; an unreadable one is reported on stderr and
    the others still hashed, as sha256sum does (exit 1 at the end)."""
    unreadable = 0
    for name in names:
        try:
            digest = digest_of(name)
        except SourceError as exc:  # report it and go on with the other files, as sha256sum
            if len(names) == 1:
                raise  # one input: its one-line error is the whole story
            err.print(f"error: {exc.message}", markup=False, soft_wrap=True)
            unreadable += 1
            continue
        sys.stdout.buffer.write(_line(digest, name))
        sys.stdout.buffer.flush()
    if unreadable:
        raise SourceError(f"{unreadable} of {len(names)} inputs could not be read")
