"""Property test: lines written the old writer's way decode back to the same records."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from importers.text_archive import decode_records
from tests.legacy._texts import line, sha

# The old writer emitted no control characters other than TAB, CR and (escaped) LF.
texts = st.text(
    st.characters(
        exclude_categories=["Cs"],
        exclude_characters="".join(chr(c) for c in range(32) if c not in (9, 10, 13)) + "\x7f",
    ),
    max_size=40,
)
items = st.lists(st.tuples(texts, st.none() | st.integers(0, 2**64 - 1)), max_size=8)


@settings(deadline=None)  # timing varies on CI machines; correctness does not
@given(items)
def test_round_trip(pairs: list[tuple[str, int | None]]) -> None:
    encoded = [line(text, created) for text, created in pairs]
    data = b"".join(encoded)
    got = list(decode_records(data, hash_fn=sha))
    assert [(r.text, r.created) for r in got] == pairs
    assert [r.raw for r in got] == encoded
    assert [r.line for r in got] == list(range(1, len(pairs) + 1))
    assert [r.particle for r in got] == [sha(t.encode()).hex() for t, _ in pairs]
