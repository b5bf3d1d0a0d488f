"""The options file: ``bbg-migrate.toml`` in the current directory or ``--config
FILE`` gives the options a multi-stage run would repeat; the command line wins; an unknown
key or a bad value is a usage error naming the file and the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import schemas
from migrate.store.engine import default_engine
from tests.conftest import gunzip_to
from tests.pipeline.helpers import LEGACY, cli
from tests.support.stores import engine_of

NONCE = "00112233"


def _cell(tmp_path: Path) -> Path:
    return gunzip_to(LEGACY / "cell-small.redb.gz", tmp_path)


@pytest.mark.slow
def test_the_stages_with_values_only_in_the_file_give_run_s_receipt(tmp_path: Path) -> None:
    src = _cell(tmp_path)
    flags = ("--nonce", NONCE, "--page-rows", "64", "--content-check", "none",
             "--max-bytes", "1GiB")  # fmt: skip
    ran = cli("run", str(src), "--store", str(tmp_path / "by-flags"), *flags, "--json")
    assert ran.returncode == 0, ran.stderr
    work = tmp_path / "work"
    work.mkdir()
    (work / "bbg-migrate.toml").write_text(
        f'store = "by-file"\nnonce = "{NONCE}"\npage-rows = 64\ncontent-check = "none"\n'
        'max-bytes = "1GiB"\n'
    )
    for step in ("seal", "stage", "validate"):
        done = cli(step, str(src), "--json", cwd=work)
        assert done.returncode == 0, (step, done.stderr)
        if step == "stage":
            assert json.loads(done.stdout)["pages"] == 4  # 220 rows, 64 a page: from the file
    activated = cli("activate", str(src), "--json", cwd=work)
    assert activated.returncode == 0, activated.stderr
    assert activated.stdout == ran.stdout  # byte-identical receipt
    assert engine_of(work / "by-file") == default_engine()  # the store named by the file


def test_the_command_line_wins_and_config_names_another_file(tmp_path: Path) -> None:
    src = _cell(tmp_path)
    conf = tmp_path / "etc" / "migrate.toml"
    conf.parent.mkdir()
    conf.write_text(f'store = "../stores/bbg"\nnonce = "{NONCE}"\n')
    by_file = cli("--config", str(conf), "plan", str(src), "--json")
    assert by_file.returncode == 0, by_file.stderr
    plan = json.loads(by_file.stdout)
    assert plan["nonce"] == NONCE
    # store is relative to the file's directory
    assert plan["destination"]["path"] == str(tmp_path / "etc" / ".." / "stores" / "bbg")
    flag = cli("--config", str(conf), "plan", str(src), "--nonce", "ff", "--json")
    assert json.loads(flag.stdout)["nonce"] == "ff"


def test_an_unknown_key_is_a_usage_error_naming_file_and_key(tmp_path: Path) -> None:
    (tmp_path / "bbg-migrate.toml").write_text('store = "bbg"\nmax_bytes = 10\n')
    done = cli("plan", str(LEGACY / "signals-small.log"), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("error: bbg-migrate.toml: unknown key 'max_bytes' (known: ")
    assert not (tmp_path / "bbg").exists()


def test_a_bad_value_names_the_key(tmp_path: Path) -> None:
    conf = tmp_path / "o.toml"
    conf.write_text('page-rows = 9999\n')
    done = cli("--config", str(conf), "plan", str(LEGACY / "signals-small.log"))
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {conf}: key 'page-rows': 9999 is greater than")
    conf.write_text("store = [\n")
    assert cli("--config", str(conf), "doctor").returncode == 2
    missing = cli("--config", str(tmp_path / "absent.toml"), "doctor")
    assert missing.returncode == 1 and "cannot read" in missing.stderr


def test_the_schema_accepts_its_examples() -> None:
    for example in schemas.load("options")["examples"]:
        schemas.validate(example, "options")


def test_config_may_follow_the_command(tmp_path: Path) -> None:
    """``--config FILE`` is a root option, and may also be written after the command."""
    src = _cell(tmp_path)
    conf = tmp_path / "o.toml"
    conf.write_text(f'nonce = "{NONCE}"\n')
    for argv in (("plan", str(src), "--config", str(conf)),
                 ("plan", f"--config={conf}", str(src))):  # fmt: skip
        done = cli(*argv, "--store", str(tmp_path / "bbg"), "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["nonce"] == NONCE
    bad = tmp_path / "bad.toml"
    bad.write_text("nonse = 1\n")
    done = cli("doctor", "--config", str(bad), "--store", str(tmp_path / "bbg"))
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {bad}: unknown key 'nonse'")
    assert "May also follow the command." in " ".join(cli("-h").stdout.split())


def _one_job_fleet(root: Path) -> Path:
    (root / "logs").mkdir(parents=True)
    (root / "logs" / "s.log").write_bytes((LEGACY / "signals-small.log").read_bytes())
    manifest = root / "fleet.toml"
    manifest.write_text('[[jobs]]\nsource = "logs/s.log"\nstore = "bbg"\n')
    return manifest


@pytest.mark.slow
def test_the_fleet_table_reaches_fleet_commands(tmp_path: Path) -> None:
    manifest = _one_job_fleet(tmp_path / "f")
    work = tmp_path / "work"
    work.mkdir()
    (work / "bbg-migrate.toml").write_text(
        'nonce = "00"\n[fleet]\nworkers = 1\nshard = "0/1"\nreport-dir = "reports"\n'
    )  # (the top-level nonce does not reach the fleet's jobs: their manifest says)
    ran = cli("fleet", "run", str(manifest), "--json", cwd=work)
    assert ran.returncode == 0, ran.stderr
    doc = json.loads(ran.stdout)
    assert doc["workers"] == 1 and doc["shard"] == {"index": 0, "count": 1}
    assert (work / "reports").is_dir()  # relative to the options file
    assert doc["jobs"][0]["receipt"]["nonce"] != "00"
    planned = cli("fleet", "plan", str(manifest), "--workers", "2", "--shard", "0/2", "--json",
                  cwd=work)  # fmt: skip
    assert json.loads(planned.stdout)["shard"] == {"index": 0, "count": 2}  # the line wins
    (work / "bbg-migrate.toml").write_text("[fleet]\nworker = 1\n")
    done = cli("fleet", "plan", str(manifest), cwd=work)
    assert done.returncode == 2
    assert done.stderr.startswith("error: bbg-migrate.toml: unknown key 'fleet.worker' (known: "
                                  "report-dir, shard, skip-done, workers)")  # fmt: skip


def test_the_fixtures_table_reaches_fixtures_check(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "empty.log").write_bytes(b"")
    claim = {"valid": True, "line_count": 0, "distinct_texts": 0, "size_bytes": 0}
    (d / "empty.log.expected.json").write_text(json.dumps(claim))
    assert cli("fixtures", "check", str(d), "--json").returncode == 3  # read as a Signal log
    conf = tmp_path / "o.toml"
    conf.write_text('kind = "redb"\n[fixtures]\nkind = ["empty.*=text-archive"]\n')
    done = cli("fixtures", "check", str(d), "--config", str(conf), "--json")
    assert done.returncode == 0, done.stdout  # the file's GLOB=KIND, not the top-level kind
    line = cli("fixtures", "check", str(d), "--config", str(conf), "--kind",
               "empty.*=signal-log")  # fmt: skip
    assert line.returncode == 3  # the command line wins
