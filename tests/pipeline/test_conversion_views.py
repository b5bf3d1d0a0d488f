"""Conversion versus semantic import, and the two content-check modes, on the legacy fixtures.

The fixture verdicts come from the reference generator (fixtures/legacy/README.md): ``valid``
follows bbg's conversion rules (cyberia-to/bbg ``rs/src/storage/application/validation.rs``)
plus cybergraph's codec-checked content rules; ``semantic_errors`` lists what neuron's
semantic import (cyberia-to/neuron ``engine/src/legacy.rs``, commit fd24e76) refuses in a
mapped origin.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import schemas
from tests.pipeline.helpers import LEGACY, cli, expected, unpack

BIRTH = LEGACY / "cell-birth-mismatch.redb.gz"
CHILD = LEGACY / "cell-invalid-data-child.redb.gz"
DATA_ID = LEGACY / "cell-invalid-data-id.redb.gz"
TAGGED = LEGACY / "cell-data-tagged-ids.redb.gz"


def _inspect(path: Path, *extra: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    res = cli("inspect", str(path), "--json", *extra)
    doc = json.loads(res.stdout)
    schemas.validate(doc, "redb-inspect")
    return res.returncode, doc


@pytest.mark.slow
def test_birth_mismatch_converts_and_is_reported_as_semantic(tmp_path: Path) -> None:
    src = unpack(BIRTH, tmp_path / "src")
    want = expected(BIRTH)
    code, doc = _inspect(src)
    assert code == 0 and doc["valid"] and doc["conversion_valid"] and doc["errors"] == []
    assert doc["semantic_errors"] == want["semantic_errors"]
    bad = want["semantic_errors"][0]["namespace"]
    assert {ns: o["mappable"] for ns, o in doc["origins"].items()} == {
        ns: ns != bad for ns in want["namespaces"]
    }
    # Plain conversion (bbg's rules): migrates.
    res = cli("run", str(src), "--store", str(tmp_path / "plain"), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["counts"]["namespaces"] == 3
    # Mapped: neuron's semantic import refuses that origin, before anything is written.
    maps = [f"--map={ns}={i + 1:064x}" for i, ns in enumerate(sorted(want["namespaces"]))]
    store = tmp_path / "mapped"
    res = cli("run", str(src), "--store", str(store), "--subject", "ab" * 32, *maps)
    assert res.returncode == 3
    assert "birth-mismatch" in res.stderr and bad in res.stderr
    assert not store.exists()


@pytest.mark.slow
def test_data_rules_in_codec_mode_and_not_in_none_mode(tmp_path: Path) -> None:
    for gz in (CHILD, DATA_ID):
        src = unpack(gz, tmp_path / gz.name)
        want = expected(gz)
        code, doc = _inspect(src)
        assert code == 3 and not doc["valid"]
        assert doc["errors"] == want["expected_errors"]
        assert doc["data_ids_checked"] and doc["content_check"] == "codec"
        assert doc["data_rows_with_id_mismatch"] == want["data_rows_with_id_mismatch"]
        # bbg's raw converter never decodes content: the same store converts.
        code, raw = _inspect(src, "--content-check", "none")
        assert code == 0 and raw["valid"] and raw["errors"] == []
        assert raw["content_check"] == "none" and not raw["data_ids_checked"]
        assert raw["data_rows_with_id_mismatch"] is None
        assert raw["archive_digest_sha256"] == doc["archive_digest_sha256"]
        res = cli("run", str(src), "--store", str(tmp_path / f"{gz.name}-none"),
                  "--content-check", "none", "--json")  # fmt: skip
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["content_check"] == "none"
        res = cli("run", str(src), "--store", str(tmp_path / f"{gz.name}-codec"))
        assert res.returncode == 3 and want["expected_errors"][0]["code"] in res.stderr


def test_raw_mode_copies_content_it_does_not_decode(tmp_path: Path) -> None:
    """bbg's migrate_redb checks content keys and sizes only: a codec byte it never reads is
    copied (validate re-checks the staged rows under the same mode)."""
    gz = LEGACY / "cell-invalid-unknown-codec.redb.gz"
    src = unpack(gz, tmp_path / "src")
    res = cli("run", str(src), "--store", str(tmp_path / "s"), "--content-check", "none",
              "--json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    receipt = json.loads(res.stdout)
    assert receipt["content_check"] == "none"
    assert receipt["digests"]["staged_archive_sha256"] == expected(gz)["archive_digest_sha256"]


def test_tagged_scheme_store_is_refused_under_codec_and_copied_under_none(tmp_path: Path) -> None:
    """cybergraph 546853d ``src/content.rs`` ``Content::new``: a Data payload goes to nox
    ``particle_of`` (nox 04425ac ``rs/encode.rs``), which takes 8 or 64 bytes only and fails
    any other length with ``InvalidLength`` (nox test ``invalid_length_rejected``); so every
    pre-dba9ceb tagged row is ``ContentError::InvalidData`` in the codec-checked import.  bbg's
    raw converter (mode ``none``) never decodes content and copies the store."""
    src = unpack(TAGGED, tmp_path / "src")
    code, doc = _inspect(src)
    want = expected(TAGGED)
    assert code == 3 and not doc["valid"] and want["valid"] is False
    # The scheme is still named, in the report and in each error.
    assert doc["data_id_scheme"] == "nox-tagged-v0" == want["data_id_scheme"]
    assert doc["data_content_ids"] == want["data_content_ids"]
    data_rows = want["content_codecs"]["data"]
    assert doc["data_rows_with_id_mismatch"] == data_rows == 29
    assert [e["code"] for e in doc["errors"]] == ["content-id-mismatch"] * data_rows
    assert all("tagged scheme (pre-dba9ceb)" in e["detail"] for e in doc["errors"])
    assert doc["errors"] == want["expected_errors"]
    store = tmp_path / "codec"
    res = cli("run", str(src), "--store", str(store))
    assert res.returncode == 3 and "pre-dba9ceb" in res.stderr and not store.exists()
    # --content-check none: unchanged, the rows are copied as bytes.
    code, raw = _inspect(src, "--content-check", "none")
    assert code == 0 and raw["valid"] and raw["data_id_scheme"] == "nox-tagged-v0"
    res = cli("run", str(src), "--store", str(tmp_path / "s"), "--content-check", "none",
              "--json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    receipt = json.loads(res.stdout)
    assert receipt["content_check"] == "none"
    assert receipt["digests"]["staged_archive_sha256"] == want["archive_digest_sha256"]


def test_content_check_is_refused_for_legacy_logs(tmp_path: Path) -> None:
    log = LEGACY / "signals-small.log"
    res = cli("plan", str(log), "--store", str(tmp_path / "s"), "--content-check", "none")
    assert res.returncode == 2 and "cell.redb" in res.stderr
    res = cli("inspect", str(log), "--content-check", "sometimes")
    assert res.returncode == 2


def _report(namespaces: list[str], semantic: list[str] = ()) -> dict:  # type: ignore[type-arg]
    return {
        "namespaces": {ns: {"head_index": 0, "head_commit": ns, "history_rows": 1}
                       for ns in namespaces},
        "semantic_errors": [{"code": "birth-mismatch", "namespace": ns, "detail": f"namespace {ns}"}
                            for ns in semantic],
    }  # fmt: skip


def test_semantic_rules_of_a_mapping() -> None:
    """neuron engine/src/migration.rs prepare_import (fd24e76): an origin that is the subject
    is a Conflict, more than MAX_PROGS (256) origins a Budget error (bbg apply_migration: at
    most 256 sources); engine/src/legacy.rs: an origin's index-0 commit must be the origin."""
    import pytest

    from bbg_core.errors import ValidationFailed
    from migrate.job.mapping import build
    from migrate.pipeline.preflight import MAX_ORIGINS, _check_mapping

    subject = "ab" * 32
    own = subject  # neuron: the subject's namespace is the subject id (neuron.rs inspect)
    other = "cd" * 32
    with pytest.raises(ValidationFailed) as info:
        both = build(subject, [(own, "01" * 32), (other, "02" * 32)])
        _check_mapping(both, _report([own, other]), Path("s"))
    assert [e["code"] for e in info.value.context["errors"]] == ["mapping-origin-is-subject"]

    with pytest.raises(ValidationFailed) as info:
        _check_mapping(build(subject, [(other, "02" * 32)]), _report([other], [other]), Path("s"))
    assert [e["code"] for e in info.value.context["errors"]] == ["birth-mismatch"]

    many = [f"{i:064x}" for i in range(1, MAX_ORIGINS + 2)]
    mapping = build(subject, [(ns, f"{i:064x}") for i, ns in enumerate(many)])
    with pytest.raises(ValidationFailed) as info:
        _check_mapping(mapping, _report(many), Path("s"))
    assert [e["code"] for e in info.value.context["errors"]] == ["limit-exceeded"]
    _check_mapping(build(subject, [(ns, f"{i:064x}") for i, ns in enumerate(many[:MAX_ORIGINS])]),
                   _report(many[:MAX_ORIGINS]), Path("s"))  # fmt: skip
