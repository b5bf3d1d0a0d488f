"""Minimal setup.py: only here to build the optional C extensions (cffi, and one small
stable-ABI module that builds Python objects, which cffi cannot).

Everything else lives in pyproject.toml.  A missing compiler or a failing build must not
fail the install: the pure-Python twins take over and ``bbg-migrate --version`` says so.
Set ``BBG_MIGRATE_NO_EXT=1`` to skip building the extensions altogether.
"""

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
CFFI_MODULES = [
    "importers/redb/_build.py:ffi",
    "hashing/hemera/_build.py:ffi",
]


class OptionalBuildExt(build_ext):
    """build_ext that turns a failed C build into a warning (pure-Python fallback)."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # any build failure means: fall back
            print(f"WARNING: C extensions not built ({exc}); the pure-Python path will be used")

    def build_extension(self, ext) -> None:  # type: ignore[no-untyped-def]
        try:
            super().build_extension(ext)
        except Exception as exc:
            print(f"WARNING: C extension {ext.name} not built ({exc}); using pure Python")


kwargs = {}
if os.environ.get("BBG_MIGRATE_NO_EXT") != "1":
    kwargs["cffi_modules"] = [
        m for m in CFFI_MODULES if os.path.exists(os.path.join(HERE, m.split(":")[0]))
    ]
    # The redb reader's batches as Python pairs (importers/redb/_pairs.c; optional too).
    kwargs["ext_modules"] = [
        Extension(
            "importers.redb._redb_pairs",
            ["importers/redb/_pairs.c"],
            py_limited_api=True,
            extra_compile_args=["-O2"],
        ),
        # The Fjall reader/writer hot paths (migrate/store/fjall/_fjall.c; optional too):
        # they return Python objects, which cffi cannot make.
        Extension(
            "migrate.store.fjall._fjall_c",
            ["migrate/store/fjall/_fjall.c"],
            py_limited_api=True,
            extra_compile_args=["-O2"],
        ),
    ]
    # The extensions use only the stable ABI (cffi builds them with Py_LIMITED_API, _pairs.c
    # defines it), so one wheel serves CPython 3.11 and every later 3.x: tag it cp311-abi3.
    kwargs["options"] = {"bdist_wheel": {"py_limited_api": "cp311"}}

setup(cmdclass={"build_ext": OptionalBuildExt}, **kwargs)
