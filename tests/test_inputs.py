"""One rule for inputs that cannot be read: every command that takes a
path answers a missing or unreadable one with exit 1 and exactly one line,
``error: PATH: cannot read: REASON`` (the OS's reason); usage errors stay exit 2.

"Unreadable" is a real ``EACCES``: the file or directory has mode 000 and the command runs as
an unprivileged user (``setpriv`` to nobody when the tests run as root, where permissions do
not stop reads).
"""

from __future__ import annotations

import errno
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT

NOBODY = 65534
FILE_COMMANDS = [
    "detect {bad}",
    "inspect {bad}",
    "plan {bad} --store {work}/s",
    "run {bad} --store {work}/s",
    "seal {bad} --store {work}/s",
    "stage {bad} --store {work}/s",
    "validate {bad} --store {work}/s",
    "activate {bad} --store {work}/s",
    "run {work}/cell.redb --store {work}/s --mapping {bad}",
    "redb tables {bad}",
    "redb dump {bad}",
    "redb scan {bad}",
    "hemera {bad}",
    "--store {work}/s apply {bad}",
    "--store {work}/new restore {bad}",
    "fleet plan {bad}",
    "fleet run {bad}",
    "transfer {bad} --store {work}/s",
]
DIR_COMMANDS = [
    "detect {bad}",
    "inspect {bad}",
    "fixtures check {bad}",
    "fleet report {bad}",
]
STORE_COMMANDS = [
    "--store {bad} doctor",
    "--store {bad} tail",
    "--store {bad} snapshot",
    "--store {bad} backup {work}/copy",
]


def _as_user() -> list[str]:
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: permissions cannot be tested")
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    """A directory an unprivileged user can use, with a valid source and bad inputs."""
    base = Path(tempfile.mkdtemp(prefix="bbg-inputs-"))
    os.chmod(base, 0o777)
    (base / "cell.redb").write_bytes(
        gzip.decompress((FIXTURES / "legacy" / "cell-small.redb.gz").read_bytes())
    )
    (base / "secret").write_bytes(b"x")
    os.chmod(base / "secret", 0)
    (base / "closed").mkdir()
    os.chmod(base / "closed", 0)
    try:
        yield base
    finally:
        os.chmod(base / "closed", 0o755)
        shutil.rmtree(base, ignore_errors=True)


def _run(words: str, work: Path, bad: Path) -> subprocess.CompletedProcess[str]:
    argv = words.format(bad=bad, work=work).split()
    return subprocess.run(
        [*_as_user(), sys.executable, "-m", "migrate", *argv],
        capture_output=True,
        text=True,
        check=False,
        cwd=work,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "300"},
        timeout=120,
    )


def _check(res: subprocess.CompletedProcess[str], bad: Path, code: int) -> None:
    assert res.returncode == 1, res.stderr
    assert res.stderr == f"error: {bad}: cannot read: {os.strerror(code)}\n"


@pytest.mark.parametrize("words", FILE_COMMANDS + DIR_COMMANDS)
def test_a_missing_input_is_exit_1_naming_it(words: str, work: Path) -> None:
    bad = work / "missing"
    _check(_run(words, work, bad), bad, errno.ENOENT)


@pytest.mark.parametrize("words", FILE_COMMANDS)
def test_an_unreadable_file_is_exit_1_naming_it(words: str, work: Path) -> None:
    bad = work / "secret"
    _check(_run(words, work, bad), bad, errno.EACCES)


@pytest.mark.parametrize("words", DIR_COMMANDS + STORE_COMMANDS)
def test_an_unreadable_directory_is_exit_1_naming_it(words: str, work: Path) -> None:
    bad = work / "closed"
    _check(_run(words, work, bad), bad, errno.EACCES)


def test_usage_errors_stay_exit_2(work: Path) -> None:
    res = _run("run {work}/cell.redb --store {work}/s --page-rows 0", work, work)
    assert res.returncode == 2
    res = _run("inspect {work}/cell.redb --kind nonsense", work, work)
    assert res.returncode == 2
