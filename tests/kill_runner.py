"""Run the bbg-migrate CLI with a SIGKILL at the N-th commit phase (crash tests only).

``python -m tests.kill_runner N ARGS...``: every store connection in this process calls the
hook just before and just after each COMMIT; the N-th call kills the process with SIGKILL, as
a power cut or ``kill -9`` would.  The hook lives here, in the tests, not in the product.
"""

from __future__ import annotations

import os
import signal
import sys


def main() -> None:
    target = int(sys.argv[1])
    seen = 0

    def hook(phase: str) -> None:
        nonlocal seen
        seen += 1
        if seen == target:
            os.kill(os.getpid(), signal.SIGKILL)

    from migrate.store.connection import Connection

    Connection.commit_hook = staticmethod(hook)  # type: ignore[assignment]
    sys.argv = ["bbg-migrate", *sys.argv[2:]]
    from migrate.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
