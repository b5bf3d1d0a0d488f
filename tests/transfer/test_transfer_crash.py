"""kill -9 at every COMMIT boundary of a transfer, on both sides (the source's seal and every
target commit), then a rerun: it finishes with the same receipt, the source is sealed and
unchanged, and the target's live tables were never half-advanced.  On both engines: on Fjall
each transaction that writes the keyspace has two commit points more (before and after its
fsynced batch, which precedes the records' COMMIT), so a kill also lands between the batch
and the records."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import pytest

from tests.pipeline.helpers import LEGACY, cli
from tests.support.stores import EMPTY_DIGEST, live_digest
from tests.transfer.helpers import copy_store, is_fjall, migrated_store, status

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory, transfer_engine: str) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("crash")
    source = migrated_store(base)
    # Private copies of the logs: a run locks its source, and the other engine's module
    # (another worker) converts the same fixtures at the same time.
    logs = {name: shutil.copy(LEGACY / name, base / name)
            for name in ("signals-empty.log", "signals-small.log")}  # fmt: skip
    empty = base / "empty"
    assert cli("run", str(logs["signals-empty.log"]), "--store", str(empty),
               "--kind", "signal-log").returncode == 0  # fmt: skip
    busy = base / "busy"
    res = cli("run", str(logs["signals-small.log"]), "--store", str(busy))
    assert res.returncode == 0, res.stderr
    return {"source": source, "empty": empty, "busy": busy}


def _normal(receipt: dict[str, object]) -> dict[str, object]:
    """The receipt without what depends on the target store's (random) id."""
    return {k: v for k, v in receipt.items()
            if k not in ("manifest", "import_id", "target", "target_store")}  # fmt: skip


@pytest.mark.parametrize("target_kind", ["empty", "busy", "absent"])
def test_kill_at_every_commit_then_rerun_finishes_with_the_same_receipt(
    templates: dict[str, Path], tmp_path: Path, target_kind: str
) -> None:
    src_digest = live_digest(templates["source"])

    def fresh(point: int) -> tuple[Path, Path]:
        source = copy_store(templates["source"], tmp_path / f"s{point}")
        target = tmp_path / f"t{point}"
        if target_kind != "absent":
            copy_store(templates[target_kind], target)
        return source, target

    source, target = fresh(0)
    before = live_digest(target)
    ref = cli("transfer", "--yes", str(source), "--store", str(target), "--json")
    assert ref.returncode == 0, ref.stderr
    want = live_digest(target)
    killed = 0
    point = 0
    while True:
        point += 1
        source, target = fresh(point)
        args = ("transfer", "--yes", str(source), "--store", str(target), "--json")
        res = cli(*args, kill_at_commit=point)
        if res.returncode == 0:
            break  # past the last commit point
        assert res.returncode == -signal.SIGKILL, res.stderr
        killed += 1
        # Source: its rows never change; sealed or not yet.
        assert live_digest(source) == src_digest
        assert status(source) in ("complete", "export-v1")
        # Target: its live tables are the predecessor or the complete result.
        allowed = (None, EMPTY_DIGEST, before, want)
        assert live_digest(target) in allowed, f"half-advanced at {point}"
        again = cli(*args)
        assert again.returncode == 0, f"point {point}: {again.stderr}"
        if target_kind == "absent":
            assert _normal(json.loads(again.stdout)) == _normal(json.loads(ref.stdout))
        else:
            assert again.stdout == ref.stdout, f"receipt differs after a kill at point {point}"
        assert live_digest(target) == want
        assert status(source) == "export-v1"
        assert cli(*args).stdout == again.stdout  # and an exact rerun after that, too
        if is_fjall(source):  # the source was written once: bbg's keyspace ends in the seal
            assert set(_bbg_keys(source)) == {b"application-export", b"status"}
    # seal, reservation, 5 pages, staged, validated, activation: 10 commits, 2 points each;
    # on Fjall the seal, the reservation and the activation also write a keyspace batch,
    # with a point before and after each
    assert killed >= (26 if is_fjall(source) else 20)


def _bbg_keys(store: Path) -> list[bytes]:
    from tests.transfer.helpers import rows

    return [k for k, _ in rows(store, "bbg_import_v1")]
