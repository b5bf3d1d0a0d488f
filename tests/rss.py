"""Peak resident memory of work done in a child process (what tracemalloc cannot see).

tracemalloc only sees Python's allocator; the C paths (cffi) allocate with ``malloc``, and a
mapped file counts as it is touched.  The kernel's count does not care who allocated:
:func:`rss_growth` runs ``setup`` in a fresh interpreter, resets the peak (``clear_refs``),
runs ``work``, and returns how far the peak resident set rose above the resident set it
started from.  Linux only (``/proc``); tests skip elsewhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_CHILD = """
import gc, json

def _status():
    found = {{}}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0]) * 1024
    return found

{setup}
gc.collect()
_base = _status()["VmRSS"]
with open("/proc/self/clear_refs", "w") as _fh:
    _fh.write("5")  # reset the peak (VmHWM) to the current resident set
{work}
print(json.dumps({{"base": _base, "peak": _status()["VmHWM"]}}))
"""


def rss_growth(setup: str, work: str, env: dict[str, str] | None = None) -> int:
    """Bytes by which the child's peak RSS during ``work`` exceeded its RSS before it."""
    if not Path("/proc/self/clear_refs").exists():
        pytest.skip("peak RSS is measured through /proc (Linux)")
    code = _CHILD.format(setup=textwrap.dedent(setup), work=textwrap.dedent(work))
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    return int(doc["peak"]) - int(doc["base"])
