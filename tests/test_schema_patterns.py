"""Hex-bytes schema patterns are checked in linear time with the same meaning.

Python's ``re`` keeps state per repetition of ``([0-9a-f]{2})+``: a 32 MiB value cost
gigabytes.  :func:`schemas.linear` checks those patterns without ``re``'s backtracking; these
tests pin that it accepts exactly what the pattern (ECMA-262 semantics: ``$`` is the end of
the string) accepts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import schemas

PATTERNS = sorted(
    {
        m
        for p in Path(schemas.__file__).parent.glob("*.schema.json")
        for m in re.findall(r'"pattern":\s*("(?:[^"\\]|\\.)*")', p.read_text())
    }
)
HEX_BYTES = [json.loads(p) for p in PATTERNS if schemas._hex_bytes_check(json.loads(p))]


def test_the_shipped_hex_bytes_patterns_are_recognised() -> None:
    assert "^([0-9a-f]{2})+$" in HEX_BYTES and "^([0-9a-f]{2})*$" in HEX_BYTES


@given(st.text(alphabet="0123456789abcdefABg", max_size=140))
def test_same_answer_as_the_regex(text: str) -> None:
    for pattern in HEX_BYTES + ["^([0-9a-f]{2}){1,64}$"]:
        check = schemas._hex_bytes_check(pattern)
        assert check is not None
        assert check(text) == (re.fullmatch(pattern.strip("^$"), text) is not None)


def test_a_big_value_is_judged_by_the_schema_validator() -> None:
    import tracemalloc

    validator = schemas.validator("snapshot-record")
    row = {"table": "application_content", "key": "ab" * 32, "h": "0" * 16}
    big = "ab" * (4 << 20)
    odd = big + "a"
    tracemalloc.start()
    try:
        assert not list(validator.iter_errors({**row, "value": big}))
        assert list(validator.iter_errors({**row, "value": odd}))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(big) // 4  # the regex engine's per-repetition state took ~50x the value
