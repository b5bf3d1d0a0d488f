"""The fleet manifest: minimal form, defaults, globs and placeholders, named errors, shards."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bbg_core.errors import SourceError, UsageError
from migrate.fleet.manifest import jobs_of, load, parse_shard, shard_of

SUBJECT = "aa" * 32
ORIGIN = "bb" * 32
NONCE = "02" * 32


def _tree(root: Path, *files: str) -> None:
    for f in files:
        p = root / f
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x")


def _load(root: Path, text: str, name: str = "fleet.toml"):  # type: ignore[no-untyped-def]
    path = root / name
    path.write_text(text)
    return load(path)


def test_minimal_form_and_relative_paths(tmp_path: Path) -> None:
    _tree(tmp_path, "cell.redb")
    m = _load(tmp_path, '[[jobs]]\nsource = "cell.redb"\nstore = "bbg"\n')
    (job,) = m.jobs
    assert job.source == tmp_path / "cell.redb"
    assert job.store == tmp_path / "bbg"
    assert job.name == "cell.redb"
    assert job.mapping is None and job.nonce is None and job.kind is None
    assert len(job.key) == 64


def test_json_manifest_is_the_same(tmp_path: Path) -> None:
    _tree(tmp_path, "cell.redb")
    toml = _load(tmp_path, '[[jobs]]\nsource = "cell.redb"\nstore = "bbg"\n')
    js = _load(tmp_path, json.dumps({"jobs": [{"source": "cell.redb", "store": "bbg"}]}), "f.json")
    assert toml.jobs == js.jobs


def test_glob_with_node_placeholder_and_defaults(tmp_path: Path) -> None:
    _tree(tmp_path, "srv/nodes/a/cell.redb", "srv/nodes/b/cell.redb", "srv/nodes/c/other.redb")
    m = _load(
        tmp_path,
        '[defaults]\nnonce = "0A"\naccept_torn_tail = false\nbounds = { max_rows = 7 }\n'
        '[[jobs]]\nsource = "srv/nodes/*/cell.redb"\nstore = "/srv/bbg/{node}"\n',
    )
    assert [(j.source, j.store) for j in m.jobs] == [
        (tmp_path / "srv/nodes/a/cell.redb", Path("/srv/bbg/a")),
        (tmp_path / "srv/nodes/b/cell.redb", Path("/srv/bbg/b")),
    ]
    assert all(j.nonce == "0a" and j.bounds == {"max_rows": 7} for j in m.jobs)
    assert m.jobs[0].job().bounds.max_rows == 7


def test_positional_and_stem_placeholders_and_braces(tmp_path: Path) -> None:
    _tree(tmp_path, "r1/logs/x.log", "r2/logs/y.log")
    m = _load(
        tmp_path,
        '[[jobs]]\nsource = "r*/logs/*.log"\nstore = "out/{1}-{2}-{stem}-{{lit}}"\n'
        'name = "{node}/{stem}"\n',
    )
    assert [j.store.name for j in m.jobs] == ["r1-x.log-x-{lit}", "r2-y.log-y-{lit}"]
    assert [j.name for j in m.jobs] == ["r1/x", "r2/y"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('[[jobs]]\nsource = "n/*/c.redb"\nstore = "b/{host}"\n', "unknown placeholder {host}"),
        ('[[jobs]]\nsource = "n/a/c.redb"\nstore = "b/{node}"\n', "the source has no wildcard"),
        ('[[jobs]]\nsource = "n/*/c.redb"\nstore = "b/{node"\n', "lone '{'"),
        ('[[jobs]]\nsource = "n/**/c.redb"\nstore = "b"\n', "** is not supported"),
        ('[[jobs]]\nsource = "m/*/c.redb"\nstore = "b/{node}"\n', "matches nothing"),
    ],
)
def test_placeholder_and_glob_errors_name_the_job_and_key(
    tmp_path: Path, text: str, needle: str
) -> None:
    _tree(tmp_path, "n/a/c.redb")
    with pytest.raises(UsageError) as info:
        _load(tmp_path, text)
    assert needle in info.value.message
    assert "jobs[0]" in info.value.message
    assert info.value.context["job"] == 0
    assert info.value.exit_code == 2


def test_two_jobs_with_the_same_source_and_store_are_refused(tmp_path: Path) -> None:
    _tree(tmp_path, "n/a/c.redb")
    os.symlink(tmp_path / "n", tmp_path / "alias")
    with pytest.raises(UsageError, match=r"jobs\[0\] and jobs\[1\] both migrate"):
        _load(
            tmp_path,
            '[[jobs]]\nsource = "n/*/c.redb"\nstore = "b/{node}"\n'
            '[[jobs]]\nsource = "alias/a/c.redb"\nstore = "b/a"\n',
        )


def test_same_explicit_nonce_into_one_store_is_refused(tmp_path: Path) -> None:
    _tree(tmp_path, "n/a/c.redb", "n/b/c.redb")
    with pytest.raises(UsageError, match="same nonce 01"):
        _load(tmp_path, '[[jobs]]\nsource = "n/*/c.redb"\nstore = "one"\nnonce = "01"\n')


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('[[jobs]]\nsource = "c"\nstore = "b"\nnonce = "zz"\n', "jobs[0] (source 'c'): nonce:"),
        ('[[jobs]]\nsource = "c"\nstore = "b"\nbogus = 1\n', "(source 'c'): (entry): unknown"),
        ('[[jobs]]\nsource = "c"\nstore = "b"\n[[jobs]]\nsource = "c"\nkind = "x"\n', "jobs[1]"),
        ('[[jobs]]\nsource = "c"\nstore = "b"\nbounds = { page_rows = 9999 }\n',
         "bounds.page_rows"),
        ("jobs = []\n", "jobs: [] should be non-empty"),
        ('[defaults]\nsource = "x"\n[[jobs]]\nsource = "c"\nstore = "b"\n', "defaults: unknown"),
        ('[[jobs]]\nsource = "c"\n', "store: missing"),
    ],
)  # fmt: skip
def test_schema_errors_name_the_job_and_key(tmp_path: Path, text: str, where: str) -> None:
    with pytest.raises(UsageError) as info:
        _load(tmp_path, text)
    assert where in info.value.message, info.value.message


def test_unreadable_and_malformed_manifests(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="missing.toml: cannot read: No such file or directory"):
        load(tmp_path / "missing.toml")
    with pytest.raises(UsageError, match="not TOML"):
        _load(tmp_path, "[[jobs]\n")
    with pytest.raises(UsageError, match="line 1: not JSON"):
        _load(tmp_path, "{", "f.json")


def test_mapping_inline_and_file(tmp_path: Path) -> None:
    _tree(tmp_path, "n/a/c.redb")
    (tmp_path / "maps").mkdir()
    (tmp_path / "maps" / "a.json").write_text(
        json.dumps({"subject": SUBJECT, "origins": [{"origin": ORIGIN, "install_nonce": NONCE}]})
    )
    inline = _load(
        tmp_path,
        f'[[jobs]]\nsource = "n/a/c.redb"\nstore = "b"\nsubject = "{SUBJECT}"\n'
        f'map = {{ "{ORIGIN}" = "{NONCE}" }}\n',
    )
    filed = _load(
        tmp_path, '[[jobs]]\nsource = "n/*/c.redb"\nstore = "b"\nmapping = "maps/{node}.json"\n'
    )
    assert inline.jobs[0].mapping == filed.jobs[0].mapping is not None
    assert inline.jobs[0].mapping.subject.hex() == SUBJECT
    with pytest.raises(UsageError, match=r"jobs\[0\]: mapping: .*subject and map go together"):
        _load(tmp_path, f'[[jobs]]\nsource = "n/a/c.redb"\nstore = "b"\nsubject = "{SUBJECT}"\n')
    with pytest.raises(UsageError, match=r"jobs\[0\]: mapping: .*none.json: cannot read"):
        _load(tmp_path, '[[jobs]]\nsource = "n/a/c.redb"\nstore = "b"\nmapping = "none.json"\n')


def test_parse_shard() -> None:
    assert parse_shard("1/3") == (1, 3)
    assert parse_shard(" 0 / 1 ") == (0, 1)
    for bad in ("3/3", "1", "-1/3", "a/b", "0/0"):
        with pytest.raises(UsageError, match="expected I/N"):
            parse_shard(bad)


def test_shards_partition_the_jobs_and_adding_a_job_moves_no_other(tmp_path: Path) -> None:
    for i in range(40):
        _tree(tmp_path, f"n/{i:02d}/c.redb")
    text = '[[jobs]]\nsource = "n/*/c.redb"\nstore = "b/{node}"\n'
    before = _load(tmp_path, text)
    parts = [jobs_of(before, (i, 3)) for i in range(3)]
    assert sorted(j.key for p in parts for j in p) == sorted(j.key for j in before.jobs)
    assert all(parts), "40 jobs over 3 shards: none empty"
    _tree(tmp_path, "n/zz/c.redb", "extra.log")
    after = _load(tmp_path, text + '[[jobs]]\nsource = "extra.log"\nstore = "b/extra"\n')
    old = {j.key: shard_of(j, 3) for j in before.jobs}
    assert all(shard_of(j, 3) == old[j.key] for j in after.jobs if j.key in old)
    assert len(after.jobs) == 42


def test_jobs_sharing_a_store_or_source_share_a_lane_and_a_shard(tmp_path: Path) -> None:
    _tree(tmp_path, "a.log", "b.log", "c.log", "d.log")
    m = _load(
        tmp_path,
        '[[jobs]]\nsource = "a.log"\nstore = "s1"\n'
        '[[jobs]]\nsource = "b.log"\nstore = "s1"\n'
        '[[jobs]]\nsource = "b.log"\nstore = "s2"\n'  # b links s1 and s2
        '[[jobs]]\nsource = "c.log"\nstore = "s3"\n',
    )
    lanes = [j.lane for j in m.jobs]
    assert lanes[0] == lanes[1] == lanes[2] != lanes[3]
    for n in (2, 3, 5, 7):
        assert len({shard_of(j, n) for j in m.jobs[:3]}) == 1
