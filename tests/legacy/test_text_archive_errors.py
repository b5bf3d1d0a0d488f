"""Hand-built lines: every TextArchive error code at its exact line.

The particle function is a parameter of the reader; these rule tests pass SHA-256 so that
they do not depend on hemera (the fixture tests check hemera itself).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import schemas
from bbg_core.errors import TextArchiveError
from importers.text_archive import (
    DEFAULT_LIMITS,
    Limits,
    TextRecord,
    decode_records,
    inspect_text_archive,
    looks_like_text_archive,
    read_records,
)
from importers.text_archive.model import ERROR_CODES
from tests.legacy._support import hemera_module
from tests.legacy._texts import PID, line, raw_line, sha

GOOD = line("first", 1)


def records(data: bytes, limits: Limits = DEFAULT_LIMITS) -> list[TextRecord]:
    return list(decode_records(data, limits=limits, hash_fn=sha, path="t.jsonl"))


def fails(data: bytes, limits: Limits = DEFAULT_LIMITS) -> tuple[str, int]:
    """Decode ``data``; return (code, line) of the error, after checking its context."""
    seen: list[TextRecord] = []
    with pytest.raises(TextArchiveError) as info:
        for record in decode_records(data, limits=limits, hash_fn=sha, path="t.jsonl"):
            seen.append(record)
    ctx = info.value.context
    assert ctx["path"] == "t.jsonl"
    assert len(seen) == int(ctx["line"]) - 1  # every line before the bad one, none after
    assert info.value.message.startswith(f"t.jsonl:{ctx['line']}: {ctx['code']}")
    return str(ctx["code"]), int(ctx["line"])


def test_writer_quirks_are_read_back() -> None:
    text = 'tab\there cr\rthere "q" \\ lf\nend é 😀'
    data = GOOD + line(text, 2**64 - 1) + line("", None) + line("big", 2**53 + 1)
    got = records(data)
    assert [r.text for r in got] == ["first", text, "", "big"]
    assert [r.created for r in got] == [1, 2**64 - 1, None, 2**53 + 1]
    assert b"\t" in got[1].raw and b"\r" in got[1].raw  # the raw bytes are kept verbatim
    assert got[1].particle == sha(text.encode()).hex()
    assert got[1].particle_bytes == sha(text.encode())
    assert [(r.line, r.start, r.end) for r in got] == [
        (1, 0, len(GOOD)),
        (2, len(GOOD), len(GOOD) + len(got[1].raw)),
        (3, got[1].end, got[1].end + len(got[2].raw)),
        (4, got[2].end, len(data)),
    ]
    assert b"".join(r.raw for r in got) == data


def test_empty_archive_has_no_records() -> None:
    assert records(b"") == []


def test_unterminated_line() -> None:
    assert fails(GOOD + GOOD[:-1]) == ("unterminated-line", 2)
    assert fails(b"{") == ("unterminated-line", 1)


def test_blank_line() -> None:
    assert fails(GOOD + b"\n" + GOOD) == ("blank-line", 2)
    assert fails(b"\n") == ("blank-line", 1)


@pytest.mark.parametrize(
    "bad",
    [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82"],
    ids=["ff", "overlong", "surrogate", "cut"],
)
def test_invalid_utf8(bad: bytes) -> None:
    data = GOOD + b'{"particle":"' + PID.encode() + b'","text":"' + bad + b'"}\n'
    assert fails(data) == ("invalid-utf8", 2)


@pytest.mark.parametrize(
    "body",
    [
        f'{{"particle":"{PID}","text":"x"',
        f'["{PID}","x",null,1]',
        f'"{PID}"',
        f'{{"particle":"{PID}","text":"x","created":NaN}}',
        f'{{"particle":"{PID}","text":"x","created":Infinity}}',
        f'{{"particle":"{PID}","text":"x\\\t"}}',  # a raw TAB right after a backslash
        f'{{"particle":"{PID}","text":"x\x01"}}',  # other raw control characters
        f'{{"particle":"{PID}","text":"x"}}\x0b',  # not JSON whitespace
        f'{{"particle":"{PID}","text":"x"}} {{}}',
        "[" * 100_000 + "]" * 100_000,
    ],
    ids=[
        "unclosed", "array-of-four", "string", "nan", "infinity", "escaped-tab", "control",
        "vertical-tab", "extra", "deep",
    ],
)  # fmt: skip
def test_invalid_json(body: str) -> None:
    assert fails(GOOD + raw_line(body)) == ("invalid-json", 2)


def test_unknown_field() -> None:
    body = f'{{"particle":"{PID}","text":"x","source":"y"}}'
    assert fails(GOOD + raw_line(body)) == ("unknown-field", 2)


@pytest.mark.parametrize(
    "body",
    [
        f'{{"particle":"{PID}","text":"x","text":"x"}}',
        f'{{"particle":"{PID}","text":"x","p\\u0061rticle":"{PID}"}}',
        f'{{"created":null,"particle":"{PID}","text":"x","created":1}}',
    ],
    ids=["text", "escaped-key", "created-after-null"],
)
def test_duplicate_field(body: str) -> None:
    assert fails(GOOD + raw_line(body)) == ("duplicate-field", 2)


@pytest.mark.parametrize(
    "body",
    [
        f'{{"particle":"{PID}"}}', '{"text":"x"}', '{"created":1}', "{}", "[]", f'["{PID}"]',
        f'["{PID}","x"]',
    ],
)  # fmt: skip
def test_missing_field(body: str) -> None:
    assert fails(GOOD + raw_line(body)) == ("missing-field", 2)


@pytest.mark.parametrize(
    "particle",
    [f'"{PID[:-1]}"', f'"{PID}0"', f'"{PID[:-1]}g"', "7", "null", f'["{PID}"]', f'"0x{PID[2:]}"'],
    ids=["short", "long", "non-hex", "number", "null", "list", "0x-prefix"],
)
def test_bad_particle(particle: str) -> None:
    body = f'{{"particle":{particle},"text":"x"}}'
    assert fails(GOOD + raw_line(body)) == ("bad-particle", 2)


@pytest.mark.parametrize("text", ["5", "null", '["x"]', '{"a":1}', '"\\ud800"', "true"])
def test_bad_text(text: str) -> None:
    body = f'{{"particle":"{PID}","text":{text}}}'
    assert fails(GOOD + raw_line(body)) == ("bad-text", 2)


@pytest.mark.parametrize(
    "created",
    ["-1", "-0", str(2**64), "1.5", "1e3", "1.0", "0e0", "true", "false", '"5"', "[1]", "9" * 400],
)
def test_bad_created(created: str) -> None:
    body = f'{{"particle":"{PID}","text":"x","created":{created}}}'
    assert fails(GOOD + raw_line(body)) == ("bad-created", 2)


def test_particle_mismatch() -> None:
    wrong = sha(b"x!").hex()
    assert fails(GOOD + line("x", particle=wrong)) == ("particle-mismatch", 2)


def test_particle_mismatch_with_hemera() -> None:
    hemera = hemera_module()
    good = line("hello", particle=hemera.hash(b"hello").hex())
    bad = line("hello", particle=hemera.hash(b"hello!").hex())
    assert [r.text for r in decode_records(good, hash_fn=hemera.hash)] == ["hello"]
    with pytest.raises(TextArchiveError) as info:
        list(decode_records(good + bad, hash_fn=hemera.hash))
    assert (info.value.context["code"], info.value.context["line"]) == ("particle-mismatch", 2)


def test_limit_line_count() -> None:
    assert fails(GOOD * 3, Limits(max_lines=2)) == ("limit-exceeded", 3)
    assert len(records(GOOD * 3, Limits(max_lines=3))) == 3


def test_limit_line_length() -> None:
    long = line("y" * 200)
    assert fails(GOOD + long + GOOD, Limits(max_line_bytes=len(long) - 1)) == ("limit-exceeded", 2)
    # The limit counts the LF: a line of exactly the limit passes.
    assert len(records(GOOD + long, Limits(max_line_bytes=len(long)))) == 2


ONE_PER_CODE: dict[str, tuple[bytes, Limits]] = {
    "unterminated-line": (GOOD + GOOD[:-1], DEFAULT_LIMITS),
    "blank-line": (GOOD + b"\n", DEFAULT_LIMITS),
    "invalid-utf8": (GOOD + b'{"\xff"}\n', DEFAULT_LIMITS),
    "invalid-json": (GOOD + b"{\n", DEFAULT_LIMITS),
    "unknown-field": (GOOD + raw_line(f'{{"particle":"{PID}","text":"x","y":1}}'), DEFAULT_LIMITS),
    "duplicate-field": (GOOD + raw_line('{"text":"x","text":"x"}'), DEFAULT_LIMITS),
    "missing-field": (GOOD + raw_line('{"text":"x"}'), DEFAULT_LIMITS),
    "bad-particle": (GOOD + raw_line('{"particle":"00","text":"x"}'), DEFAULT_LIMITS),
    "bad-text": (GOOD + raw_line(f'{{"particle":"{PID}","text":1}}'), DEFAULT_LIMITS),
    "bad-created": (GOOD + line("x", -1), DEFAULT_LIMITS),
    "particle-mismatch": (GOOD + line("y", particle=PID), DEFAULT_LIMITS),
    "limit-exceeded": (GOOD * 2, Limits(max_lines=1)),
}
"""code -> (archive, limits): one representative case for each error code, at line 2."""


@pytest.mark.parametrize("code", ERROR_CODES)
def test_every_code_has_a_case(code: str) -> None:
    data, limits = ONE_PER_CODE[code]
    assert fails(data, limits) == (code, 2)


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "archive.jsonl"
    path.write_bytes(data)
    return path


def test_report_lists_every_bad_line_and_keeps_counting(tmp_path: Path) -> None:
    data = GOOD + b"\n" + line("second") + raw_line('{"text":"x"}') + GOOD + GOOD[:-1]
    path = write(tmp_path, data)
    report = inspect_text_archive(path, hash_fn=sha, hasher=hashlib.sha256)
    schemas.validate(report, "text-archive-inspect")
    assert report["valid"] is False
    assert [(e["line"], e["code"]) for e in report["errors"]] == [
        (2, "blank-line"),
        (4, "missing-field"),
        (6, "unterminated-line"),
    ]
    assert (report["line_count"], report["error_count"], report["distinct_texts"]) == (6, 3, 2)
    assert report["sha256"] == report["hemera_file"] == hashlib.sha256(data).hexdigest()


def test_report_skips_an_overlong_line_without_holding_it(tmp_path: Path) -> None:
    data = GOOD + line("z" * 5000) + GOOD
    report = inspect_text_archive(
        write(tmp_path, data),
        limits=Limits(max_line_bytes=1000),
        hash_fn=sha,
        hasher=hashlib.sha256,
    )
    assert [(e["line"], e["code"]) for e in report["errors"]] == [(2, "limit-exceeded")]
    assert (report["line_count"], report["distinct_texts"]) == (3, 1)


def test_report_stops_at_the_line_count_limit(tmp_path: Path) -> None:
    report = inspect_text_archive(
        write(tmp_path, GOOD * 5), limits=Limits(max_lines=2), hash_fn=sha, hasher=hashlib.sha256
    )
    assert [(e["line"], e["code"]) for e in report["errors"]] == [(3, "limit-exceeded")]
    assert report["line_count"] == 2


def test_reading_a_file_matches_reading_its_bytes(tmp_path: Path) -> None:
    data = GOOD + line("a\tb") + line("c", 3)
    from_file = list(read_records(write(tmp_path, data), hash_fn=sha))
    assert [(r.line, r.raw, r.text, r.created) for r in from_file] == [
        (r.line, r.raw, r.text, r.created) for r in records(data)
    ]


def test_sniffing() -> None:
    assert looks_like_text_archive(GOOD)
    assert looks_like_text_archive(b'{"text":"x"')
    assert not looks_like_text_archive(b"")
    assert not looks_like_text_archive(b"\n" + GOOD)
    assert not looks_like_text_archive(b'{"other":1}\n')
    assert not looks_like_text_archive(b"\x1f!b\x54")


# -- the rules of cybergraph's reader (src/text_archive/legacy.rs decode, serde_json) ------


@pytest.mark.parametrize(
    "body",
    [
        f'{{"particle":"{PID}","text":"x"}}\r',  # a CRLF line ending
        f'{{"particle":"{PID}",\t"text":"x"}}',  # TAB between tokens
        f' \t{{ "particle" :\r"{PID}" , "text":"x" }} \t',  # JSON whitespace anywhere outside
        f'{{"text":"x","particle":"{PID}"}}',  # any member order
    ],
    ids=["crlf", "tab-between", "spaces", "order"],
)
def test_json_whitespace_outside_strings_is_valid(body: str) -> None:
    [_, record] = records(GOOD + raw_line(body))
    assert record.text == "x" and record.created is None


def test_raw_tab_and_cr_inside_strings_read_as_escapes() -> None:
    # Inside a string, after an escaped backslash too; a raw TAB in a key is part of it.
    pid = sha(b"a\\\t\rb").hex()
    body = f'{{"particle":"{pid}","text":"a\\\\\t\rb"}}'
    [_, record] = records(GOOD + raw_line(body))
    assert record.text == "a\\\t\rb" and b"\t" in record.raw
    key = f'{{"particle":"{PID}","te\txt":"x"}}'
    assert fails(GOOD + raw_line(key)) == ("unknown-field", 2)


def test_a_whitespace_only_line_is_blank() -> None:
    for blank in (b"\r\n", b" \t \n"):
        assert fails(GOOD + blank + GOOD) == ("blank-line", 2)


def test_particle_of_either_case_compares_the_id() -> None:
    for spelling in (PID.upper(), PID[:32].upper() + PID[32:]):
        [_, record] = records(GOOD + line("x", particle=spelling))
        assert record.particle == PID and spelling.encode() in record.raw


def test_created_may_be_null_or_absent() -> None:
    null = raw_line(f'{{"particle":"{PID}","text":"x","created":null}}')
    absent = raw_line(f'{{"particle":"{PID}","text":"x"}}')
    big = raw_line(f'{{"particle":"{PID}","text":"x","created":18446744073709551615}}')
    assert [r.created for r in records(null + absent + big)] == [None, None, 2**64 - 1]


def test_the_array_form_serde_reads_as_the_struct() -> None:
    # serde_json deserialises a struct from a JSON array of its fields in order, all present:
    # serde-rs/json tests/test.rs (0035947522dbad7a123ffd3e9b1d48a77103ec93) test_parse_struct
    # reads `Outer` from "[[[null, 2, [\"abc\", \"xyz\"]]]]"; test_parse_option reads a
    # missing Option field as None (our `created`).
    data = raw_line(f'["{PID}","x",null]') + raw_line(f'[ "{PID}" , "x" , 7 ]')
    assert [(r.text, r.created) for r in records(data)] == [("x", None), ("x", 7)]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ('{"other":1,"particle":5,"text":"x"}', "unknown-field"),
        ('{"particle":5,"other":1,"text":"x"}', "bad-particle"),
        ('{"text":"x","text":"y","particle":5}', "duplicate-field"),
        (f'{{"created":-1,"particle":"{PID}","other":1}}', "bad-created"),
        (f'{{"particle":"{PID[:10]}","other":1,"text":"x"}}', "unknown-field"),
        (f'{{"particle":"{PID[:10]}","text":"x"}}', "bad-particle"),
        ('[5,"x",null,1]', "bad-particle"),
        (f'["{PID}",5]', "bad-text"),
    ],
    ids=[
        "unknown-first", "type-first", "duplicate-first", "created-first", "hex-checked-last",
        "hex", "array-type-first", "array-text",
    ],
)  # fmt: skip
def test_members_are_checked_in_the_order_written(body: str, code: str) -> None:
    # serde meets an unknown key, a repeated key or a wrongly typed value as it reads each
    # member; the particle's hex form is checked after the whole line parsed.
    assert fails(GOOD + raw_line(body)) == (code, 2)


def test_line_rules_come_before_the_count_limit() -> None:
    # import_jsonl decodes a line before prepare_import_line counts it.
    assert fails(GOOD * 2 + b"{\n", Limits(max_lines=2)) == ("invalid-json", 3)


def test_source_limit_names_the_line_past_it_and_comes_first() -> None:
    data = b"{\n" + GOOD * 3  # line 1 is broken, but the size is checked before any line

    def first_error(limit: int) -> tuple[object, object, int]:
        seen = []
        with pytest.raises(TextArchiveError) as info:
            for record in decode_records(data, limits=Limits(max_source_bytes=limit), hash_fn=sha):
                seen.append(record)
        return info.value.context["code"], info.value.context["line"], len(seen)

    limit = 2 + len(GOOD) + 5  # byte `limit` (the first past the cap) is in line 3
    assert first_error(limit) == ("limit-exceeded", 3, 0)
    assert first_error(len(data) - 1) == ("limit-exceeded", 4, 0)
    assert first_error(len(data)) == ("invalid-json", 1, 0)


def test_projection_counts_each_distinct_text_once() -> None:
    a, b = line("a" * 10), line("b" * 10)
    assert len(records(a + a + b, Limits(max_projection_bytes=20))) == 3
    assert fails(a + b + line("c"), Limits(max_projection_bytes=20)) == ("limit-exceeded", 3)
    assert len(records(line("") * 3, Limits(max_projection_bytes=0))) == 3
