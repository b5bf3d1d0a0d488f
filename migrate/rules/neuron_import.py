"""The subject's state after neuron's import, built statically and validated as neuron would.

neuron's ``prepare_import`` (cyberia-to/neuron@fd24e768 ``engine/src/migration.rs``
L57-232) extends the subject's ``neuron/root/1`` state, origin by origin in origin order:

* a new prog under ``neuron/prog-id/1(subject, nonce(install nonce))`` (L62-77): the origin's
  source and application state, revision 0, the head snapshot's lifecycle, step limit = the
  origin's allowance (its policy's step limit), max inflight 1, its allowed acts sorted and
  deduplicated;
* for a live continuation, an invocation keyed by the live event (L149-176): a key already
  present -- two origins with one live event, or the subject already running it -- is
  ``Conflict``; waiting when an operation is pending, else running; its limit, charged,
  reserved and used from the live resources; the pending operation's stage mapped
  pending/attempt-recorded/resolved -> 0/1/2 (else ``Unsupported``, L107-112);
* ``charged += legacy.charged`` (L178-181, an overflow is ``Budget``);
* after the loop, one import per origin (L211-232).

It then ``prepare``s the state (neuron@53dbf8d1 ``engine/src/neuron.rs``: held recomputed,
``NeuronState::encode`` validating it), which this module hands to
:func:`migrate.rules.neuron_state.prepared` -- the same validators that read the subject.
Left out: the Rune runtime's ``validate_checkpoint`` (L85-88; it only ever pauses the prog),
the record ids neuron builds (manifest, import records, a stage-0 operation record: no check
reads them) and the authorization evidence (the subject's key).  The reads ``prepare_import``
makes of the origin's records are made with the origin's (:func:`migrate.rules.cell_records.
import_reads`).
"""

from __future__ import annotations

from dataclasses import replace

from migrate.rules.cell_artifacts import STAGES
from migrate.rules.cell_records import LegacyView
from migrate.rules.neuron_reader import Refused
from migrate.rules.neuron_schema import prog_id
from migrate.rules.neuron_state import RUNNING, WAITING, Invocation, Prog, State, prepared

_U64 = (1 << 64) - 1


def _invocation(prog: bytes, view: LegacyView) -> Invocation | None:
    """The invocation ``prepare_import`` builds for ``view``'s live continuation (L89-173);
    None without one."""
    live, reads = view.live, view.reads
    if live is None or reads is None:
        return None
    shape = None
    if live.pending is not None:
        if live.pending.stage not in STAGES:
            raise Refused("Unsupported", f"origin {view.origin.hex()}: pending stage "
                                         f"{live.pending.stage!r}")  # fmt: skip
        stage = STAGES.index(live.pending.stage)
        has = (reads.attempt is not None, live.pending.outcome is not None,
               reads.value is not None, reads.failed)  # fmt: skip
        shape = (stage, *has, False)
    return Invocation(
        prog=prog, checkpoint=True, pending=shape is not None, result=False, fault=False,
        status=RUNNING if shape is None else WAITING, limit=live.limit, charged=live.charged,
        reserved=live.reserved, used=live.used, parent=None, delegated=0, children=(),
        shape=shape,
    )  # fmt: skip


def after_import(state: State, subject: bytes, origins: list[tuple[LegacyView, bytes]]) -> None:
    """Build the state neuron's import of ``origins`` (each view with its install nonce)
    would publish for ``subject`` (module docstring) and validate it: :class:`Refused` with
    neuron's reason for the first thing neuron refuses."""
    jobs, progs = dict(state.jobs), {}
    charged, imports = state.charged, dict(state.imports)
    for view, nonce in sorted(origins, key=lambda o: o[0].origin):
        prog = prog_id(subject, nonce)
        progs[prog] = Prog(view.allowance, 1, tuple(sorted(set(view.acts))))
        job = _invocation(prog, view)
        if job is not None:
            assert view.live is not None
            event = view.live.event
            if event in jobs:
                held = "the subject already runs it" if event in state.jobs else (
                    "an origin before it in the mapping has it live too")
                raise Refused("Conflict", f"origin {view.origin.hex()}: its live event "
                                          f"{event.hex()} keys an invocation already: {held}")
            jobs[event] = job
        charged += view.charged
        if charged > _U64:
            raise Refused("Budget", f"origin {view.origin.hex()}: the subject's charged total "
                                    f"plus the origin's charges {view.charged} overflows u64")
    for view, _ in origins:
        imports[view.origin] = b""  # the import record's id: no check reads it
    after = replace(state, charged=charged, progs=state.progs | frozenset(progs),
                    imports=imports, jobs=jobs)  # fmt: skip
    prepared(after, progs, "the post-import neuron/root/1")
