"""``bbg-migrate hemera``: sha256sum-style output, stdin, exit codes and messages."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hashing import hemera

HELLO = "e1b19b8235443e9fac8f1d6a1203de66e9a58c53e36cbbc1f71a031c3d13ce77"
EMPTY = "a67a71b221e6bdd6442a20432bf5d74c885d89e5dfbeec3ec4e334cb806d563c"


def run(*args: str, stdin: bytes = b"", pure: bool = False) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, NO_COLOR="1")
    env.pop("BBG_MIGRATE_PURE", None)
    if pure:
        env["BBG_MIGRATE_PURE"] = "1"
    return subprocess.run([sys.executable, "-m", "migrate", "hemera", *args], input=stdin,
                          capture_output=True, check=False, env=env)


@pytest.mark.parametrize("pure", [False, True], ids=["default", "pure"])
def test_files_and_stdin(tmp_path: Path, pure: bool) -> None:
    a = tmp_path / "a.txt"
    a.write_bytes(b"hello")
    b = tmp_path / "b.bin"
    b.write_bytes(bytes(range(256)) * 50)
    res = run(str(a), "-", str(b), stdin=b"", pure=pure)
    assert res.returncode == 0, res.stderr
    assert res.stdout.decode() == (
        f"{HELLO}  {a}\n{EMPTY}  -\n{hemera.hash(b.read_bytes()).hex()}  {b}\n"
    )
    assert res.stderr == b""


def test_no_arguments_reads_stdin() -> None:
    res = run(stdin=b"hello")
    assert (res.returncode, res.stdout) == (0, f"{HELLO}  -\n".encode())


def test_missing_file_is_named_and_fails(tmp_path: Path) -> None:
    a = tmp_path / "a.txt"
    a.write_bytes(b"hello")
    missing = tmp_path / "missing.txt"
    res = run(str(missing), str(a))
    assert res.returncode == 1
    # The readable file is still hashed, as sha256sum does.
    assert res.stdout.decode() == f"{HELLO}  {a}\n"
    assert res.stderr.decode().splitlines() == [
        f"error: {missing}: cannot read: No such file or directory",
        "error: 1 of 2 inputs could not be read",
    ]


def test_directory_fails(tmp_path: Path) -> None:
    res = run(str(tmp_path))
    assert res.returncode == 1
    assert res.stderr.decode() == f"error: {tmp_path}: cannot read: Is a directory\n"


def test_name_with_newline_is_escaped(tmp_path: Path) -> None:
    odd = tmp_path / "a\nb"
    odd.write_bytes(b"hello")
    res = run(str(odd))
    assert res.returncode == 0
    assert res.stdout.decode() == f"\\{HELLO}  {tmp_path}/a\\nb\n"


def test_version_names_hemera_backend() -> None:
    res = subprocess.run([sys.executable, "-m", "migrate", "--version"], capture_output=True,
                         text=True, check=True)
    lines = res.stdout.splitlines()
    assert f"hemera: {hemera.BACKEND}" in lines
    if hemera.BACKEND == "c":
        from hashing.hemera import _c

        assert f"hemera C core: {_c.SIMD}, {_c.THREADS} thread{'s' * (_c.THREADS > 1)}" in lines
    else:
        assert not any(line.startswith("hemera C core") for line in lines)


# --tree: expected values transcribed from cyberia-to/hemera e63b85a vectors/hemera.json
# ("tree": root_hash of one chunk = hash_leaf(chunk, 0, true)) and from
# `cell-fixtures nox-id` (see tests/hemera/test_tree.py).
TREE_HELLO = "626fa46e4e7bd5c87d630eef8333931a0b9198587400a0191eae7821692880d7"
ATOM1 = "8f8df9b8a6c64fe5cfd103c4d8564d92d22e5d62a6edc44301e1aa260d387abe"
ATOM2 = "882c100b88f5fc989615b32317463f725f578a069a07782f019deed6486090e9"
PAIR12 = "c2e17f0c787ac64d4a96c84ad57996e5cf56b02e2247575100ce81c09d12a9a0"


@pytest.mark.slow
@pytest.mark.parametrize("pure", [False, True], ids=["default", "pure"])
def test_tree_leaf_node_and_data(tmp_path: Path, pure: bool) -> None:
    a = tmp_path / "a"
    a.write_bytes(b"hello")
    res = run("--tree", "leaf", "--root", str(a), "-", stdin=b"hello", pure=pure)
    assert res.returncode == 0, res.stderr
    assert res.stdout.decode() == f"{TREE_HELLO}  {a}\n{TREE_HELLO}  -\n"
    atom1 = (1).to_bytes(8, "little")
    res = run("--tree", "leaf", stdin=atom1, pure=pure)
    assert res.stdout.decode() == f"{ATOM1}  -\n"
    res = run("--tree", "leaf", "--counter", "3", stdin=atom1, pure=pure)
    assert res.stdout.decode() == f"{hemera.hash_leaf(atom1, 3).hex()}  -\n"
    res = run("--tree", "node", ATOM1, ATOM2, pure=pure)
    assert (res.returncode, res.stdout.decode()) == (0, f"{PAIR12}\n")
    res = run("--tree", "node", "--root", ATOM1, ATOM2, pure=pure)
    root = hemera.hash_node(bytes.fromhex(ATOM1), bytes.fromhex(ATOM2), True).hex()
    assert res.stdout.decode() == f"{root}\n" and root != PAIR12
    res = run("--tree", "data", "0100000000000000", ATOM1 + ATOM2, "00" + "07" * 8, pure=pure)
    assert res.returncode == 0, res.stderr
    assert res.stdout.decode() == (
        f"{ATOM1}  nox-model-b atom\n{PAIR12}  nox-model-b pair\n"
        f"{hemera.hash(bytes.fromhex('00' + '07' * 8)).hex()}  nox-tagged-v0 field atom\n"
    )


@pytest.mark.slow
def test_tree_refusals() -> None:
    p_le = (0xFFFF_FFFF_0000_0001).to_bytes(8, "little").hex()
    res = run("--tree", "data", p_le)
    assert res.returncode == 3 and b"FieldOutOfRange" in res.stderr
    assert run("--tree", "node", ATOM1).returncode == 2
    assert run("--tree", "node", ATOM1, "00").returncode == 2
    assert run("--tree", "nope").returncode == 2
    assert run("--counter", "2", stdin=b"x").returncode == 2  # counter without --tree leaf
    assert run("--tree", "data", "--root", ATOM1).returncode == 2
