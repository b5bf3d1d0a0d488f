"""The library's export list (migrate/api.py): one table, ``_EXPORTS``, from which the lazy
imports and ``__all__`` are derived; the ``if TYPE_CHECKING:`` block that type checkers and
editors read must say exactly the same (the failure message is the block to paste)."""

from __future__ import annotations

import ast
import importlib
import inspect
from typing import Any

from migrate import api
from tests.conftest import ROOT


def type_checking_block(exports: dict[str, tuple[str, str]]) -> str:
    """The ``if TYPE_CHECKING:`` body that states ``exports`` for type checkers."""
    def alias(module: str) -> str:  # a module by a name of its own (a package's attribute
        return "_" + module.replace(".", "_")  # may hide a sub-module of the same name)

    modules = sorted({module for module, _ in exports.values()})
    lines = [f"    import {module} as {alias(module)}" for module in modules]
    lines += [f"    {name} = {alias(module)}.{attr}" for name, (module, attr) in exports.items()]
    return "\n".join(lines) + "\n"


def _written_block() -> str:
    source = (ROOT / "migrate" / "api.py").read_text("utf-8")
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            lines = source.splitlines(keepends=True)
            return "".join(lines[node.body[0].lineno - 1 : node.body[-1].end_lineno])
    raise AssertionError("migrate/api.py has no `if TYPE_CHECKING:` block")


def test_the_type_checking_block_says_what_the_table_says() -> None:
    expected = type_checking_block(api._EXPORTS)
    assert _written_block() == expected, "paste this into migrate/api.py:\n" + expected


def test_every_export_resolves_to_what_the_table_names() -> None:
    for name, (module, attr) in api._EXPORTS.items():
        assert getattr(api, name) is getattr(importlib.import_module(module), attr), name


def test_all_is_the_table_and_the_verbs_defined_here() -> None:
    defined = {
        name for name, value in vars(api).items()
        if inspect.isfunction(value) and value.__module__ == api.__name__
        and not name.startswith("_")
    }  # fmt: skip
    assert set(api.__all__) == set(api._EXPORTS) | defined
    assert len(api.__all__) == len(set(api.__all__))
    assert not set(api._EXPORTS) & defined, "a name is both defined here and exported"


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        api.no_such_verb  # noqa: B018
    except AttributeError as exc:
        assert "no_such_verb" in str(exc)
    else:
        raise AssertionError("api.no_such_verb resolved")


def _unused(_: Any) -> None: ...
