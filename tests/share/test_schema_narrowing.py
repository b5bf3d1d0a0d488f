"""apply checks each event line against the event schema narrowed to the line's `kind` branch
(a speed-up): it must give exactly the verdict and the message of the whole schema."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from migrate.share.common import _kind_branches, _validator, schema_problem
from tests.conftest import ROOT


def _full_problem(doc: Any) -> str | None:
    error = jsonschema.exceptions.best_match(_validator("event").iter_errors(doc))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "top"
    return f"{where}: {str(error.message)[:200]}"


def _events() -> list[dict[str, Any]]:
    docs = []
    for path in sorted((ROOT / "fixtures" / "event1").glob("*.tail.ndjson")):
        docs += [json.loads(line) for line in path.read_bytes().splitlines()]
    return docs


def _mutants(doc: dict[str, Any]) -> Iterator[Any]:
    """The document with each key dropped, each value replaced by wrong types, each nested
    dict / list entry damaged the same way (one level down), and the kind swapped."""
    for key in doc:
        yield {k: v for k, v in doc.items() if k != key}
        for bad in (None, 7, "zz", [], {}):
            yield {**doc, key: bad}
        value = doc[key]
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            if isinstance(item, dict):
                for sub in item:
                    for bad in (None, "zz", -1):
                        changed = copy.deepcopy(doc)
                        target = changed[key][i] if isinstance(value, list) else changed[key]
                        target[sub] = bad
                        yield changed
    for kind in _kind_branches("event") or {}:
        yield {**doc, "kind": kind}
    yield {**doc, "kind": "nonsense"}
    yield [doc]


def test_every_branch_is_narrowed() -> None:
    branches = _kind_branches("event")
    assert branches is not None
    assert {"commit", "rows", "fence", "generation", "import", "boundary", "nohistory",
            "excise", "redacted"} <= set(branches)  # fmt: skip


@pytest.mark.slow
def test_narrowed_schema_gives_the_whole_schema_verdict_and_message() -> None:
    docs = _events()
    kinds = {d["kind"] for d in docs}
    assert {"commit", "rows", "fence", "generation", "boundary", "nohistory"} <= kinds
    checked = refused = 0
    for doc in docs:
        assert schema_problem(doc, "event") is None
        for mutant in _mutants(doc):
            want = _full_problem(mutant)
            assert schema_problem(mutant, "event") == want, (mutant, want)
            checked += 1
            refused += want is not None
    assert refused > 1000 and checked > refused  # the mutants do exercise refusals
