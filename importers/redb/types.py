"""Human display of redb's built-in types, decoded from their stored bytes.

Encodings from redb ``src/types.rs``, ``src/tuple_types.rs`` and ``src/complex_types.rs``:

* integers little endian; ``f32``/``f64`` IEEE little endian; ``bool`` one byte 0/1;
  ``char`` three bytes (u32 LE without its top byte); ``()`` no bytes;
* ``&str``/``String`` UTF-8; ``&[u8]`` raw; ``[u8;N]`` N raw bytes;
* ``Option<T>``: tag byte 0/1, then T (a fixed-width T is zero-padded when None);
* ``[T;N]``: fixed T concatenated, else N u32 end offsets then the elements;
* ``Vec<T>``: varint count, then each element (prefixed by a varint length if T is variable);
* tuples: fixed ones concatenated; variable ones prefix element lengths, except the last's.
  Up to redb 2.x (type-name classification 1) every element but the last gets a u32 length;
  from redb 3.0 (classification 3, or 4 for composites in 4.2) only variable elements do, as a
  varint (< 254: one byte; 254: u16 follows; 255: u32 follows).  ``(T,)`` is stored as ``T``.

Unknown or user-defined types are shown as hex; bytes that do not decode are shown as
``<invalid TYPE: 0x...>``.  Display never raises.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass

_INTS = {f"{s}{b}": (b // 8, s == "i") for s in "ui" for b in (8, 16, 32, 64, 128)}
CLASS_INTERNAL = 1
CLASS_USER_DEFINED = 2


class _Bad(ValueError):
    pass


@dataclass(frozen=True)
class _T:
    kind: str  # int, float, bool, char, unit, str, bytes, u8array, array, tuple, option, vec
    name: str
    args: tuple[_T, ...] = ()
    n: int = 0
    width_bytes: int = 0
    signed: bool = False


def _split_top(inner: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in inner:
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def parse_type(name: str) -> _T | None:
    """The structure of a redb type name, or None for anything not built in."""
    name = name.strip()
    if name in _INTS:
        size, signed = _INTS[name]
        return _T("int", name, width_bytes=size, signed=signed)
    if name in ("f32", "f64"):
        return _T("float", name, width_bytes=4 if name == "f32" else 8)
    simple = {
        "bool": "bool",
        "char": "char",
        "()": "unit",
        "&str": "str",
        "String": "str",
        "&[u8]": "bytes",
    }
    if name in simple:
        return _T(simple[name], name)
    if name.startswith("Option<") and name.endswith(">"):
        inner = parse_type(name[7:-1])
        return None if inner is None else _T("option", name, (inner,))
    if name.startswith("Vec<") and name.endswith(">"):
        inner = parse_type(name[4:-1])
        return None if inner is None else _T("vec", name, (inner,))
    if name.startswith("[") and name.endswith("]") and ";" in name:
        elem, _, count = name[1:-1].rpartition(";")
        if not count.strip().isdigit():
            return None
        n = int(count)
        if elem.strip() == "u8":
            return _T("u8array", name, n=n)
        inner = parse_type(elem)
        return None if inner is None else _T("array", name, (inner,), n=n)
    if name.startswith("(") and name.endswith(")") and name != "()":
        body = name[1:-1]
        parts = _split_top(body)
        if parts and parts[-1] == "":
            parts = parts[:-1]  # "(T,)"
            if len(parts) != 1:
                return None
            inner = parse_type(parts[0])
            return None if inner is None else _T("tuple1", name, (inner,))
        elems = [parse_type(p) for p in parts]
        if len(elems) < 2 or any(e is None for e in elems):
            return None
        return _T("tuple", name, tuple(e for e in elems if e is not None))
    return None


def fixed_width(t: _T) -> int | None:
    """The stored width of a fixed-width type, None for variable-width ones."""
    if t.kind in ("int", "float"):
        return t.width_bytes
    if t.kind == "bool":
        return 1
    if t.kind == "char":
        return 3
    if t.kind == "unit":
        return 0
    if t.kind == "u8array":
        return t.n
    if t.kind == "array":
        w = fixed_width(t.args[0])
        return None if w is None else w * t.n
    if t.kind == "option":
        w = fixed_width(t.args[0])
        return None if w is None else w + 1
    if t.kind == "tuple1":
        return fixed_width(t.args[0])
    if t.kind == "tuple":
        total = 0
        for e in t.args:
            w = fixed_width(e)
            if w is None:
                return None
            total += w
        return total
    return None


def _varint(raw: bytes, at: int) -> tuple[int, int]:
    if at >= len(raw):
        raise _Bad("varint past end")
    first = raw[at]
    if first < 254:
        return first, at + 1
    size = 2 if first == 254 else 4
    if at + 1 + size > len(raw):
        raise _Bad("varint past end")
    return int.from_bytes(raw[at + 1 : at + 1 + size], "little"), at + 1 + size


def _tuple_parts(t: _T, raw: bytes, legacy: bool) -> list[bytes]:
    widths = [fixed_width(e) for e in t.args]
    if all(w is not None for w in widths):
        out, at = [], 0
        for w in widths:
            assert w is not None
            out.append(raw[at : at + w])
            at += w
        if at != len(raw):
            raise _Bad("tuple length")
        return out
    lens: list[int] = []
    at = 0
    for w in widths[:-1]:
        if legacy:
            if at + 4 > len(raw):
                raise _Bad("tuple lengths past end")
            lens.append(int.from_bytes(raw[at : at + 4], "little"))
            at += 4
        elif w is None:
            length, at = _varint(raw, at)
            lens.append(length)
        else:
            lens.append(w)
    out = []
    for n in lens:
        if at + n > len(raw):
            raise _Bad("tuple element past end")
        out.append(raw[at : at + n])
        at += n
    out.append(raw[at:])
    return out


def _show(t: _T, raw: bytes, legacy: bool) -> str:
    w = fixed_width(t)
    if w is not None and len(raw) != w:
        raise _Bad("width")
    k = t.kind
    if k == "int":
        return str(int.from_bytes(raw, "little", signed=t.signed))
    if k == "float":
        (x,) = struct.unpack("<f" if t.width_bytes == 4 else "<d", raw)
        return repr(x) if math.isfinite(x) else str(x)
    if k == "bool":
        if raw[0] > 1:
            raise _Bad("bool")
        return "true" if raw[0] else "false"
    if k == "char":
        cp = int.from_bytes(raw, "little")
        if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
            raise _Bad("char")
        return "'" + json.dumps(chr(cp), ensure_ascii=False)[1:-1] + "'"
    if k == "unit":
        return "()"
    if k == "str":
        try:
            return json.dumps(raw.decode("utf-8"), ensure_ascii=False)
        except UnicodeDecodeError as exc:
            raise _Bad("utf-8") from exc
    if k in ("bytes", "u8array"):
        return "0x" + raw.hex()
    if k == "option":
        if not raw or raw[0] > 1:
            raise _Bad("option tag")
        if raw[0] == 0:
            return "None"
        return f"Some({_show(t.args[0], raw[1:], legacy)})"
    if k == "tuple1":
        return f"({_show(t.args[0], raw, legacy)},)"
    if k == "tuple":
        parts = _tuple_parts(t, raw, legacy)
        shown = [_show(e, p, legacy) for e, p in zip(t.args, parts, strict=True)]
        return "(" + ", ".join(shown) + ")"
    if k == "array":
        elem = t.args[0]
        ew = fixed_width(elem)
        items = []
        if ew is not None:
            items = [raw[i * ew : (i + 1) * ew] for i in range(t.n)]
        else:
            if 4 * t.n > len(raw):
                raise _Bad("array offsets")
            start = 4 * t.n
            for i in range(t.n):
                end = int.from_bytes(raw[4 * i : 4 * i + 4], "little")
                if not start <= end <= len(raw):
                    raise _Bad("array offset")
                items.append(raw[start:end])
                start = end
        return "[" + ", ".join(_show(elem, it, legacy) for it in items) + "]"
    if k == "vec":
        elem = t.args[0]
        ew = fixed_width(elem)
        count, at = _varint(raw, 0)
        if count > len(raw):
            raise _Bad("vec count")
        items = []
        for _ in range(count):
            n = ew
            if n is None:
                n, at = _varint(raw, at)
            if at + n > len(raw):
                raise _Bad("vec element")
            items.append(raw[at : at + n])
            at += n
        if at != len(raw):
            raise _Bad("vec trailing bytes")
        return "[" + ", ".join(_show(elem, it, legacy) for it in items) + "]"
    raise _Bad(k)


def format_value(type_name: str, raw: bytes, *, classification: int | None = None) -> str:
    """``raw`` (as stored by redb for ``type_name``) rendered for humans; never raises.

    ``classification`` is the stored type-name classification byte (``TableInfo``'s
    ``key_type_class`` / ``value_type_class``): 1 selects the pre-3.0 tuple encoding, 3 or 4
    the current one, 2 (user-defined) shows hex.  When None, the current encoding is tried
    first, then the old one.
    """
    raw = bytes(raw)
    try:
        t = None if classification == CLASS_USER_DEFINED else parse_type(type_name)
    except RecursionError:
        t = None
    if t is None:
        return "0x" + raw.hex()
    attempts = [classification == CLASS_INTERNAL] if classification else [False, True]
    for legacy in attempts:
        try:
            return _show(t, raw, legacy)
        except (_Bad, IndexError, struct.error, ValueError, OverflowError, RecursionError):
            continue
    return f"<invalid {type_name}: 0x{raw.hex()}>"
