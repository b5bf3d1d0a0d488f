"""The subject's ``neuron/root/1`` state, read as neuron's import reads it, and the import
checks that depend on it.

Rules transcribed from cyberia-to/neuron:

* @53dbf8d1 ``engine/src/neuron.rs`` ``Neuron::inspect`` (L111-128): the root is field 1 of
  the ``neuron/activation/1`` head (field 4 of a ``neuron/commit/1``), read by
  ``NeuronState::read``; a state whose ``neuron`` is not the subject → ``Conflict``;
* @7d214e02 ``model/src/execution.rs`` ``NeuronState::read``/``validate``, ``Prog::read``,
  ``Invocation::read``/``validate``: ``neuron/root/1`` has 13 fields; progs (<= 256),
  invocations (<= 1024) and imports (<= 4096) are maps; ``Prog::read`` refuses a step limit of 0
  (``Limit``); ``validate`` refuses charged + held over the limit (``Limit``), an invocation
  whose prog is not held and a held total other than the running invocations' available
  steps (``InvalidData``);
* @2fe713bd ``model/src/records.rs`` ``Reader::map``: keys strictly increasing, else
  ``InvalidData``;
* @fd24e768 ``engine/src/migration.rs`` ``prepare_import``: an import whose request id
  ``neuron/request-id/1(subject, nonce(import nonce))`` the subject's request index already
  resolves (L50-53; the index is the store's ``application_requests``, key namespace ‖
  request: neuron@34bbff9d ``node/src/lib.rs`` ``GraphPort::resolve`` → cybergraph@0213210e
  ``src/application.rs`` ``ApplicationGraph::resolve``), an origin already a key of the
  state's imports (L58-60) or whose prog id ``neuron/prog-id/1(subject, nonce(install
  nonce))`` is already a key of its progs (L62-66) → ``Conflict``.

Which values are what: the prog ids, request ids and the ``neuron/root/1`` schema id below
come from this project's **derived** encoder (:mod:`migrate.rules.neuron_schema`, built on the
suite hashes derived by hashing neuron's suite files; neuron writes no expected id down) --
the tests pin that a state holding *that* id is refused, not that neuron would compute the
same bytes.  The states are written by :mod:`tests.support.subject` in neuron's layout.
Each refusal is made by ``plan`` and ``run`` alike and leaves the store byte-identical.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from hashing import hemera
from migrate.rules import neuron_schema as ns
from migrate.rules.neuron_reader import Refused
from migrate.rules.neuron_state import inspect
from migrate.store.codec import REQUESTS, request_key, request_value
from tests.pipeline.helpers import cli
from tests.support.cell_records import Builder, write_store
from tests.support.stores import dump, live_get, put_raw
from tests.support.subject import SUBJECT, activate_subject, invocation, neuron_root

NONCES = [f"{i + 1:064x}" for i in range(2)]
SUBJECT_ID = bytes.fromhex(SUBJECT)
Root = Callable[[Builder, bytes], bytes]


def _verbs(
    src: Path, store: Path, names: list[str], root: Root, extra: tuple[str, ...] = (),
    requests: tuple[bytes, ...] = (),
) -> tuple[list[dict[str, Any]], Any]:  # fmt: skip
    """``plan`` then ``run`` of ``src`` mapped to a subject whose root ``root`` writes (and
    whose request index also holds ``requests``), with ``extra`` options: each one's JSON
    output and exit code; asserts the store is byte-identical after each refusal (and after
    a ``plan``)."""
    head = activate_subject(store, root=root)
    for request in requests:
        put_raw(store, REQUESTS, request_key(SUBJECT_ID, request), request_value(head.commit, head))
    before = dump(store)
    maps = [f"--map={n}={k}" for n, k in zip(names, NONCES, strict=True)] + list(extra)
    out = []
    for verb in ("plan", "run"):
        res = cli(verb, str(src), "--store", str(store), "--subject", SUBJECT, *maps, "--json")
        doc = json.loads(res.stdout or res.stderr)
        out.append({"code": res.returncode, "doc": doc, "text": json.dumps(doc)})
        if res.returncode != 0 or verb == "plan":
            assert dump(store) == before, verb
    return out, before


def _refused(tmp_path: Path, root: Root) -> list[str]:
    src = tmp_path / "cell.redb"
    names = write_store(src)
    results, _ = _verbs(src, tmp_path / "bbg", names, root)
    for r in results:
        assert r["code"] == 3, r["text"]
    return [r["text"] for r in results]


def test_prog_and_request_ids_are_neuron_records_of_the_nonce() -> None:
    """migration.rs L62-63 / neuron.rs ``request``: ``neuron/prog-id/1`` and
    ``neuron/request-id/1`` of ``(ref(subject), nonce)``, the nonce eight u32 LE word atoms
    (records.rs ``Builder::nonce``).  Derived encoder: this pins the layout, not neuron's bytes."""
    nonce = bytes(range(32))
    words = ns.fields([ns.atom(int.from_bytes(nonce[i : i + 4], "little")) for i in (0, 4, 8,
                       12, 16, 20, 24, 28)])  # fmt: skip
    assert ns.nonce(nonce) == words
    assert ns.prog_id(SUBJECT_ID, nonce) == ns.record(
        "neuron/prog-id/1", [ns.ref(SUBJECT_ID), words]
    )
    assert ns.request_id(SUBJECT_ID, nonce) == ns.record(
        "neuron/request-id/1", [ns.ref(SUBJECT_ID), words]
    )
    assert ns.prog_id(SUBJECT_ID, nonce) != ns.request_id(SUBJECT_ID, nonce)
    with pytest.raises(ValueError):
        ns.nonce(bytes(31))


def _conflicts(
    tmp_path: Path, root: Callable[[list[str]], Root], extra: tuple[str, ...] = (),
    requests: tuple[bytes, ...] = (),
) -> tuple[list[str], list[str]]:  # fmt: skip
    """The origins and the ``plan``/``run`` messages of a mapping the subject's state (the
    root ``root(origins)`` writes) refuses with ``import-conflict`` (neuron's ``Conflict``)."""
    src = tmp_path / "cell.redb"
    names = write_store(src)
    results, _ = _verbs(src, tmp_path / "bbg", names, root(names), extra, requests)
    for r in results:
        assert r["code"] == 3, r["text"]
        assert "import-conflict" in r["text"] and "(Conflict)" in r["text"]
    return names, [r["text"] for r in results]


def test_an_origin_the_subject_already_imported_is_a_conflict(tmp_path: Path) -> None:
    names, texts = _conflicts(
        tmp_path, lambda names: partial(neuron_root, imports=(bytes.fromhex(names[1]),))
    )
    for text in texts:
        assert f"origin {names[1]} is already imported by subject {SUBJECT}" in text


def test_an_install_nonce_whose_prog_is_installed_is_a_conflict(tmp_path: Path) -> None:
    installed = ns.prog_id(SUBJECT_ID, bytes.fromhex(NONCES[0]))  # derived (module docstring)
    _, texts = _conflicts(tmp_path, lambda _: partial(neuron_root, progs=(installed,)))
    for text in texts:
        assert f"gives prog {installed.hex()}, which subject {SUBJECT} already has" in text


def test_other_imports_and_progs_do_not_conflict(tmp_path: Path) -> None:
    """A state holding other origins and progs (one with a running invocation) reads and
    binds: the binding names the root's network, policy and epoch."""
    src = tmp_path / "cell.redb"
    names = write_store(src)
    other = ns.prog_id(SUBJECT_ID, b"\x09" * 32)

    def root(b: Builder, ident: bytes) -> bytes:
        job = (hemera.hash(b"an invocation"), invocation(b, other, limit=40, charged=10))
        return neuron_root(b, ident, progs=(other,), imports=(b"\x07" * 32,),
                           invocations=(job,), charged=10, held=30)  # fmt: skip

    results, _ = _verbs(src, tmp_path / "bbg", names, root)
    assert [r["code"] for r in results] == [0, 0], results
    for r in results:
        bound = r["doc"]["neuron_import"]["binding"]
        assert bound["network"] == hemera.hash(b"stand-in network").hex()
        assert bound["policy"] == hemera.hash(b"stand-in policy").hex()
        assert bound["epoch"] == 0


FLAWS: dict[str, tuple[Root, str, str]] = {
    "root under another schema": (
        partial(neuron_root, schema=ns.schema_id("neuron/commit/1")),
        "Data(UnsupportedSchema)",
        f"is not the neuron/root/1 schema id {ns.schema_id('neuron/root/1').hex()}",
    ),
    "root of another neuron": (
        partial(neuron_root, neuron=b"\x05" * 32), "Conflict", "its neuron is not the subject"
    ),
    "imports out of order": (
        partial(neuron_root, imports=(b"\x09" * 32, b"\x08" * 32), keep_order=True),
        "Data(InvalidData)",
        f"key {'08' * 32} does not follow {'09' * 32}",
    ),
    "a prog with step limit 0": (
        partial(neuron_root, progs=(b"\x03" * 32,), step_limit=0),
        "Data(Limit)",
        "step limit 0",
    ),
    "charged over the limit": (
        partial(neuron_root, limit=10, charged=11), "Data(Limit)", "over its limit 10"
    ),
    "held without invocations": (
        partial(neuron_root, held=5), "Data(InvalidData)", "held 5 or charged 0"
    ),
    "no root content": (
        lambda b, ident: hemera.hash(b"a root nobody wrote"),
        "Data(Missing)",
        "is not a content row",
    ),
}


@pytest.mark.parametrize("flaw", list(FLAWS))
def test_a_root_neuron_refuses_is_refused_by_plan_and_run(tmp_path: Path, flaw: str) -> None:
    root, reason, detail = FLAWS[flaw]
    for text in _refused(tmp_path, root):
        assert "subject-not-activated" in text and f"({reason})" in text
        assert detail in text


def test_an_invocation_of_a_prog_the_state_does_not_hold_is_invalid(tmp_path: Path) -> None:
    """execution.rs ``NeuronState::validate``: every invocation's prog is a key of progs."""

    def root(b: Builder, ident: bytes) -> bytes:
        job = (hemera.hash(b"an invocation"), invocation(b, b"\x04" * 32))
        return neuron_root(b, ident, invocations=(job,), held=100)

    store = tmp_path / "bbg"
    head = activate_subject(store, root=root)
    with pytest.raises(Refused) as refused:
        inspect(lambda t, k: live_get(store, t, k), SUBJECT_ID, head.index, head.commit)
    assert refused.value.reason == "Data(InvalidData)"
    assert "names a prog it does not hold" in refused.value.detail


IMPORT_NONCE = "5e" * 32


def test_an_import_request_the_subject_committed_is_a_conflict(tmp_path: Path) -> None:
    """The request id of ``--import-nonce`` is in the subject's request index: neuron's
    ``prepare_import`` refuses (``Conflict``).  The request id is the derived encoder's."""
    request = ns.request_id(SUBJECT_ID, bytes.fromhex(IMPORT_NONCE))
    extra = ("--import-nonce", IMPORT_NONCE)
    _, texts = _conflicts(tmp_path, lambda _: neuron_root, extra, (request,))
    for text in texts:
        assert f"gives request {request.hex()}, which subject {SUBJECT} has already" in text


def test_a_fresh_import_nonce_is_named_in_the_completing_command(tmp_path: Path) -> None:
    """Another request of the subject (another nonce) is no conflict; the import nonce is
    the one ``neuron import --nonce`` is told to use, and it is part of the mapping."""
    src = tmp_path / "cell.redb"
    names = write_store(src)
    other = ns.request_id(SUBJECT_ID, b"\x11" * 32)
    extra = ("--import-nonce", IMPORT_NONCE)
    results, _ = _verbs(src, tmp_path / "bbg", names, neuron_root, extra, (other,))
    assert results[0]["doc"]["mapping"]["import_nonce"] == IMPORT_NONCE  # plan
    for r in results:
        assert r["code"] == 0, r["text"]
        complete = r["doc"]["neuron_import"]["complete_with"]
        assert complete.endswith(f" --nonce {IMPORT_NONCE}")


def test_a_mapping_file_carries_the_import_nonce(tmp_path: Path) -> None:
    src = tmp_path / "cell.redb"
    names = write_store(src)
    store = tmp_path / "bbg"
    head = activate_subject(store)
    request = ns.request_id(SUBJECT_ID, bytes.fromhex(IMPORT_NONCE))
    put_raw(store, REQUESTS, request_key(SUBJECT_ID, request), request_value(head.commit, head))
    before = dump(store)
    doc = {
        "subject": SUBJECT,
        "origins": [{"origin": n, "install_nonce": k} for n, k in zip(names, NONCES, strict=True)],
        "import_nonce": IMPORT_NONCE,
    }
    mapping = tmp_path / "mapping.json"
    mapping.write_text(json.dumps(doc))
    res = cli("plan", str(src), "--store", str(store), "--mapping", str(mapping), "--json")
    assert res.returncode == 3 and "import-conflict" in res.stderr + res.stdout
    assert dump(store) == before


@pytest.mark.parametrize(
    "args",
    [("--import-nonce", "5e" * 31, "must be 32 bytes"), ("--import-nonce", "zz" * 32, "not hex")],
    ids=["31 bytes", "not hex"],
)
def test_an_import_nonce_that_is_not_32_bytes_is_a_usage_error(
    tmp_path: Path, args: tuple[str, str, str]
) -> None:
    """``prepare_import(.., nonce: [u8; 32], ..)`` (migration.rs L34-38)."""
    src = tmp_path / "cell.redb"
    names = write_store(src)
    maps = [f"--map={n}={k}" for n, k in zip(names, NONCES, strict=True)]
    res = cli("plan", str(src), "--store", str(tmp_path / "bbg"), "--subject", SUBJECT, *maps,
              *args[:2])  # fmt: skip
    assert res.returncode == 2, res.stderr
    err = " ".join(res.stderr.split())
    assert f"--import-nonce: '{args[1]}'" in err and args[2] in err
    assert not (tmp_path / "bbg").exists()
