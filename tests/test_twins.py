"""``bbg_core.twins.Twins``: the one rule that picks a hot path's C twin or its pure-Python
twin (it replaced the copies in the redb reader, hemera and the Fjall codec): C when its
module imports, unless ``BBG_MIGRATE_PURE=1``; what ``--version`` reports is its ``name``."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest

from bbg_core.twins import PURE_ENV, Twins, pure
from hashing import hemera
from importers.redb import backend as redb_backend
from migrate.store.fjall import backend as fjall_backend

# The rule is applied when the backends are imported (above); a test elsewhere in this
# process may set or clear the variable later, so the rule is read as it was then.
PURE_AT_IMPORT = pure()

PY = types.SimpleNamespace(NAME="python")
C_MODULE = "tests._twins_fake_c"


@pytest.fixture
def built_c() -> Iterator[types.ModuleType]:
    """A C twin that imports (as a built extension does)."""
    module = types.ModuleType(C_MODULE)
    sys.modules[C_MODULE] = module
    try:
        yield module
    finally:
        del sys.modules[C_MODULE]


def test_c_is_the_default_when_it_imports(built_c: types.ModuleType,
                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.delenv(PURE_ENV, raising=False)
    twins = Twins("thing", PY, C_MODULE)
    assert twins.c is built_c and twins.default is built_c
    assert (twins.name, twins.pure, twins.available()) == ("c", False, ["python", "c"])
    assert twins.resolve() is built_c and twins.resolve("python") is PY


def test_pure_env_picks_python_even_when_c_is_built(
    built_c: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PURE_ENV, "1")
    assert pure()
    twins = Twins("thing", PY, C_MODULE)
    assert (twins.name, twins.pure, twins.default) == ("python", True, PY)
    assert twins.resolve("c") is built_c  # still there for a test or benchmark that asks


@pytest.mark.parametrize("value", ["0", "", "true", "yes"])
def test_only_one_means_pure(value: str, built_c: types.ModuleType,
                             monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv(PURE_ENV, value)
    assert not pure()
    assert Twins("thing", PY, C_MODULE).name == "c"


def test_c_not_built_falls_back_to_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PURE_ENV, raising=False)
    twins = Twins("thing", PY, "tests._twins_never_built")
    assert (twins.c, twins.name, twins.default, twins.available()) == (None, "python", PY,
                                                                       ["python"])  # fmt: skip
    with pytest.raises(ValueError, match=r"^the thing C extension is not built "
                                         r"\(pure-Python install\)$"):  # fmt: skip
        twins.resolve("c")
    with pytest.raises(ValueError, match=r"^unknown thing backend 'rust' \(python or c\)$"):
        twins.resolve("rust")


def test_set_default_returns_the_previous_and_none_restores(
    built_c: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PURE_ENV, raising=False)
    twins = Twins("thing", PY, C_MODULE)
    assert twins.set_default("python") == "c"
    assert twins.resolve() is PY and twins.name == "c"  # name: the process's own choice
    assert twins.set_default(None) == "python"
    assert twins.resolve() is built_c


def test_every_hot_path_reports_the_shared_rule() -> None:
    """What ``--version`` prints for each path is the rule's name for it."""
    for module, c in ((redb_backend, redb_backend.c_impl), (fjall_backend, fjall_backend.TWINS.c),
                      (hemera, hemera.c_impl)):  # fmt: skip
        assert module.BACKEND == ("python" if PURE_AT_IMPORT or c is None else "c"), module.__name__
    assert redb_backend.resolve() is redb_backend.TWINS.default
    assert fjall_backend.default() is fjall_backend.TWINS.default
    assert hemera.impl is (hemera.python_impl if hemera.BACKEND == "python" else hemera.c_impl)
