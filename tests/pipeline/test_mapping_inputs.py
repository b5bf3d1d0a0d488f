"""The checks neuron's import makes on the operator's inputs alone, before it reads anything.

Transcribed from cyberia-to/neuron@fd24e768 ``engine/src/migration.rs``:

* L10: ``ImportOrigin { origin, install_nonce: [u8; 32] }`` -- an install nonce is 32 bytes
  (the prog id of L62-63, ``neuron/prog-id/1(neuron, nonce)``, is defined for no other length);
* L40-42: ``origins.is_empty() || origins.len() > MAX_PROGS`` → ``Error::Budget`` (MAX_PROGS =
  256);
* L43-46: an origin given twice → ``Error::Conflict``;
* L58-60: an origin that is the subject → ``Error::Conflict``;
* L62-66: an origin whose prog id (``neuron/prog-id/1(subject, install nonce)``) is already
  installed → ``Error::Conflict`` -- so two origins with one install nonce are refused.

Each is refused by ``plan`` and ``run`` with neuron's reason named, and the destination is left
as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bbg_core.errors import UsageError
from migrate.job.mapping import build
from tests.pipeline.helpers import cli
from tests.support.cell_records import write_store
from tests.support.stores import dump
from tests.support.subject import SUBJECT, activate_subject

VERBS = ("plan", "run")


def _setup(tmp_path: Path) -> tuple[Path, Path, list[str], dict[str, bytes]]:
    src = tmp_path / "cell.redb"
    names = write_store(src)
    store = tmp_path / "bbg"
    activate_subject(store)
    return src, store, names, dump(store)


def _run(verb: str, src: Path, store: Path, maps: list[str]) -> tuple[int, str]:
    args = [verb, str(src), "--store", str(store), "--subject", SUBJECT]
    for item in maps:
        args += ["--map", item]
    res = cli(*args)
    return res.returncode, " ".join(res.stderr.split())


@pytest.mark.parametrize("length", [1, 16, 31, 33])
def test_an_install_nonce_of_another_length_is_refused(tmp_path: Path, length: int) -> None:
    """migration.rs L10: ``install_nonce: [u8; 32]``."""
    src, store, names, before = _setup(tmp_path)
    short = "5a" * length
    for verb in VERBS:
        code, err = _run(verb, src, store, [f"{names[0]}={'01' * 32}", f"{names[1]}={short}"])
        assert code == 2, (verb, err)
        assert f"origin {names[1]}: install nonce '{short}' is {length} bytes" in err
        assert "exactly 32 bytes" in err
        assert dump(store) == before


def test_a_mapping_file_with_a_short_nonce_is_refused(tmp_path: Path) -> None:
    src, store, names, before = _setup(tmp_path)
    doc = {
        "subject": SUBJECT,
        "origins": [{"origin": ns, "install_nonce": "01" * (32 - i)} for i, ns in enumerate(names)],
    }
    mapping = tmp_path / "mapping.json"
    mapping.write_text(json.dumps(doc))
    for verb in VERBS:
        res = cli(verb, str(src), "--store", str(store), "--mapping", str(mapping))
        err = " ".join(res.stderr.split())
        assert res.returncode == 2, (verb, err)
        assert f"origin {names[1]}: install nonce" in err and "is 31 bytes" in err
        assert dump(store) == before


def test_thirty_two_byte_nonces_are_accepted() -> None:
    mapping = build(SUBJECT, [("cd" * 32, "00" * 32)])
    assert mapping.origins[0].install_nonce == bytes(32)
    with pytest.raises(UsageError) as info:
        build(SUBJECT, [("cd" * 32, "00" * 31)])
    assert (info.value.context["origin"], info.value.context["length"]) == ("cd" * 32, 31)


def test_a_repeated_origin_is_refused_as_neuron_refuses_it(tmp_path: Path) -> None:
    """migration.rs L43-46: a repeated origin → ``Conflict``."""
    src, store, names, before = _setup(tmp_path)
    for verb in VERBS:
        code, err = _run(verb, src, store, [f"{names[0]}={'01' * 32}", f"{names[0]}={'02' * 32}"])
        assert code == 2, (verb, err)
        assert f"origin {names[0]} is mapped twice" in err and "(Conflict)" in err
        assert dump(store) == before


def test_one_install_nonce_for_two_origins_is_refused(tmp_path: Path) -> None:
    """migration.rs L62-66: the prog id is ``neuron/prog-id/1(subject, install nonce)``; the
    second origin with the same nonce finds its prog installed → ``Conflict``."""
    src, store, names, before = _setup(tmp_path)
    for verb in VERBS:
        code, err = _run(verb, src, store, [f"{ns}={'03' * 32}" for ns in names])
        assert code == 2, (verb, err)
        assert "is used for two origins" in err and "(Conflict)" in err
        assert dump(store) == before


def test_more_than_max_progs_origins_are_refused_with_budget(tmp_path: Path) -> None:
    """migration.rs L40-42: more than MAX_PROGS (256) origins → ``Budget``."""
    src, store, names, before = _setup(tmp_path)
    extra = [f"{i:064x}={i:064x}" for i in range(1, 256)]  # 255 more: 257 in all
    maps = [f"{ns}={'e' * 63}{i}" for i, ns in enumerate(names)] + extra
    for verb in VERBS:
        code, err = _run(verb, src, store, maps)
        assert code == 3, (verb, err)
        assert "limit-exceeded: 257 origins mapped" in err
        assert "at most 256 (MAX_PROGS) and refuses more (Budget)" in err
        assert dump(store) == before


def test_an_origin_that_is_the_subject_is_a_conflict(tmp_path: Path) -> None:
    """migration.rs L58-60: ``origin == subject`` → ``Conflict``."""
    src, store, names, before = _setup(tmp_path)
    maps = [f"{ns}={i + 1:064x}" for i, ns in enumerate(names)] + [f"{SUBJECT}={'09' * 32}"]
    for verb in VERBS:
        code, err = _run(verb, src, store, maps)
        assert code == 3, (verb, err)
        assert f"mapping-origin-is-subject: origin {SUBJECT} is the subject itself" in err
        assert "neuron's import refuses it (Conflict)" in err
        assert dump(store) == before
