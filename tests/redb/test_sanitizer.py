"""The redb C reader under AddressSanitizer and UndefinedBehaviorSanitizer (slow).

The build importers/redb/_build.py describes, made in a copy of the tree (it writes the
module beside the build script): compiled with ``-fsanitize=address,undefined`` and no
recovery, then the whole redb suite -- slow cases included: mutations, crafted trees, both
backends compared -- run against it.  A read out of bounds or undefined behaviour in
``redb.c`` stops the run with the sanitizer's report.  Only the C path's cases run (the
Python twin has no C to check), and not the peak-RSS bounds (the sanitizers' shadow memory
is what they would measure).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow
COMPARES_BACKENDS = True  # it builds and runs the C path itself: generated once

CFLAGS = "-O1 -g -fno-wrapv -fsanitize=address,undefined -fno-sanitize-recover=all"
LDFLAGS = "-fsanitize=address,undefined"
# What the copy leaves out: the environment, caches, and the redb module it rebuilds.
LEAVE_OUT = shutil.ignore_patterns(".venv", ".git", "__pycache__", ".hypothesis",
                                   ".pytest_cache", ".mypy_cache", ".ruff_cache", "build",
                                   "*.egg-info", "_redb_c*.so")  # fmt: skip


def _libasan() -> str:
    try:
        found = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                               text=True, check=False).stdout.strip()  # fmt: skip
    except OSError:
        found = ""
    if not os.path.isabs(found) or not os.path.exists(found):
        pytest.skip("no gcc with AddressSanitizer (libasan) on this machine")
    return found


def test_the_redb_suite_passes_under_the_sanitizers(tmp_path: Path) -> None:
    libasan = _libasan()
    tree = tmp_path / "tree"
    shutil.copytree(ROOT, tree, ignore=LEAVE_OUT)
    env = {**os.environ, "BBG_REDB_CFLAGS": CFLAGS, "BBG_REDB_LDFLAGS": LDFLAGS}
    env.pop("BBG_MIGRATE_PURE", None)
    # cffi compiles into the current directory and reads any pyproject.toml there with the
    # environment's setuptools: build in an empty directory, then put the module in the copy.
    out = tmp_path / "build"
    out.mkdir()
    built = subprocess.run([sys.executable, str(tree / "importers/redb/_build.py")], cwd=out,
                           env=env, capture_output=True, text=True, check=False)  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (module,) = (out / "importers" / "redb").glob("_redb_c*.so")
    shutil.copy2(module, tree / "importers" / "redb" / module.name)
    env.update(LD_PRELOAD=libasan, ASAN_OPTIONS="detect_leaks=0",
               UBSAN_OPTIONS="print_stacktrace=1", PYTHONPATH=str(tree))  # fmt: skip
    probe = subprocess.run(
        [sys.executable, "-c", "from importers.redb import _c, backend; "
         "print(backend.BACKEND, _c.__file__)"],
        cwd=tree, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr[-3000:]
    backend, loaded = probe.stdout.split()
    assert backend == "c" and Path(loaded).is_relative_to(tree), probe.stdout
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/redb", "-m", "slow or not slow", "-q", "-x",
         "-n", "0", "-p", "no:cacheprovider", "--ignore", "tests/redb/test_sanitizer.py",
         "-k", "not python and not memory_is_bounded and not costs_no_memory"],
        cwd=tree, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
