"""Packaging: the wheel is cp311-abi3 and installs and runs -- the demo, and every legacy
fixture against its golden results -- on the oldest and the newest CPython the package
supports (each when the machine has it); the sdist carries what the test suite needs.

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


def _supported() -> tuple[str, str]:
    """The oldest and the newest CPython this package supports (its classifiers)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    versions = sorted(
        (c.rsplit(":: ", 1)[1] for c in project["classifiers"]
         if c.startswith("Programming Language :: Python :: 3.")),
        key=lambda v: tuple(map(int, v.split("."))),
    )  # fmt: skip
    return versions[0], versions[-1]


def _python(version: str) -> str | None:
    """An interpreter of CPython ``version`` on this machine (PATH, then pyenv), or None."""
    if "{}.{}".format(*sys.version_info[:2]) == version:
        return sys.executable
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(map(str, Path.home().glob(f".pyenv/versions/{version}.*/bin/python3")))
    for exe in candidates:
        if exe is None:
            continue
        probe = subprocess.run([exe, "-c", "import sys; print(*sys.version_info[:2], sep='.')"],
                               capture_output=True, text=True, check=False)  # fmt: skip
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return exe
    return None


def _pythons() -> list[object]:
    """The oldest and the newest supported CPython; one that is not installed here is a
    visible skip naming it."""
    found: list[object] = []
    for version in dict.fromkeys(_supported()):
        exe = _python(version)
        missing = pytest.mark.skip(reason=f"no CPython {version} on this machine")
        found.append(pytest.param(exe or version, id=f"python{version}",
                                  marks=() if exe else missing))  # fmt: skip
    return found


def test_wheel_is_tagged_abi3_and_carries_schemas_and_demo(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    assert "-cp311-abi3-" in wheel.name, wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.endswith(".abi3.so") for n in names)
    assert "migrate/demo/cell-small.redb.gz" in names
    assert any(n.startswith("schemas/") and n.endswith(".schema.json") for n in names)
    assert any(n.endswith("/LICENSE") or n.endswith("licenses/LICENSE") for n in names)


@pytest.mark.parametrize("python", _pythons())
def test_wheel_installs_and_runs(dist: Path, tmp_path: Path, python: str) -> None:
    (wheel,) = dist.glob("*.whl")
    venv = tmp_path / "venv"
    _sh(python, "-m", "venv", venv)
    _sh(venv / "bin" / "pip", "install", "-q", wheel)
    version = _sh(venv / "bin" / "bbg-migrate", "--version")
    assert "redb reader: c" in version and "hemera: c" in version, version
    _sh(venv / "bin" / "bbg-migrate", "demo", cwd=tmp_path)
    # Every legacy fixture replayed against its golden results, on this interpreter.
    _sh(venv / "bin" / "bbg-migrate", "fixtures", "check", ROOT / "fixtures" / "legacy",
        cwd=tmp_path)
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
