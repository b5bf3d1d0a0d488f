"""The rows a legacy source becomes: resumable pages, the sorted view, shared raw bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from fences.seal import fingerprint
from hashing import hemera
from migrate import pipeline
from migrate.pipeline.legacy import LegacyImport, LegacySource
from migrate.pipeline.legacy_text import TextImport
from migrate.probe.inspect import inspect_bbg
from migrate.store.codec import ARCHIVE_ORDER
from tests.pipeline_legacy.support import copy_fixture, records


def read(src: Path, kind: str) -> LegacyImport:
    cls = TextImport if kind == "text-archive" else LegacyImport
    return cls.read(src, kind, fingerprint(src, kind))


@pytest.mark.parametrize(
    ("name", "kind"), [("signals-small.log", "signal-log"), ("texts-small.jsonl", "text-archive")]
)
def test_pages_resume_after_every_cursor_and_match_the_sorted_view(
    name: str, kind: str, tmp_path: Path
) -> None:
    imp = read(copy_fixture(name, tmp_path), kind)
    with LegacySource(imp) as source:
        pages = list(source.pages(None, max_rows=3))
        full = [row for page in pages for row in page.rows]
        assert all(1 <= len(p.rows) <= 3 for p in pages)
        done = 0
        for page in pages:
            done += len(page.rows)
            rest = [row for p in source.pages(page.cursor, max_rows=5) for row in p.rows]
            assert rest == full[done:], f"resume after {done} rows"
        # A byte bound smaller than any row still makes progress: one row a page.
        tiny = list(source.pages(None, max_rows=512, max_bytes=1))
        assert [p.rows[0] for p in tiny] == full and all(len(p.rows) == 1 for p in tiny)
    # What staging copies is exactly the view the source digest is taken over.
    with imp.open() as fh:
        view = imp.rows_of(fh)
        for ordinal, table in enumerate(ARCHIVE_ORDER):
            staged = sorted((k, v) for o, k, v in full if o == ordinal)
            assert list(view.rows(table)) == staged, table


def test_identical_raw_lines_share_one_content_row(tmp_path: Path) -> None:
    text = "same words"
    line = f'{{"particle":"{hemera.hash(text.encode()).hex()}","text":"{text}"}}\n'.encode()
    src = tmp_path / "texts.jsonl"
    src.write_bytes(line * 3)
    store = tmp_path / "bbg"
    receipt = pipeline.run(pipeline.Job(src, store)).receipt
    assert receipt is not None
    # One text + one raw line + three observations (cybergraph's records; no import record).
    assert receipt["counts"]["rows"]["application_content"] == 5
    report = inspect_bbg(store)
    assert report["valid"], report["errors"]
    recs = records(store, receipt["legacy"]["namespace"])
    assert len(recs) == 3
    raws = {bytes(doc["provenance"]["raw"]) for _, doc, _ in recs}
    assert raws == {hemera.hash(line)}
    assert {bytes(doc["text"]) for _, doc, _ in recs} == {hemera.hash(text.encode())}
    assert [doc["provenance"]["line"] for _, doc, _ in recs] == [1, 2, 3]


@pytest.mark.parametrize(
    ("name", "kind"), [("signals-small.log", "signal-log"), ("texts-small.jsonl", "text-archive")]
)
@pytest.mark.parametrize("kept", [0, 3, 10**6])
def test_loaded_content_ids_answer_past_the_kept_bound(
    name: str, kind: str, kept: int, tmp_path: Path
) -> None:
    """The single pass keeps the content ids it loads up to a bound; an id not kept is
    looked for among the import's own ids: the answer is the loaded rows' either way, for
    the history commits in order, in any other order, and for ids that are not there."""
    from migrate.pipeline.fresh_legacy import _Loaded, _Loading
    from migrate.rules.kept_keys import KeptKeys
    from migrate.rules.links import validate_links
    from migrate.store.codec import CONTENT, HISTORY

    class _Loader:
        def tee_batches(self, ordinal: int, batches):  # type: ignore[no-untyped-def]
            return batches

    imp = read(copy_fixture(name, tmp_path), kind)
    with imp.open() as fh:
        rows = imp.rows_of(fh)
        loading = _Loading(rows, _Loader())  # type: ignore[arg-type]
        loading.content = KeptKeys(max_keys=kept)
        content = {k for k, _ in loading.rows(CONTENT)}
        history = [v for _, v in rows.rows(HISTORY)]
        assert len(content) > 3 and len(history) > 3
        absent = [hemera.hash(b"absent"), history[1][:31], b"\x00" * 32]
        for asked in (history, history[::-1], sorted(content), absent, history):
            loaded = _Loaded(imp, loading, rows)
            got = [loaded.get(CONTENT, k) is not None for k in asked]
            assert got == [k in content for k in asked]
        assert validate_links(_Loaded(imp, loading, rows)) == []
