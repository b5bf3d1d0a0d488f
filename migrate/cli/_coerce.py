"""Command-line values converted without pydantic where typer's conversion is trivial.

typer 0.29 converts every value given on the command line through a pydantic ``TypeAdapter``
(``typer._adapters``), and importing pydantic for it costs more than everything else
``bbg-migrate detect FILE`` does (start-up time).  For the kinds of parameter the
fast commands take, that conversion is a plain function call:

* ``str``: the text itself (typer's ``_parse_cli_str`` returns ``str(value)``);
* a ``parser=`` (``path_arg``...): the parser's result (typer wraps it in a ``BeforeValidator``
  around ``Any``: pydantic only changes a ``ValueError`` into its own message);
* ``Path``: ``Path(text)``, then typer's own path checks (``coerce_cli_path``: exists,
  file/dir, readable...), which need pydantic only for text that is not yet a ``Path``;
* ``list[str]``: click hands over a tuple of texts; typer's result is the same texts as a list;
* ``int``, ``float``: an option left at its default arrives as the default number itself,
  which typer returns unchanged (text given on the command line still goes to typer:
  pydantic's rules for reading a number from text are its own);
* a ``Literal`` of texts (``--kind``, ``--content-check``): a text that is one of its values
  (the default, or a choice given) is that value, as pydantic's ``Literal`` check returns
  it; any other text goes to typer, whose error it is.

:func:`lighten` gives such parameters a runtime converter that does exactly that for text
values and hands anything else (a ``ValueError`` from a parser, a list, a value of another
type) to typer's own pydantic converter, built then.  Every other parameter (enums,
tuples...) keeps typer's.  If typer's internals move (a new release), :func:`lighten` does
nothing and typer converts as usual: slower, never different.  tests/test_startup.py checks
that ``detect`` no longer imports pydantic and that the values and errors are typer's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

try:  # typer's private layer (already imported by typer.core): see the module docstring
    from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
    from typer._param_types import coerce_cli_path, lenient_issubclass
    from typer.core import _TyperParameter
except ImportError:  # pragma: no cover - another typer: keep its own conversion
    RuntimeParam = None  # type: ignore[assignment,misc]


def _kind(descriptor: Any) -> str | None:
    """Which trivial conversion a parameter's descriptor asks for, if any."""
    info, annotation = descriptor.parameter_info, descriptor.annotation
    if descriptor.file_annotation is not None:
        return None
    if get_origin(annotation) is list and get_args(annotation) == (str,) and info.parser is None:
        return "strs"
    if get_origin(annotation) is Literal and info.parser is None:
        return "literal" if all(type(a) is str for a in get_args(annotation)) else None
    if get_origin(annotation) is not None:
        return None
    if info.parser is not None:
        return "parser"
    if annotation is str:
        return "str"
    if annotation is int or annotation is float:
        return "number"
    if lenient_issubclass(annotation, Path) and info.path_type in (None, annotation):
        return "path"
    return None


if RuntimeParam is not None:

    @dataclass(frozen=True)
    class _Light(RuntimeParam):
        """typer's conversion for text values of a trivial kind; typer's own (built when
        first needed) for anything else.  ``None`` (an option not given) never needs it:
        typer's ``RuntimeParam.coerce`` returns it before converting."""

        kind: str | None
        descriptor: TypeDescriptor

        def _typers(self, value: Any, param: Any, ctx: Any) -> Any:
            typers = build_runtime_param(self.descriptor)
            param._runtime_param = typers  # from now on, the same as without lighten()
            return typers._coerce_value(value, param=param, ctx=ctx)

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.kind == "strs" and isinstance(value, tuple | list):
                if all(isinstance(v, str) for v in value):
                    return list(value)
            if self.kind == "number" and type(value) is self.annotation:
                return value
            if self.kind == "literal" and type(value) is str:
                if value in get_args(self.annotation):
                    return value
            if self.kind not in ("str", "parser", "path") or not isinstance(value, str):
                return self._typers(value, param, ctx)
            if self.kind == "str":
                return value
            if self.kind == "parser":
                try:
                    return self.parameter_info.parser(value)  # type: ignore[misc]
                except ValueError:  # pydantic words this one: let typer do it
                    return self._typers(value, param, ctx)
            return coerce_cli_path(
                self.annotation(value), self.parameter_info, path_type=self.annotation,
                param=param, ctx=ctx,
            )  # fmt: skip


def _light(param: Any) -> None:
    if isinstance(param, _TyperParameter) and param._runtime_param is None:
        desc = param.type_descriptor
        param._runtime_param = _Light(desc.parameter_info, desc.annotation, _kind(desc), desc)


def lighten(command: Any) -> None:
    """Give every parameter of the click ``command`` (and of its sub-commands, and the
    ``--help`` option click makes while parsing) the pydantic-free converter; a no-op on a
    typer without that layer."""
    if RuntimeParam is None:  # pragma: no cover
        return
    for param in getattr(command, "params", ()):
        _light(param)
    made = getattr(command, "get_help_option", None)
    if made is not None and not getattr(made, "lightened", False):

        def get_help_option(ctx: Any) -> Any:
            option = made(ctx)
            _light(option)
            return option

        get_help_option.lightened = True  # type: ignore[attr-defined]
        command.get_help_option = get_help_option
    for sub in getattr(command, "commands", {}).values():
        lighten(sub)
