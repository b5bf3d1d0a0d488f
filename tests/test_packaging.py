"""Packaging: the wheel is cp311-abi3 and installs and runs on 3.11 and a later CPython; the
sdist carries what the test suite needs.

Slow (it builds, creates virtual environments and installs the runtime dependencies from the
package registry), so it runs with ``pytest -m slow`` in CI.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def _sh(*args: str | Path, cwd: Path | None = None) -> str:
    res = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, cwd=cwd, check=False
    )
    assert res.returncode == 0, f"{args}: {res.stdout[-2000:]}\n{res.stderr[-2000:]}"
    return res.stdout + res.stderr


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # ``build`` makes the sdist, then the wheel from that sdist (as a package index would).
    _sh(sys.executable, "-m", "build", "-o", out, ROOT)
    return out


def _pythons() -> list[str]:
    """This interpreter (3.11+) and one later CPython when the machine has one."""
    found = [sys.executable]
    candidates = [shutil.which(n) for n in ("python3.13", "python3.12")]
    candidates += sorted(map(str, Path.home().glob(".pyenv/versions/3.1[23].*/bin/python3")))
    for exe in candidates:
        if exe is None:
            continue
        res = subprocess.run([exe, "-c", "import sys; print(sys.version_info[:2] > (3, 11))"],
                             capture_output=True, text=True, check=False)  # fmt: skip
        if res.returncode == 0 and res.stdout.strip() == "True":
            found.append(exe)
            break
    return found


def test_wheel_is_tagged_abi3_and_carries_schemas_and_demo(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    assert "-cp311-abi3-" in wheel.name, wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.endswith(".abi3.so") for n in names)
    assert "migrate/demo/cell-small.redb.gz" in names
    assert any(n.startswith("schemas/") and n.endswith(".schema.json") for n in names)
    assert any(n.endswith("/LICENSE") or n.endswith("licenses/LICENSE") for n in names)


@pytest.mark.parametrize("python", _pythons(), ids=lambda p: Path(p).name)
def test_wheel_installs_and_runs(dist: Path, tmp_path: Path, python: str) -> None:
    (wheel,) = dist.glob("*.whl")
    venv = tmp_path / "venv"
    _sh(python, "-m", "venv", venv)
    _sh(venv / "bin" / "pip", "install", "-q", wheel)
    version = _sh(venv / "bin" / "bbg-migrate", "--version")
    assert "redb reader: c" in version and "hemera: c" in version, version
    _sh(venv / "bin" / "bbg-migrate", "demo", cwd=tmp_path)
    # The schemas ship as package data: findable from the installed command.
    error = json.loads(_sh(venv / "bin" / "bbg-migrate", "schema", "error", cwd=tmp_path))
    assert error["$id"] == "error" and "exit_code" in error["required"]


def test_sdist_carries_tests_fixtures_and_license(dist: Path) -> None:
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    needs = ("LICENSE", "CHANGELOG.md", "README.md", "tests/conftest.py", "fixtures/legacy",
             "importers/redb/redb.c", "hashing/hemera/hemera.c")  # fmt: skip
    for needed in needs:
        assert any(n == needed or n.startswith(needed + "/") for n in names), needed
    assert not any(n.endswith(".so") for n in names)
