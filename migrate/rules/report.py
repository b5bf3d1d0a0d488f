"""The five-table report: every rule of :mod:`migrate.rules` over one source, in one document.

Shared by ``inspect`` (a cell.redb or a BBG store), the pipeline's preflight, the transfer's
source check and ``doctor``.  Its field names are those of the fixtures' ``*.expected.json``:
``tables`` (rows, key/value bytes), ``namespaces`` (head index/commit, history rows), both
archive digests, ``content_codecs``, ``data_id_scheme``, ``data_rows_with_id_mismatch``,
``data_content_ids``, ``valid`` and ``errors`` as ``{code, detail}``.

Two views of the same store:

* the **conversion** view (``conversion_valid``, which is ``valid`` and decides the exit
  code): bbg's conversion rules, plus in content-check mode ``codec`` (the default) the content
  rules of cybergraph's codec-checked import; mode ``none`` is bbg's raw converter;
* the **semantic** view (``semantic_errors`` as ``{code, namespace, detail}``, and
  ``origins``: per namespace, whether it could be a mapped origin): the rules neuron's
  semantic import applies to an origin named in a mapping (today the birth rule).  They never
  change ``valid``; a mapped run refuses an origin that breaks them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import groupby
from typing import Any

from migrate.job import CODEC
from migrate.progress import finishing
from migrate.rules.links import iter_link_errors
from migrate.rules.shape import RowSource, check_shape
from migrate.store.codec import HEADS, HISTORY, Head

_LINKED_TABLES = ("application_content", "application_requests", HISTORY, HEADS)
# A report lists at most this many errors (the count is always exact).
MAX_LISTED_ERRORS = 1000


def namespaces(source: RowSource) -> dict[str, dict[str, Any]]:
    """Per namespace in ``application_heads``: head index, head commit, history rows."""
    counts: dict[bytes, int] = {}
    history: Iterator[tuple[bytes, bytes]] = iter(source.rows(HISTORY))
    for ns, group in groupby(history, key=lambda kv: kv[0][:32]):
        counts[ns] = sum(1 for _ in group)
    out: dict[str, dict[str, Any]] = {}
    for key, value in source.rows(HEADS):
        try:
            head = Head.decode(value)
        except ValueError:
            continue  # reported by the shape check as bad-value-length
        out[key.hex()] = {
            "head_index": head.index,
            "head_commit": head.commit.hex(),
            "history_rows": counts.get(key, 0),
        }
    return out


def cell_report(
    source: RowSource,
    *,
    progress: Callable[[int, int], None] | None = None,
    hemera_digest: bool = True,
    content_check: str = CODEC,
    rows_read: Callable[[], object] | None = None,
) -> dict[str, Any]:
    """The five-table part of an inspect report (shared by cell.redb and BBG stores).
    ``rows_read`` is called once the row pass has read every row, before the links check
    reads tables again."""
    shape = check_shape(
        source, progress=progress, hemera_digest=hemera_digest, content_check=content_check
    )
    if rows_read is not None:
        rows_read()
    errors = list(shape.errors)
    semantic: list[dict[str, str]] = []
    # Links need content, requests, history and heads as plain tables (claims play no part).
    kinds = source.table_kinds()
    table_set_ok = all(kinds.get(t) == "table" for t in _LINKED_TABLES)
    if table_set_ok:
        with finishing(progress, "links"):
            errors.extend(iter_link_errors(source, report_malformed=False, semantic=semantic))
    with finishing(progress, "namespaces"):
        found = namespaces(source) if table_set_ok else {}
    refused = {e["namespace"] for e in semantic}
    checked = shape.data_ids_checked
    report: dict[str, Any] = {
        "content_check": shape.content_check,
        "tables": {name: stats.to_json() for name, stats in sorted(shape.tables.items())},
        "content_codecs": shape.codecs,
        "blob_rows_with_id_mismatch": shape.blob_id_mismatches if checked else None,
        "blob_ids_checked": shape.blob_ids_checked,
        "data_ids_checked": checked,
        "data_id_scheme": shape.data.scheme,
        "data_rows_with_id_mismatch": shape.data.id_mismatches if checked else None,
        "data_content_ids": shape.data.keys,
        "namespaces": found,
        "origins": {ns: {"mappable": ns not in refused} for ns in found},
        "archive_digest_sha256": shape.archive_digest_sha256,
        "archive_digest_hemera": shape.archive_digest_hemera,
        "conversion_valid": not errors,
        "valid": not errors,
        "error_count": len(errors),
        "errors": errors[:MAX_LISTED_ERRORS],
        "semantic_errors": semantic[:MAX_LISTED_ERRORS],
    }
    return report
