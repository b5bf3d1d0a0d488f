"""The state neuron's import would build, built statically and validated (issue 27).

Rules transcribed from cyberia-to/neuron (each test names its lines):

* @fd24e768 ``engine/src/migration.rs`` ``prepare_import``: a prog per origin with step
  limit = the origin's allowance (L67-77); the live continuation's event read (L82-83), its
  attempt's ``cell/attempt/1`` (L90-96) and outcome's ``cell/outcome/1`` (value, else error,
  else ``Conflict``: L97-106); an invocation keyed by the live event, ``Conflict`` when the
  key is present (L149-176); ``state.charged += legacy.charged``, ``Budget`` on overflow
  (L178-181); one import per origin (L211-232); then ``prepare`` (L253);
* @53dbf8d1 ``engine/src/neuron.rs`` ``prepare``: held recomputed from the invocations that
  are not terminal (``available``: ``InvalidData`` when charged exceeds the limit), then
  ``NeuronState::encode``;
* @7d214e02 ``model/src/execution.rs`` ``NeuronState::encode`` -> ``validate``: progs <= 256,
  invocations <= 1024, imports <= 4096, charged + held <= limit (``Limit``); ``Prog::validate``
  (L51-64): 0 < step limit <= 1 000 000 (``Limit``).

The origins are written by :mod:`tests.support.cell_records` (live snapshots hold a resolved
operation with an attempt and an outcome value; resources limit 1 000 000, charged 10; the
commits charge the origin's one invocation 100 per index), the subject by
:mod:`tests.support.subject`.  Every refusal is made by ``plan`` and ``run`` alike (exit 3)
and leaves the store byte-identical (:func:`tests.pipeline.test_neuron_root._verbs`).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from hashing import hemera
from migrate.rules.cell_records import LegacyView, check_origin, read_origin
from migrate.rules.neuron_import import after_import
from migrate.rules.neuron_reader import Refused
from migrate.rules.neuron_state import State
from migrate.rules.sources import RedbSource
from tests.pipeline.test_neuron_root import NONCES, Root
from tests.pipeline.test_neuron_root import _verbs as verbs
from tests.support.cell_records import Builder, write_store
from tests.support.subject import SUBJECT, invocation, neuron_root

_U64 = (1 << 64) - 1
BIG = 10_000_000


def _views(src: Path, names: list[str], head: int = 2) -> list[LegacyView]:
    with RedbSource(src) as s:
        found = [read_origin(s.lookup, bytes.fromhex(n), head) for n in names]
    assert all(isinstance(v, LegacyView) for v in found), found
    return [v for v in found if isinstance(v, LegacyView)]


def _run(tmp_path: Path, root: Root, **store: object) -> tuple[list[str], list[str], list[int]]:
    """Write a two-origin store (``store``: :func:`write_store` options), map both to a
    subject whose root ``root`` writes: the origins, the plan/run texts and exit codes."""
    src = tmp_path / "cell.redb"
    names = write_store(src, **store)  # type: ignore[arg-type]
    results, _ = verbs(src, tmp_path / "bbg", names, root)
    return names, [str(r["text"]) for r in results], [int(r["code"]) for r in results]


def _refused(texts: list[str], codes: list[int], code: str, reason: str, detail: str) -> None:
    for text, exit_code in zip(texts, codes, strict=True):
        assert exit_code == 3, text
        assert f'"code": "{code}"' in text and f"({reason})" in text, text
        assert detail in text, text


def test_valid_live_origins_pass(tmp_path: Path) -> None:
    """Two live origins (distinct events, resolved operation: stage 2 with attempt, outcome
    and value, migration.rs L97-112) into a subject whose limit covers their charges (400) and
    the two invocations' held steps (2 x 999 990): ``plan`` and ``run`` succeed."""
    _, texts, codes = _run(tmp_path, partial(neuron_root, limit=BIG), live=True)
    assert codes == [0, 0], texts


def test_an_allowance_outside_the_step_bounds_is_a_limit(tmp_path: Path) -> None:
    """migration.rs L72 (step_limit = legacy.allowance) and execution.rs @7d214e02 L51-64
    (``Prog::validate``: step limit 0 -> ``Limit``, at ``NeuronState::encode``)."""
    names, texts, codes = _run(tmp_path, neuron_root, flaw=(1, 2, "policy-steps"))
    _refused(texts, codes, "import-state-invalid", "Data(Limit)", "step limit 0")


def test_two_origins_with_one_live_event_conflict(tmp_path: Path) -> None:
    """migration.rs L174-176: the second origin's invocation key (its live event) is taken
    by the first's -> ``Conflict``."""
    shared = ((0, 2, "live-event-shared"), (1, 2, "live-event-shared"))
    _, texts, codes = _run(tmp_path, partial(neuron_root, limit=BIG), live=True, flaws=shared)
    _refused(texts, codes, "import-conflict", "Conflict", "an origin before it")


def test_a_live_event_the_subject_already_runs_conflicts(tmp_path: Path) -> None:
    """migration.rs L174-176: the subject's state already holds an invocation under an
    origin's live event -> ``Conflict``."""
    src = tmp_path / "cell.redb"
    names = write_store(src, live=True)
    event = _views(src, names)[1].live.event  # type: ignore[union-attr]
    prog = hemera.hash(b"a prog the subject runs")

    def root(b: Builder, ns: bytes) -> bytes:
        job = invocation(b, prog, limit=100)
        return neuron_root(b, ns, progs=(prog,), invocations=((event, job),), held=100,
                           limit=BIG)  # fmt: skip

    results, _ = verbs(src, tmp_path / "bbg", names, root)
    texts = [str(r["text"]) for r in results]
    _refused(texts, [int(r["code"]) for r in results], "import-conflict", "Conflict",
             "the subject already runs it")  # fmt: skip


def test_held_steps_over_the_root_limit_are_a_limit(tmp_path: Path) -> None:
    """neuron.rs @53dbf8d1 ``prepare`` (held = each running invocation's available steps:
    2 x 999 990) and execution.rs @7d214e02 ``NeuronState::validate`` (charged + held over
    the limit 1 000 000 -> ``Limit``)."""
    _, texts, codes = _run(tmp_path, neuron_root, live=True)
    _refused(texts, codes, "import-state-invalid", "Data(Limit)", "over its limit 1000000")


def test_a_live_limit_below_its_charge_is_invalid(tmp_path: Path) -> None:
    """neuron.rs @53dbf8d1 ``prepare``: ``available`` of an invocation charged 10 under a
    limit of 0 fails (execution.rs @7d214e02 ``Invocation::available`` -> ``InvalidData``)."""
    _, texts, codes = _run(tmp_path, partial(neuron_root, limit=BIG), live=True,
                           flaw=(0, 2, "live-limit"))  # fmt: skip
    _refused(texts, codes, "import-state-invalid", "Data(InvalidData)", "exceed its limit")


def test_charged_overflow_is_a_budget(tmp_path: Path) -> None:
    """migration.rs L178-181: the subject's charged (2^64 - 2, within its limit 2^64 - 1)
    plus an origin's charges (200) overflows a u64 -> ``Budget``."""
    root = partial(neuron_root, limit=_U64, charged=_U64 - 1)
    _, texts, codes = _run(tmp_path, root)
    _refused(texts, codes, "import-state-invalid", "Budget", "overflows u64")


def test_more_than_4096_imports_is_a_limit(tmp_path: Path) -> None:
    """migration.rs L211-232 (one import per origin) and execution.rs @7d214e02
    ``NeuronState::validate``: a subject state holding 4095 imports and two origins -> 4097
    imports (``Limit``); 4094 and two -> 4096 pass.  Checked on the state and the origins'
    views directly: a subject store of 4095 imports takes minutes to write row by row."""
    src = tmp_path / "cell.redb"
    names = write_store(src)
    origins = [(v, bytes.fromhex(n)) for v, n in zip(_views(src, names), NONCES, strict=True)]
    subject = bytes.fromhex(SUBJECT)

    def state(imports: int) -> State:
        held = {hemera.hash(b"imported %d" % i): bytes(32) for i in range(imports)}
        return State(bytes(32), subject, bytes(32), bytes(32), 0, 1_000_000, 0, 0,
                     frozenset(), held)  # fmt: skip

    after_import(state(4094), subject, origins)
    with pytest.raises(Refused) as refused:
        after_import(state(4095), subject, origins)
    assert refused.value.reason == "Data(Limit)" and "(2, 0, 4097)" in refused.value.detail


@pytest.mark.parametrize(("flaw", "reason", "detail"), [
    ("attempt-missing", "Data(Missing)", "(attempt)"),
    ("outcome-empty", "Conflict", "neither a value nor an error"),
])  # fmt: skip
def test_prepare_import_reads_the_attempt_and_outcome(
    tmp_path: Path, flaw: str, reason: str, detail: str
) -> None:
    """migration.rs L90-106: the attempt is read as a ``cell/attempt/1`` (7 fields; none
    written: ``Data(Missing)``) and the outcome's value, else its error, else ``Conflict``;
    reported as the origin's refusal at its head index."""
    src = tmp_path / "cell.redb"
    names = write_store(src, live=True, flaw=(1, 2, flaw))
    with RedbSource(src) as s:
        found = [check_origin(s.lookup, bytes.fromhex(n), 2) for n in names]
    refused = [f for f in found if f is not None]
    assert len(refused) == 1, found
    assert (refused[0]["index"], refused[0]["reason"]) == (2, reason)
    assert detail in str(refused[0]["detail"])
