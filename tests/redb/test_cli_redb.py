"""``bbg-migrate redb tables|dump``: exact output, exit codes and messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import schemas
from migrate.cli import main
from tests.redb.cases import Case, local_case


def run(capsys: pytest.CaptureFixture[bytes], *args: str) -> tuple[int, bytes, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    code = info.value.code
    assert isinstance(code, int)
    return code, out, err.decode("utf-8")


@pytest.fixture
def unicode_db(redb_file: Callable[[Case], Path]) -> tuple[Case, Path]:
    case = local_case("2.6.3", "unicode")
    return case, redb_file(case)


def test_dump_is_byte_identical(
    capsysbinary: pytest.CaptureFixture[bytes], unicode_db: tuple[Case, Path]
) -> None:
    case, path = unicode_db
    code, out, err = run(capsysbinary, "redb", "dump", str(path))
    assert (code, err) == (0, "")
    assert out == case.oracle()


def test_dump_one_table(
    capsysbinary: pytest.CaptureFixture[bytes], unicode_db: tuple[Case, Path]
) -> None:
    case, path = unicode_db
    name = "таблица"
    code, out, _ = run(capsysbinary, "redb", "dump", str(path), "--table", name)
    assert code == 0
    wanted = [
        line
        for line in case.oracle().decode().splitlines(keepends=True)
        if json.loads(line)["table"] == name
    ]
    assert out.decode() == "".join(wanted)


def test_dump_unknown_table_is_usage_error(
    capsysbinary: pytest.CaptureFixture[bytes], unicode_db: tuple[Case, Path]
) -> None:
    _, path = unicode_db
    code, out, err = run(capsysbinary, "redb", "dump", str(path), "--table", "nope")
    assert code == 2
    assert out == b""
    assert err == f"error: {path}: no table named 'nope'\n"


def test_tables_json_validates(
    capsysbinary: pytest.CaptureFixture[bytes],
    redb_file: Callable[[Case], Path],
    redb_backend: str,
) -> None:
    case = local_case("2.6.3", "types")
    path = redb_file(case)
    code, out, _ = run(capsysbinary, "redb", "tables", str(path), "--json")
    assert code == 0
    doc = json.loads(out)
    schemas.validate(doc, "redb-tables")
    assert [t["name"] for t in doc["tables"]] == [t["name"] for t in case.manifest["tables"]]
    assert [t["len"] for t in doc["tables"]] == [t["len"] for t in case.manifest["tables"]]
    assert doc["header"]["format_version"] == 2
    assert doc["header"]["reader"] == redb_backend


def test_schema_examples_validate() -> None:
    for example in schemas.load("redb-tables")["examples"]:
        schemas.validate(example, "redb-tables")


def test_tables_human(
    capsysbinary: pytest.CaptureFixture[bytes], redb_file: Callable[[Case], Path]
) -> None:
    path = redb_file(local_case("1.5.2", "types"))
    code, out, err = run(capsysbinary, "redb", "tables", str(path))
    text = err
    assert code == 0 and out == b""  # a human report: stderr
    assert f"{path}: redb file format 1, page size 4096" in text
    assert "(u64,&str,i32)" in text and "&[u8]" in text and "[u8;32]" in text


@pytest.mark.parametrize(
    ("version", "name", "fragment"),
    [
        ("2.6.3", "corrupt_leaf_flip", "checksum mismatch"),
        ("4.2.0", "corrupt_commit_slot", "primary commit slot 1 fails its checksum"),
        ("3.1.3", "corrupt_truncated", "file truncated"),
    ],
)
def test_corrupt_file_exits_1_with_one_message(
    capsysbinary: pytest.CaptureFixture[bytes],
    redb_file: Callable[[Case], Path],
    version: str,
    name: str,
    fragment: str,
) -> None:
    path = redb_file(local_case(version, name))
    # Listing tables reads only the table tree, which the leaf flip does not touch.
    commands = ("dump",) if name == "corrupt_leaf_flip" else ("dump", "tables")
    for command in commands:
        code, _, err = run(capsysbinary, "redb", command, str(path))
        assert code == 1
        assert err.startswith(f"error: {path}: corrupt redb file: ")
        assert fragment in err
        assert err.count("\n") == 1 and "Traceback" not in err


def test_leaf_flip_message_names_table_page_offset(
    capsysbinary: pytest.CaptureFixture[bytes], redb_file: Callable[[Case], Path]
) -> None:
    path = redb_file(local_case("2.6.3", "corrupt_leaf_flip"))
    code, _, err = run(capsysbinary, "redb", "dump", str(path))
    assert code == 1
    assert err.rstrip("\n").endswith("(table 'str_bytes', page r0.6/0, offset 561152)")


def test_missing_and_foreign_files(
    capsysbinary: pytest.CaptureFixture[bytes], tmp_path: Path
) -> None:
    missing = tmp_path / "nope.redb"
    code, _, err = run(capsysbinary, "redb", "dump", str(missing))
    assert code == 1
    assert err == f"error: {missing}: cannot read: No such file or directory\n"
    foreign = tmp_path / "foreign.redb"
    foreign.write_bytes(b"SQLite format 3\x00" + bytes(4096))
    code, _, err = run(capsysbinary, "redb", "tables", str(foreign))
    assert code == 1
    assert err == (
        f"error: {foreign}: corrupt redb file: not a redb file (bad magic number) (offset 0)\n"
    )
    empty = tmp_path / "empty.redb"
    empty.write_bytes(b"")
    code, _, err = run(capsysbinary, "redb", "dump", str(empty))
    assert code == 1
    assert "shorter than the 320-byte super-header" in err


def test_subprocess_dump_and_help(redb_file: Callable[[Case], Path]) -> None:
    case = local_case("1.5.2", "multimap")
    path = redb_file(case)
    res = subprocess.run(
        [sys.executable, "-m", "migrate", "redb", "dump", str(path)],
        capture_output=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout == case.oracle()
    helped = subprocess.run(
        [sys.executable, "-m", "migrate", "redb", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert helped.returncode == 0
    assert "tables" in helped.stdout and "dump" in helped.stdout


def test_dump_into_a_closed_pipe_is_not_an_error(redb_file: Callable[[Case], Path]) -> None:
    path = redb_file(local_case("4.2.0", "btree_multilevel"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "migrate", "redb", "dump", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10) == b'{"table":"'
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 0
    assert err == b""


def test_scan_json_counts_every_entry(
    capsysbinary: pytest.CaptureFixture[bytes],
    redb_file: Callable[[Case], Path],
    redb_backend: str,
) -> None:
    case = local_case("4.2.0", "multimap")
    path = redb_file(case)
    code, out, err = run(capsysbinary, "redb", "scan", str(path), "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    schemas.validate(doc, "redb-scan")
    entries: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for line in case.oracle().decode().splitlines():
        row = json.loads(line)
        if "key" in row:
            entries[row["table"]] = entries.get(row["table"], 0) + 1
            sizes[row["table"]] = sizes.get(row["table"], 0) + (
                len(row["key"]) + len(row["value"])
            ) // 2
        else:
            entries.setdefault(row["table"], 0)
            sizes.setdefault(row["table"], 0)
    assert {t["name"]: t["entries"] for t in doc["tables"]} == entries
    assert {t["name"]: t["key_value_bytes"] for t in doc["tables"]} == sizes
    assert doc["entries"] == sum(entries.values())
    assert doc["key_value_bytes"] == sum(sizes.values())
    assert doc["reader"] == redb_backend
    assert doc["pages_read"] > len(doc["tables"])
    assert doc["seconds"] >= max(t["seconds"] for t in doc["tables"])


def test_scan_human_and_corrupt(
    capsysbinary: pytest.CaptureFixture[bytes], redb_file: Callable[[Case], Path]
) -> None:
    path = redb_file(local_case("2.6.3", "types"))
    code, out, err = run(capsysbinary, "redb", "scan", str(path))
    text = err
    assert code == 0 and out == b""  # a human report: stderr
    assert "u64_u64" in text and "total" in text and "every page verified" in text
    bad = redb_file(local_case("2.6.3", "corrupt_leaf_flip"))
    code, out, err = run(capsysbinary, "redb", "scan", str(bad))
    assert code == 1 and out == b""
    assert err.rstrip("\n").endswith("(table 'str_bytes', page r0.6/0, offset 561152)")
    assert "checksum mismatch" in err


def test_scan_schema_examples_validate() -> None:
    for example in schemas.load("redb-scan")["examples"]:
        schemas.validate(example, "redb-scan")


def test_version_names_the_active_reader() -> None:
    from importers.redb import backend

    built = "c" if backend.c_impl is not None else "python"
    for env, expected in ((None, built), ("1", "python")):
        environ = {k: v for k, v in os.environ.items() if k != "BBG_MIGRATE_PURE"}
        if env is not None:
            environ["BBG_MIGRATE_PURE"] = env
        res = subprocess.run(
            [sys.executable, "-m", "migrate", "--version"],
            capture_output=True,
            text=True,
            check=False,
            env=environ,
        )
        assert res.returncode == 0
        assert f"\nredb reader: {expected}\n" in res.stdout
