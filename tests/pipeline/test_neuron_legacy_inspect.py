"""The rest of neuron's ``legacy::inspect`` on a mapped origin (issue 27 item 2).

Each test names the neuron lines its expected refusal is transcribed from.  neuron writes no
legacy history in its own tests (the public index holds no engine tests, and the model tests
build no ``cell/definition/1``, policy or continuation), so each case is a history written
here with one thing wrong (:mod:`tests.support.cell_snapshot`) and the outcome is the
reason neuron's code gives for it:

* cyberia-to/neuron@fd24e768 ``engine/src/legacy.rs`` ``inspect`` (the order of reads and
  the engine's ``Conflict``/``Unsupported``/``Budget``);
* neuron@f18015c2 ``engine/src/legacy/records.rs`` (``policy_values``, ``read_live``);
* neuron@53dbf8d1 ``engine/src/legacy/artifacts.rs`` (``snapshot``, ``event``,
  ``operation``);
* neuron@2fe713bd ``model/src/records.rs`` ``Reader::artifact`` and ``model/src/data.rs``
  ``Reader`` (``Data(UnsupportedSchema|InvalidData|Limit|Missing)``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate.rules.cell_records import check_origin
from migrate.rules.neuron_reader import Reader, Refused
from migrate.rules.sources import RedbSource
from migrate.store.codec import HISTORY, history_key
from tests.pipeline.helpers import cli
from tests.support.cell_records import write_store
from tests.support.cell_snapshot import artifact
from tests.support.model_b import Builder
from tests.support.stores import dump
from tests.support.subject import SUBJECT, activate_subject

NONCES = [f"{i + 1:064x}" for i in range(2)]


def _found(src: Path, names: list[str], head: int) -> list[dict[str, object]]:
    """check_origin of each origin of ``src`` (all at head index ``head``): the refusals."""
    with RedbSource(src) as s:
        out = [check_origin(s.lookup, bytes.fromhex(n), head) for n in names]
    return [r for r in out if r is not None]


def _one(
    tmp_path: Path, flaw: tuple[int, int, str], commits: int = 2, live: bool = False
) -> dict[str, object]:
    """The one refusal of a two-origin store whose entry ``flaw`` names is written wrong."""
    src = tmp_path / "cell.redb"
    names = write_store(src, origins=2, commits=commits, flaw=flaw, live=live)
    found = _found(src, names, commits)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("live", [False, True])
def test_valid_histories_pass_every_check(tmp_path: Path, live: bool) -> None:
    """A history whose every snapshot names a valid definition, source, state, required
    artifact and policy (and, ``live``, a continuation with its event, checkpoint, input,
    outcome and arguments), whose commits start one invocation and charge it more each time,
    reads as neuron's ``legacy::inspect`` reads it (legacy.rs @fd24e768 L21-134)."""
    src = tmp_path / "cell.redb"
    names = write_store(src, origins=2, commits=3, live=live)
    assert _found(src, names, 3) == []


# (a) legacy.rs @fd24e768 L31-34: the head snapshot's ``cell/definition/1`` (11 fields), its
# source (field 2) and the application state, each read with ``Reader::artifact`` (model
# records.rs @2fe713bd: codec other than hemera("hemera/bytes/0.3") -> UnsupportedSchema;
# content not a Blob of the stated length -> InvalidData); data.rs @2fe713bd
# ``Reader::record`` (schema -> UnsupportedSchema, more fields than 11 -> Limit, fewer ->
# InvalidData) and ``Reader::content`` (no row -> Missing).
HEAD = [
    ("definition-schema", "Data(UnsupportedSchema)", "cell/definition/1 schema id"),
    ("definition-long", "Data(Limit)", "more than 11 fields"),
    ("definition-short", "Data(InvalidData)", "10 fields, cell/definition/1 has 11"),
    ("source-codec", "Data(UnsupportedSchema)", "is not hemera(hemera/bytes/0.3)"),
    ("source-length", "Data(InvalidData)", "it states"),
    ("source-data", "Data(InvalidData)", "a Data node, not a Blob"),
    ("source-missing", "Data(Missing)", "is not a content row"),
    ("state-length", "Data(InvalidData)", "(application state)"),
]


@pytest.mark.parametrize(("flaw", "reason", "detail"), HEAD)
def test_the_head_definition_and_artifacts(
    tmp_path: Path, flaw: str, reason: str, detail: str
) -> None:
    """legacy.rs @fd24e768 L31-34 (with model records.rs @2fe713bd ``Reader::artifact``):
    refused at the head index, before the history walk."""
    found = _one(tmp_path, (1, 2, flaw))
    assert (found["index"], found["reason"]) == (2, reason)
    assert detail in str(found["detail"]) and "head index 2" in str(found["detail"])


def test_an_artifact_over_eight_mib_is_a_limit() -> None:
    """data.rs @2fe713bd ``Content::validate`` (called by ``Reader::content``): content over
    8 MiB is ``Limit``, before its id is checked; ``Reader::artifact`` reads it so."""
    b = Builder()
    fine, huge = artifact(b, b"source"), artifact(b, b"source", "huge")
    reader = Reader(lambda table, key: b.content.get(key))
    assert reader.artifact(fine, "source") == b"source"
    with pytest.raises(Refused) as refused:
        reader.artifact(huge, "source")
    assert refused.value.reason == "Data(Limit)"
    assert "8388609 bytes, over 8388608" in refused.value.detail


# (b) records.rs @f18015c2 L13-24 ``policy_values`` (called at legacy.rs @fd24e768 L35):
# ``cell/local-policy/1`` (3 fields), its allowed acts a list of at most 256 uints, then its
# step limit.
POLICY = [
    ("policy-schema", "Data(UnsupportedSchema)", "cell/local-policy/1 schema id"),
    ("policy-acts-limit", "Data(Limit)", "a list of 257 entries, at most 256"),
    ("policy-acts-count", "Data(InvalidData)", "says 2 entries and holds 1"),
    ("policy-missing", "Data(Missing)", "is not a content row"),
]


@pytest.mark.parametrize(("flaw", "reason", "detail"), POLICY)
def test_the_local_policy(tmp_path: Path, flaw: str, reason: str, detail: str) -> None:
    """records.rs @f18015c2 L13-24, legacy.rs @fd24e768 L35: the head's policy."""
    found = _one(tmp_path, (0, 2, flaw))
    assert (found["index"], found["reason"]) == (2, reason)
    assert detail in str(found["detail"]) and "(policy" in str(found["detail"])


# (c) legacy.rs @fd24e768 L63-64: a fresh reader per entry runs ``artifacts::snapshot``
# (artifacts.rs @53dbf8d1 L6-33) on every entry, the head's included: an earlier entry's
# snapshot is refused at its own index, and what only ``artifacts::snapshot`` reads (the
# definition's required artifacts, <= 4096, L12-15; the inbox events, L27-31; the live
# outcome, L22-24) is refused at the head in the walk.  Each reader has 100 000 reads
# (L63): 4096 required artifacts need more (data.rs ``Reader::content``: Limit).
EARLIER = [
    ((0, 1, "state-length"), 1, "Data(InvalidData)", "index 1 commit"),
    ((1, 0, "source-codec"), 0, "Data(UnsupportedSchema)", "index 0 commit"),
    ((0, 2, "policy-missing"), 2, "Data(Missing)", "(policy)"),
    ((1, 1, "definition-long"), 1, "Data(Limit)", "more than 11 fields"),
    ((0, 3, "required-codec"), 3, "Data(UnsupportedSchema)", "(required artifact)"),
    ((1, 3, "required-limit"), 3, "Data(Limit)", "a list of 4097 entries, at most 4096"),
    ((0, 3, "required-many"), 3, "Data(Limit)", "budget of content reads is spent"),
    ((1, 3, "inbox-missing"), 3, "Data(Missing)", "(inbox) event"),
    ((0, 3, "outcome-length"), 3, "Data(InvalidData)", "(outcome) operation"),
]


@pytest.mark.parametrize(("flaw", "index", "reason", "detail"), EARLIER)
def test_every_entry_snapshot(
    tmp_path: Path, flaw: tuple[int, int, str], index: int, reason: str, detail: str
) -> None:
    """legacy.rs @fd24e768 L63-64 with artifacts.rs @53dbf8d1 L6-33: each entry's snapshot
    in walk order; the head (index 3) passes ``inspect``'s own head checks (L22-45)."""
    found = _one(tmp_path, flaw, commits=3)
    assert (found["index"], found["reason"]) == (index, reason)
    assert f"index {index} commit" in str(found["detail"])
    assert detail in str(found["detail"])


# (d) records.rs @f18015c2 L84-135 ``read_live`` (at most one continuation, L88; its
# resources, L92-94; at most one outbox entry with its operation, act and a stage of three
# variants, else Unsupported, L95-112; at most one attempt, L113) and legacy.rs @fd24e768
# L37-45 (the checkpoint artifact, the event record and its input artifact, the pending
# arguments artifact).
LIVE = [
    ("continuations-two", "Data(Limit)", "a list of 2 entries, at most 1"),
    ("stage", "Unsupported", "is no cell/operation-stage variant"),
    ("attempts-two", "Data(Limit)", "(attempts)"),
    ("checkpoint-codec", "Data(UnsupportedSchema)", "(checkpoint)"),
    ("live-event-missing", "Data(Missing)", "(live event)"),
    ("live-input-length", "Data(InvalidData)", "(live input)"),
    ("arguments-length", "Data(InvalidData)", "(arguments)"),
]


@pytest.mark.parametrize(("flaw", "reason", "detail"), LIVE)
def test_the_live_continuation(tmp_path: Path, flaw: str, reason: str, detail: str) -> None:
    """records.rs @f18015c2 L84-135 and legacy.rs @fd24e768 L36-45: the head's live
    continuation, in a history whose every snapshot is live."""
    found = _one(tmp_path, (1, 2, flaw), live=True)
    assert (found["index"], found["reason"]) == (2, reason)
    assert detail in str(found["detail"]) and "head index 2" in str(found["detail"])


# (d) legacy.rs @fd24e768 L78-110: each commit's events (field 5, <= 1, each
# ``artifacts::event``, artifacts.rs @53dbf8d1 L34-46) and operations (field 6, <= 64, each
# ``artifacts::operation``, L47-69); a ``cell/local-resources/1`` needs a current invocation
# (L99) and a cumulative charge not below the invocation's last (L102-104): Conflict; the
# final charges must sum within a u64 (L119-121): Budget.
COMMITS = [
    ((0, 2, "events-two"), 2, "Data(Limit)", "a list of 2 entries, at most 1"),
    ((1, 2, "event-codec"), 2, "Data(UnsupportedSchema)", "(payload)"),
    ((0, 2, "operation-length"), 2, "Data(InvalidData)", "(field 4)"),
    ((1, 1, "operations-limit"), 1, "Data(Limit)", "a list of 65 entries, at most 64"),
    ((0, 1, "no-invocation"), 1, "Conflict", "before any invocation"),
    ((1, 2, "usage-decrease"), 2, "Conflict", "charged 50 after 100"),
    ((0, 2, "charge-overflow"), 3, "Budget", "over u64"),
]


@pytest.mark.parametrize(("flaw", "index", "reason", "detail"), COMMITS)
def test_events_operations_and_accounting(
    tmp_path: Path, flaw: tuple[int, int, str], index: int, reason: str, detail: str
) -> None:
    """legacy.rs @fd24e768 L78-110 and L119-121 (artifacts.rs @53dbf8d1 L34-69)."""
    found = _one(tmp_path, flaw, commits=3)
    assert (found["index"], found["reason"]) == (index, reason)
    assert detail in str(found["detail"])


def test_an_entry_past_the_head_is_a_conflict(tmp_path: Path) -> None:
    """legacy.rs @fd24e768 L59-60: the walk refuses an entry whose index is past the head's
    (``Conflict``), reported at that index."""
    src = tmp_path / "cell.redb"
    names = write_store(src, origins=1, commits=2)
    origin = bytes.fromhex(names[0])
    with RedbSource(src) as s:
        third = s.lookup(HISTORY, history_key(origin, 2))
        assert check_origin(s.lookup, origin, 2) is None

        def lookup(table: str, key: bytes) -> bytes | None:
            extra = table == HISTORY and key == history_key(origin, 3)
            return third if extra else s.lookup(table, key)

        found = check_origin(lookup, origin, 2)
    assert found is not None and (found["index"], found["reason"]) == (3, "Conflict")
    assert "past the head" in str(found["detail"])


@pytest.mark.parametrize(("flaw", "index", "reason"), [
    ((1, 2, "source-codec"), 2, "Data(UnsupportedSchema)"),
    ((1, 2, "usage-decrease"), 2, "Conflict"),
])  # fmt: skip
def test_plan_and_run_refuse_and_write_nothing(
    tmp_path: Path, flaw: tuple[int, int, str], index: int, reason: str
) -> None:
    """The operator sees the origin, the entry index and neuron's reason (legacy.rs
    @fd24e768 L31-33 and L102-104); the store is left byte-identical."""
    src = tmp_path / "cell.redb"
    names = write_store(src, origins=2, commits=2, flaw=flaw)
    bad = _found(src, names, 2)[0]["namespace"]
    store = tmp_path / "bbg"
    activate_subject(store)
    before = dump(store)
    maps = [f"--map={n}={k}" for n, k in zip(names, NONCES, strict=True)]
    for verb in ("plan", "run"):
        res = cli(verb, str(src), "--store", str(store), "--subject", SUBJECT, *maps, "--json")
        assert res.returncode == 3, (verb, res.stderr)
        err = " ".join(res.stderr.split())
        assert f"mapped origin {bad} is not neuron's legacy cell history at index {index}" in err
        assert f"({reason})" in err
        assert dump(store) == before
