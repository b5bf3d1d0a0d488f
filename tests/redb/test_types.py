"""Typed display of redb's built-in types (``format_value``), and page-number helpers."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from importers.redb import format_value, open_redb
from importers.redb.layout import Layout, decode_page_number, page_label, recalculate
from tests.redb.cases import Case, local_case


@pytest.mark.parametrize(
    ("type_name", "raw", "shown"),
    [
        ("u64", struct.pack("<Q", 2**64 - 1), "18446744073709551615"),
        ("i64", struct.pack("<q", -5), "-5"),
        ("u8", b"\x07", "7"),
        ("i128", (-(2**127)).to_bytes(16, "little", signed=True), str(-(2**127))),
        ("f64", struct.pack("<d", 1.5), "1.5"),
        ("f32", struct.pack("<f", -0.25), "-0.25"),
        ("f64", struct.pack("<d", float("inf")), "inf"),
        ("bool", b"\x01", "true"),
        ("bool", b"\x00", "false"),
        ("char", "🦀".encode("utf-32-le")[:3], "'🦀'"),
        ("()", b"", "()"),
        ("&str", b"tab\there", '"tab\\there"'),
        ("String", "λ".encode(), '"λ"'),
        ("&[u8]", b"\x00\xff", "0x00ff"),
        ("[u8;2]", b"\x01\x02", "0x0102"),
        ("[u16;2]", b"\x01\x00\x02\x00", "[1, 2]"),
        ("Option<u64>", b"\x00" + bytes(8), "None"),
        ("Option<u64>", b"\x01" + struct.pack("<Q", 9), "Some(9)"),
        ("Option<&str>", b"\x01hi", 'Some("hi")'),
        ("(u64,)", struct.pack("<Q", 3), "(3,)"),
        ("(u8,u16)", b"\x01\x02\x00", "(1, 2)"),
        ("Vec<u64>", b"\x02" + struct.pack("<QQ", 1, 2), "[1, 2]"),
        ("Vec<&str>", b"\x02\x01a\x02bc", '["a", "bc"]'),
        ("[&str;2]", struct.pack("<II", 9, 11) + b"a" + b"bc", '["a", "bc"]'),
        ("my::Type", b"\xab", "0xab"),
    ],
)
def test_format_value(type_name: str, raw: bytes, shown: str) -> None:
    assert format_value(type_name, raw) == shown


def test_tuple_encodings_by_classification() -> None:
    # redb < 3 (classification 1): u32 lengths of every element but the last, then the data.
    legacy = struct.pack("<IIQ", 8, 2, 5) + b"hi" + struct.pack("<i", -1)
    assert format_value("(u64,&str,i32)", legacy, classification=1) == '(5, "hi", -1)'
    # redb >= 3 (classification 3): varint lengths of the variable elements only, then data.
    modern = b"\x02" + struct.pack("<Q", 5) + b"hi" + struct.pack("<i", -1)
    assert format_value("(u64,&str,i32)", modern, classification=3) == '(5, "hi", -1)'
    assert format_value("(u64,&str,i32)", modern) == '(5, "hi", -1)'
    assert format_value("u64", b"\x01" * 8, classification=2) == "0x" + "01" * 8


def test_invalid_bytes_are_shown_not_raised() -> None:
    assert format_value("u64", b"\x01") == "<invalid u64: 0x01>"
    assert format_value("&str", b"\xff") == "<invalid &str: 0xff>"
    assert format_value("bool", b"\x02") == "<invalid bool: 0x02>"
    assert format_value("Option<u8>", b"\x05\x00") == "<invalid Option<u8>: 0x0500>"


def test_display_of_every_fixture_type(redb_file: Callable[[Case], Path]) -> None:
    for version in ("1.5.2", "2.6.3", "3.1.3", "4.2.0"):
        with open_redb(redb_file(local_case(version, "types"))) as db:
            for t in db.tables():
                for key, value in db.iter_table(t.name):
                    k = format_value(t.key_type, key, classification=t.key_type_class)
                    v = format_value(t.value_type, value, classification=t.value_type_class)
                    assert not k.startswith("<invalid"), (version, t.name, k)
                    assert not v.startswith("<invalid"), (version, t.name, v)


_NAMES = st.sampled_from(
    [
        "u64",
        "i32",
        "f64",
        "bool",
        "char",
        "()",
        "&str",
        "&[u8]",
        "[u8;4]",
        "[u16;3]",
        "[&str;2]",
        "Option<u32>",
        "Option<&str>",
        "(u64,)",
        "(u8,&str)",
        "(&str,u64,&[u8])",
        "Vec<u16>",
        "Vec<&str>",
        "Vec<Option<(u8,&str)>>",
        "Option<Option<[u8;2]>>",
        "x<",
        "((",
        "[;]",
        "(,)",
    ]
)


@settings(max_examples=300, deadline=None)
@given(_NAMES, st.binary(max_size=64), st.sampled_from([None, 1, 2, 3, 4]))
def test_format_value_never_raises(name: str, raw: bytes, classification: int | None) -> None:
    assert isinstance(format_value(name, raw, classification=classification), str)


def test_deeply_nested_type_name_does_not_raise() -> None:
    name = "Option<" * 5000 + "u8" + ">" * 5000
    assert format_value(name, b"\x01") == "0x01"


def test_page_numbers() -> None:
    raw = (3 << 59) | (7 << 20) | 5
    assert decode_page_number(raw) == (7, 5, 3)
    assert page_label(raw) == "r7.5/3"
    # Index bits above 20 - order are reserved and ignored, as redb does.
    assert decode_page_number((1 << 59) | 0x000F_FFFF) == (0, 0x7FFFF, 1)


def test_layout_geometry() -> None:
    layout = Layout(4096, 2, 16, 2, 3)
    assert layout.len() == 4096 + 2 * 18 * 4096 + 5 * 4096
    assert layout.page_span(0) == (4096 + 2 * 4096, 4096 + 3 * 4096)
    assert layout.page_span((1 << 20) | 1) == (4096 + 18 * 4096 + 3 * 4096, 4096 + 22 * 4096)
    assert layout.page_span((2 << 20) | 3) is None  # trailing region has 3 pages
    assert layout.page_span((1 << 59) | 8) is None  # order-1 page past the region end
    assert recalculate(layout.len(), 4096, 2, 16) == layout
    with pytest.raises(ValueError):
        recalculate(layout.len() + 100, 4096, 2, 16)
