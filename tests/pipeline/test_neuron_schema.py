"""Schema identity: a record's field 0 must be neuron's schema id of its name.

Rule transcribed from cyberia-to/neuron@dbebea3f ``model/src/data.rs``: ``Reader::record``
reads field 0 as a ref and refuses it unless it equals ``schema_id(name)``
(``Error::UnsupportedSchema``, before the field count); ``Builder::schema`` = the particle of
``pair(atom(0x53434831), fields(text(name), ref(contract_id(name))))``; ``contract_id`` =
hemera of ``model/schema-suite-neuron-v1.txt`` for ``neuron/`` names, of
``model/schema-suite-v1.txt`` for every other name.  The import reads ``cell/birth/1`` /
``cell/commit/1`` for each origin (neuron@fd24e768 ``engine/src/legacy.rs``) and the subject's
head as ``neuron/activation/1`` / ``neuron/commit/1`` (neuron@53dbf8d1 ``engine/src/neuron.rs``
``inspect`` L114-118).

Which values are what:

* **transcribed** (produced by the real crates): the atom and pair particles below, printed by
  ``cell-fixtures nox-id`` built from cyber-hemera e63b85a and nox ``particle_of`` (the same
  values tests/hemera/test_tree.py and tests/nox/test_ids.py pin);
* **derived, not transcribed**: the two suite contract ids (hemera of each suite file as the
  public file index stores it; neuron writes no expected value down, in code, tests or docs)
  and the schema ids and the original profile particle below, computed from them.  They pin
  this derivation against change; no neuron-written store has confirmed them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hashing import hemera
from migrate.rules import neuron_schema as ns
from migrate.rules.cell_records import check_origin
from migrate.rules.neuron_reader import Refused
from migrate.rules.neuron_state import inspect
from migrate.rules.sources import RedbSource
from tests.pipeline.helpers import cli
from tests.support.cell_records import write_store
from tests.support.stores import dump, live_get
from tests.support.subject import SUBJECT, activate_subject

# Transcribed: `cell-fixtures nox-id` (cyber-hemera e63b85a, nox particle_of) outputs.
ATOM0 = "47ff2df1749c1a6c30bba58202ddb7dacacdf95db5f2abacff8fcb81202f7702"
ATOM1 = "8f8df9b8a6c64fe5cfd103c4d8564d92d22e5d62a6edc44301e1aa260d387abe"
ATOM2 = "882c100b88f5fc989615b32317463f725f578a069a07782f019deed6486090e9"
PAIR12 = "c2e17f0c787ac64d4a96c84ad57996e5cf56b02e2247575100ce81c09d12a9a0"
# Derived (see the module docstring): regression pins of the derivation, not neuron's output.
DERIVED = {
    "cell/birth/1": "788b57d994e425e02330d10efbdfbcf985871483b8aaa3b28d902e2237f69b72",
    "cell/commit/1": "aef5e9e7d964a4ceeea7004236d24d5282d392d5d5739928c23fcc7d4d12e7d9",
    "neuron/activation/1": "42ae90edb685771419461d9b50528a67b3281957ae9d44a79cf49e3f67caad09",
    "neuron/commit/1": "1082e880d944ecee8b4e4fe6c7a6199a71ea3fc1d8bb1d50c5fd64b0d4155207",
}
NONCES = [f"{i + 1:064x}" for i in range(2)]


def test_the_encoder_rests_on_particles_of_the_real_crates() -> None:
    """The Model B primitives schema ids are built from give the real crates' particles."""
    assert ns.atom(0).hex() == ATOM0  # neuron's ``fields`` terminator (Reader::fields)
    assert ns.atom(1).hex() == ATOM1 and ns.atom(2).hex() == ATOM2
    assert ns.pair(ns.atom(1), ns.atom(2)).hex() == PAIR12
    assert ns.fields([]).hex() == ATOM0
    assert ns.uint(1) == ns.pair(ns.atom(0), ns.atom(1))
    assert ns.uint(1 << 32 | 2).hex() == ns.pair(ns.atom(1), ns.atom(2)).hex() == PAIR12


def test_schema_ids_follow_the_suite_by_name() -> None:
    """data.rs ``contract``: ``neuron/`` names use the neuron suite, all others the cell one."""
    assert ns.contract_id("neuron/root/1") == ns.NEURON_CONTRACT
    assert ns.contract_id("cell/birth/1") == ns.contract_id("rune/act/1") == ns.CELL_CONTRACT
    for name, want in DERIVED.items():
        assert ns.schema_id(name).hex() == want
        manifest = ns.fields([ns.text(name), ns.ref(ns.contract_id(name))])
        assert ns.schema_id(name) == ns.pair(ns.atom(0x53434831), manifest)
    # the same name under the other suite is another id
    assert ns.schema_id("cell/birth/1") != ns.pair(
        ns.atom(0x53434831), ns.fields([ns.text("cell/birth/1"), ns.ref(ns.NEURON_CONTRACT)])
    )


def _refused_by_plan_and_run(src: Path, store: Path, names: list[str]) -> list[str]:
    """``plan`` and ``run`` of ``src`` mapped to an activated subject: both exit 3 and leave
    the store as it was; their error messages."""
    activate_subject(store)
    before = dump(store)
    maps = [f"--map={n}={k}" for n, k in zip(names, NONCES, strict=True)]
    errors = []
    for verb in ("plan", "run"):
        res = cli(verb, str(src), "--store", str(store), "--subject", SUBJECT, *maps, "--json")
        assert res.returncode == 3, (verb, res.stderr)
        assert dump(store) == before
        errors.append(" ".join(res.stderr.split()))
    return errors


def _refusal(src: Path, origin: str, head_index: int) -> dict[str, object] | None:
    with RedbSource(src) as s:
        return check_origin(s.lookup, bytes.fromhex(origin), head_index)


# A wrong field 0: a stand-in id; the commit schema under the neuron suite (the wrong
# contract); the schema of another cell record.
WRONG = {
    "stand-in": hemera.hash(b"not a schema id"),
    "wrong-suite": ns.pair(
        ns.atom(0x53434831), ns.fields([ns.text("cell/commit/1"), ns.ref(ns.NEURON_CONTRACT)])
    ),
    "other-name": ns.schema_id("cell/event/1"),
}


@pytest.mark.parametrize("kind", list(WRONG))
def test_a_commit_under_another_schema_is_unsupported(tmp_path: Path, kind: str) -> None:
    src = tmp_path / "cell.redb"
    names = write_store(src, origins=2, commits=3, foreign=(0, 2, WRONG[kind]))
    found = [r for r in (_refusal(src, n, 3) for n in names) if r is not None]
    assert len(found) == 1
    assert (found[0]["index"], found[0]["reason"]) == (2, "Data(UnsupportedSchema)")
    assert f"is not the cell/commit/1 schema id {DERIVED['cell/commit/1']}" in str(
        found[0]["detail"]
    )


def test_a_birth_under_another_schema_is_unsupported(tmp_path: Path) -> None:
    src = tmp_path / "cell.redb"
    names = write_store(src, origins=1, commits=0, foreign=(0, 0, WRONG["stand-in"]))
    found = _refusal(src, names[0], 0)
    assert found is not None and found["reason"] == "Data(UnsupportedSchema)"
    assert "cell/birth/1 schema id" in str(found["detail"])


def test_plan_and_run_refuse_an_unsupported_schema_and_write_nothing(tmp_path: Path) -> None:
    src = tmp_path / "cell.redb"
    names = write_store(src, origins=2, commits=2, foreign=(1, 1, WRONG["wrong-suite"]))
    for err in _refused_by_plan_and_run(src, tmp_path / "bbg", names):
        assert "Data(UnsupportedSchema)" in err and "not neuron's legacy cell history" in err


def test_a_subject_head_under_another_schema_is_refused(tmp_path: Path) -> None:
    """neuron.rs L114-118: the head is read as ``neuron/activation/1`` (index 0)."""
    src = tmp_path / "cell.redb"
    names = write_store(src)
    # neuron/activation/1 named under the cell suite: the wrong contract.
    wrong = ns.pair(
        ns.atom(0x53434831), ns.fields([ns.text("neuron/activation/1"), ns.ref(ns.CELL_CONTRACT)])
    )
    store = tmp_path / "bbg"
    head = activate_subject(store, schema=wrong)
    before = dump(store)
    with pytest.raises(Refused) as refused:
        inspect(
            lambda table, key: live_get(store, table, key),
            bytes.fromhex(SUBJECT), head.index, head.commit,
        )  # fmt: skip
    assert refused.value.reason == "Data(UnsupportedSchema)"
    assert DERIVED["neuron/activation/1"] in refused.value.detail
    maps = [f"--map={n}={k}" for n, k in zip(names, NONCES, strict=True)]
    for verb in ("plan", "run"):
        res = cli(verb, str(src), "--store", str(store), "--subject", SUBJECT, *maps, "--json")
        assert res.returncode == 3, (verb, res.stderr)
        doc = json.loads(res.stdout or res.stderr)
        assert "subject-not-activated" in json.dumps(doc)
        assert "Data(UnsupportedSchema)" in json.dumps(doc)
        assert dump(store) == before


# The head's snapshot (neuron@fd24e768 engine/src/legacy.rs ``inspect`` L27-30,
# legacy/records.rs ``snapshot_at`` and ``profile`` @f18015c2, model records.rs
# ``Snapshot::read`` @2fe713bd): a cell/snapshot/1 whose lifecycle is one of five variants
# (else UnsupportedSchema) and whose profile is the one original profile (else Unsupported).
# Derived, not transcribed (module docstring): the original profile particle.
PROFILE = "a5abc59d8059937713360795d0279091aa74914ce0bd3f1b2d5a4a3c27a735fe"


def test_the_original_profile_is_one_fixed_particle() -> None:
    assert ns.legacy_profile().hex() == PROFILE
    rule = ns.ref(hemera.hash(ns.RUNTIME_RULE))
    seven = [rule] * 7
    assert ns.legacy_profile() == ns.record(
        "cell/profile/1", [ns.variant("profile/runtime"), *seven, ns.sequence([])]
    )
    assert sorted(ns.lifecycle_variants().values()) == sorted(ns.LIFECYCLES)


def test_a_head_snapshot_with_another_profile_is_unsupported(tmp_path: Path) -> None:
    src = tmp_path / "cell.redb"
    other = hemera.hash(b"a profile of another runtime")
    names = write_store(src, origins=2, commits=2, odd=(1, (other, None)))
    found = [r for r in (_refusal(src, n, 2) for n in names) if r is not None]
    assert len(found) == 1
    assert (found[0]["index"], found[0]["reason"]) == (2, "Unsupported")
    assert f"its profile {other.hex()} is not the original cell runtime profile" in str(
        found[0]["detail"]
    )
    for err in _refused_by_plan_and_run(src, tmp_path / "bbg", names):
        assert "(Unsupported)" in err


def test_a_head_snapshot_with_an_unknown_lifecycle_is_unsupported(tmp_path: Path) -> None:
    src = tmp_path / "cell.redb"
    stage = ns.variant("operation-stage/pending")  # a variant, but no lifecycle
    names = write_store(src, origins=1, commits=1, odd=(0, (None, stage)))
    found = _refusal(src, names[0], 1)
    assert found is not None and found["reason"] == "Data(UnsupportedSchema)"
    assert "none of the five cell/lifecycle variants" in str(found["detail"])
