"""The one way to parse a JSON or TOML document a user hands us (a mapping file, an options
file, a fleet manifest or report, a follower's output line, a record in a store).

Whatever the bytes are -- not UTF-8, not JSON/TOML, nested 100,000 levels deep, an integer
of more digits than Python parses -- the answer is the caller's error class (a
:class:`UsageError` for a file the user wrote, a :class:`SourceError` or ``StoreCorrupt`` for
one we wrote and found changed) with one line naming the file and what is wrong; never a
``UnicodeDecodeError`` or a ``RecursionError``.  A document nested deeper than
:data:`MAX_DEPTH` is refused as well: no document of ours is anywhere near that deep, and
checking it (JSON Schema, canonical form) would recurse as deep again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bbg_core.errors import MigrateError, UsageError

#: No document bbg-migrate reads nests deeper than a few levels; this is far beyond any.
MAX_DEPTH = 64


def _depth_over(doc: Any, limit: int) -> bool:
    """Whether ``doc`` nests containers more than ``limit`` deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(doc, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _fail(error: type[MigrateError], name: str, problem: str, hint: str,
          **context: Any) -> MigrateError:  # fmt: skip
    return error(f"{name}: {problem}; {hint}", path=name, **context)


def parse(data: bytes | str, path: str | os.PathLike[str], *, fmt: str = "json",
          hint: str = "", error: type[MigrateError] = UsageError) -> Any:  # fmt: skip
    """``data`` (the bytes of the file ``path``) parsed as ``fmt`` ("json" or "toml").

    Every way it can fail is ``error`` with the one line ``PATH: PROBLEM; HINT`` (``hint``
    says what to do; by default, to fix or replace the file): not UTF-8 (with the byte
    offset), not JSON/TOML (with the line), nested too deeply.
    """
    name = os.fspath(path)
    hint = hint or "correct the file or name another one"
    kind = "TOML" if fmt == "toml" else "JSON"
    try:
        text = data.decode("utf-8") if isinstance(data, bytes | bytearray) else data
    except UnicodeDecodeError as exc:
        raise _fail(error, name, f"not UTF-8 text (byte {exc.start}), so not {kind}", hint,
                    offset=exc.start) from exc  # fmt: skip
    try:
        if fmt == "toml":
            import tomllib

            try:
                doc: Any = tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                raise _fail(error, name, f"not TOML: {exc}", hint) from exc
        else:
            try:
                doc = json.loads(text)
            except json.JSONDecodeError as exc:
                raise _fail(error, name, f"line {exc.lineno}: not JSON: {exc.msg}", hint,
                            line=exc.lineno) from exc  # fmt: skip
    except RecursionError as exc:
        raise _fail(error, name, f"{kind} nested more than {MAX_DEPTH} levels deep", hint) from exc
    except ValueError as exc:  # an integer of more digits than Python converts
        raise _fail(error, name, f"not {kind} this tool can read: {str(exc)[:120]}", hint) from exc
    if _depth_over(doc, MAX_DEPTH):
        raise _fail(error, name, f"{kind} nested more than {MAX_DEPTH} levels deep", hint)
    return doc


def read(path: str | os.PathLike[str], *, fmt: str = "json", hint: str = "",
         error: type[MigrateError] = UsageError) -> Any:  # fmt: skip
    """The regular file ``path``, read and parsed by :func:`parse`.  A file that cannot be read is
    the one ``PATH: cannot read: REASON`` error (exit 1); a FIFO or device is refused, never
    waited on."""
    from bbg_core.files import cannot_read, open_regular

    fd = open_regular(Path(path))
    try:
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read()
    except OSError as exc:
        raise cannot_read(path, exc) from exc
    finally:
        os.close(fd)
    return parse(data, path, fmt=fmt, hint=hint, error=error)


__all__ = ["MAX_DEPTH", "parse", "read"]
