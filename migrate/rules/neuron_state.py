"""The subject neuron read as neuron's import reads it: its head, then its ``neuron/root/1``
state.

neuron's ``prepare_import`` (cyberia-to/neuron@fd24e768 ``engine/src/migration.rs``) starts
with ``Neuron::inspect`` (neuron@53dbf8d1 ``engine/src/neuron.rs`` L111-128): the head is a
``neuron/activation/1`` record (3 fields) at index 0, else ``neuron/commit/1`` (8 fields); its
field 0 must be the subject and (index > 0) field 1 the head's index (``Conflict``); the root
is field 1 (activation) or field 4 (commit), read as ``NeuronState::read`` (neuron@7d214e02
``model/src/execution.rs``), and the state's ``neuron`` must be the subject (``Conflict``).
The reader is bounded to 2 000 000 content reads.

``NeuronState::read``: ``neuron/root/1`` (13 fields: neuron, network, policy, epoch, limit,
charged, held, progs, invocations, imports, cursor, writer generation, optional worker); the
three maps (at most 256 progs, 1024 invocations, 4096 imports; keys strictly increasing);
each prog value a ``neuron/prog/1`` (``Prog::read``), each invocation a
``neuron/invocation/1`` (``Invocation::read`` with its ``neuron/pending/1``, a pending
operation's ``neuron/dispatch/1`` and ``neuron/worker/1``), then ``NeuronState::validate``
and, with a worker, ``Worker::read`` (neuron@53dbf8d1 ``model/src/worker.rs``) whose network
must be the state's.  Every rule below names neuron's error; :class:`Refused` carries it.
The same validators judge the state neuron's import would publish (:func:`prepared`, used by
:mod:`migrate.rules.neuron_import`): ``prepare``'s held total, then ``NeuronState::encode``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from migrate.rules.neuron_reader import Lookup, Reader, Refused, invalid, limit

#: neuron's bounds (execution.rs): progs, invocations, imports, children, steps.
MAX_PROGS, MAX_INVOCATIONS, MAX_IMPORTS, MAX_CHILDREN = 256, 1024, 4096, 256
MAX_STEPS = 1_000_000
#: The content reads neuron's ``inspect`` allows its reader.
INSPECT_BUDGET = 2_000_000
_U64 = (1 << 64) - 1
#: ``Status`` values (execution.rs): 0 running, 1 waiting, 2 joining, 3 completed,
#: 4 cancelled, 5 failed, 6 conflict; 3.. are terminal.
RUNNING, WAITING, JOINING, COMPLETED, CANCELLED, FAILED, CONFLICT = range(7)


@dataclass(frozen=True)
class Invocation:
    """The fields of an invocation ``NeuronState::validate`` looks at."""

    prog: bytes
    checkpoint: bool
    pending: bool
    result: bool
    fault: bool
    status: int
    limit: int
    charged: int
    reserved: int
    used: int
    parent: bytes | None
    delegated: int
    children: tuple[bytes, ...]
    #: The pending operation's (stage, attempt, outcome, value, failed, dispatch or attempt
    #: record) as ``PendingOperation::validate`` judges it; None without one.
    shape: tuple[int, bool, bool, bool, bool, bool] | None = None

    @property
    def terminal(self) -> bool:
        return self.status >= COMPLETED

    def available(self, what: str) -> int:
        left = self.limit - self.charged - self.delegated
        if self.charged > self.limit or left < 0:
            raise invalid(f"{what}: charged and delegated exceed its limit")
        return left


@dataclass(frozen=True)
class State:
    """A subject's ``neuron/root/1`` state (the parts the import checks read)."""

    root: bytes
    neuron: bytes
    network: bytes
    policy: bytes
    epoch: int
    limit: int
    charged: int
    held: int
    progs: frozenset[bytes]
    imports: dict[bytes, bytes]
    #: Its invocations, writer generation and whether it names a worker (what
    #: ``NeuronState::validate`` looks at again when the import re-encodes it).
    jobs: dict[bytes, Invocation] = field(default_factory=dict)
    generation: int = 0
    worker: bool = False


@dataclass(frozen=True)
class Prog:
    """The fields ``Prog::validate`` looks at."""

    step_limit: int
    max_inflight: int
    acts: tuple[int, ...]


def inspect(lookup: Lookup, subject: bytes, index: int, commit: bytes) -> State:
    """``Neuron::inspect`` of the subject whose head is ``(index, commit)``: its state, or
    :class:`Refused` with neuron's reason (module docstring)."""
    r = Reader(lookup, INSPECT_BUDGET)
    schema = ("neuron/activation/1", 3) if index == 0 else ("neuron/commit/1", 8)
    what = f"head index {index} commit {commit.hex()}"
    f = r.record(commit, schema, what)
    if r.reference(f[0], f"{what} (neuron)") != subject:
        raise Refused("Conflict", f"{what}: its neuron field is not the subject")
    if index > 0 and r.uint(f[1], f"{what} (index)") != index:
        raise Refused("Conflict", f"{what}: its index field is not {index}")
    root = r.reference(f[1 if index == 0 else 4], f"{what} (root)")
    state = _read_root(r, root)
    if state.neuron != subject:
        raise Refused("Conflict", f"neuron/root/1 {root.hex()}: its neuron is not the subject")
    return state


def _read_root(r: Reader, root: bytes) -> State:
    """``NeuronState::read`` (execution.rs), in neuron's order of reads."""
    what = f"neuron/root/1 {root.hex()}"
    f = r.record(root, ("neuron/root/1", 13), what)
    maps = [r.reference(f[i], f"{what} (map {i})") for i in (7, 8, 9)]
    progs = r.map(maps[0], MAX_PROGS, f"{what} progs")
    for key, value in progs:
        _read_prog(r, value, f"prog {key.hex()}")
    invocations = {
        key: _read_invocation(r, value, f"invocation {key.hex()}")
        for key, value in r.map(maps[1], MAX_INVOCATIONS, f"{what} invocations")
    }
    neuron, network, policy = (r.reference(f[i], f"{what} (field {i})") for i in (0, 1, 2))
    epoch, cap, charged, held = (r.uint(f[i], f"{what} (field {i})") for i in (3, 4, 5, 6))
    imports = dict(r.map(maps[2], MAX_IMPORTS, f"{what} imports"))
    r.uint(f[10], f"{what} (cursor)")
    generation = r.uint(f[11], f"{what} (writer generation)")
    worker = r.optional_ref(f[12], f"{what} (worker)")
    installed = frozenset(k for k, _ in progs)
    state = State(root, neuron, network, policy, epoch, cap, charged, held, installed, imports,
                  invocations, generation, worker is not None)  # fmt: skip
    _validate(state, {}, what)
    if worker is not None and _read_worker(r, worker, f"worker {worker.hex()}") != state.network:
        raise invalid(f"{what}: its worker's network is not the neuron's")
    return state


def _read_acts(r: Reader, cid: bytes, what: str) -> list[int]:
    acts = [r.uint(v, f"{what} (act)") for v in r.sequence(cid, 256, f"{what} (acts)")]
    if any(a >= b for a, b in zip(acts, acts[1:], strict=False)):
        raise invalid(f"{what}: its acts are not strictly increasing")
    return acts


def _read_prog(r: Reader, cid: bytes, what: str) -> None:
    """``Prog::read``: lifecycle 0..4 (``InvalidData``), 0 < step limit <= 1 000 000 and
    0 < max inflight <= 1024 (``Limit``), at most 256 strictly increasing acts."""
    f = r.record(cid, ("neuron/prog/1", 7), what)
    if r.uint(f[3], f"{what} (lifecycle)") > 4:
        raise invalid(f"{what}: a lifecycle that is none of the five")
    steps, inflight = r.uint(f[4], f"{what} (step limit)"), r.uint(f[5], f"{what} (inflight)")
    _check_prog(Prog(steps, inflight, ()), what)
    _read_acts(r, f[6], what)
    r.reference(f[0], f"{what} (source)")
    r.reference(f[1], f"{what} (state)")
    r.uint(f[2], f"{what} (revision)")


def _check_prog(prog: Prog, what: str) -> None:
    """``Prog::validate`` (execution.rs @7d214e02 L51-64): 0 < step limit <= 1 000 000,
    0 < max inflight <= 1024 and at most 256 acts (``Limit``), strictly increasing
    (``InvalidData``)."""
    steps, inflight = prog.step_limit, prog.max_inflight
    if not 0 < steps <= MAX_STEPS or not 0 < inflight <= MAX_INVOCATIONS or len(prog.acts) > 256:
        raise limit(f"{what}: step limit {steps}, max inflight {inflight} or its "
                    f"{len(prog.acts)} acts out of bounds")  # fmt: skip
    if any(a >= b for a, b in zip(prog.acts, prog.acts[1:], strict=False)):
        raise invalid(f"{what}: its acts are not strictly increasing")


def _check_pending(shape: tuple[int, bool, bool, bool, bool, bool], what: str) -> None:
    """``PendingOperation::validate``: the optional fields each stage allows; a dispatch or
    attempt record only at stages 1 and 2 (``InvalidData``)."""
    stage, has, extra = shape[0], shape[1:5], shape[5]
    allowed = {
        0: has == (False, False, False, False),
        3: has == (False, False, False, False),
        1: has == (True, False, False, False),
        2: has[:3] == (True, True, True),
        4: has == (False, True, True, False),
    }.get(stage, False)
    if not allowed or extra and stage not in (1, 2):
        raise invalid(f"{what}: stage {stage} with fields it does not allow")


def _read_pending(
    r: Reader, cid: bytes, what: str
) -> tuple[int, bool, bool, bool, bool, bool]:
    """``PendingOperation::read`` and ``validate``: stage 0..4 and failed 0/1, the optional
    fields each stage allows, a dispatch naming the operation and its attempt."""
    f = r.record(cid, ("neuron/pending/1", 11), what)
    stage, failed = r.uint(f[6], f"{what} (stage)"), r.uint(f[8], f"{what} (failed)")
    if stage > 4 or failed > 1:
        raise invalid(f"{what}: stage {stage} or failed {failed} out of range")
    op = r.reference(f[0], f"{what} (id)")
    r.reference(f[1], f"{what} (record)")
    r.uint(f[2], f"{what} (tag)")
    r.reference(f[3], f"{what} (arguments)")
    attempt, outcome = (r.optional_ref(f[i], f"{what} (field {i})") for i in (4, 5))
    value = r.optional_ref(f[7], f"{what} (value)")
    dispatch, attempt_record = (r.optional_ref(f[i], f"{what} (field {i})") for i in (9, 10))
    has = (attempt is not None, outcome is not None, value is not None, failed == 1)
    shape = (stage, *has, dispatch is not None or attempt_record is not None)
    _check_pending(shape, what)
    if dispatch is not None:
        d = r.record(dispatch, ("neuron/dispatch/1", 4), f"dispatch {dispatch.hex()}")
        if (
            r.reference(d[0], f"{what} (dispatch operation)") != op
            or r.reference(d[1], f"{what} (dispatch attempt)") != attempt
            or r.uint(d[2], f"{what} (dispatch ordinal)") == 0
        ):
            raise invalid(f"{what}: its dispatch names another operation or attempt")
        worker = r.reference(d[3], f"{what} (dispatch worker)")
        _read_worker(r, worker, f"worker {worker.hex()}")
    return shape


def _read_invocation(r: Reader, cid: bytes, what: str) -> Invocation:
    """``Invocation::read`` (19 fields) and ``Invocation::validate``."""
    f = r.record(cid, ("neuron/invocation/1", 19), what)
    pending = r.optional_ref(f[11], f"{what} (pending)")
    shape = None if pending is None else _read_pending(r, pending, f"pending {pending.hex()}")
    kids = r.sequence(f[16], MAX_CHILDREN, f"{what} (children)")
    children = tuple(r.reference(v, f"{what} (child)") for v in kids)
    prog = r.reference(f[0], f"{what} (prog)")
    r.reference(f[1], f"{what} (code)")
    r.reference(f[2], f"{what} (input)")
    r.optional_ref(f[3], f"{what} (context)")
    r.uint(f[4], f"{what} (base revision)")
    checkpoint = r.optional_ref(f[5], f"{what} (checkpoint)")
    status = r.uint(f[6], f"{what} (status)")
    if status > CONFLICT:
        raise invalid(f"{what}: status {status} is none of the seven")
    cap, charged, reserved, used = (r.uint(f[i], f"{what} (field {i})") for i in (7, 8, 9, 10))
    result, fault, parent = (r.optional_ref(f[i], f"{what} (field {i})") for i in (12, 13, 14))
    delegated = r.uint(f[15], f"{what} (delegated)")
    r.uint(f[17], f"{what} (epoch)")
    r.uint(f[18], f"{what} (ordinal)")
    job = Invocation(prog, checkpoint is not None, pending is not None, result is not None,
                     fault is not None, status, cap, charged, reserved, used, parent, delegated,
                     children, shape)  # fmt: skip
    _validate_invocation(job, what)
    return job


def _validate_invocation(job: Invocation, what: str) -> None:
    bounded = 0 < job.limit <= MAX_STEPS
    if not bounded or job.reserved > job.available(what) or job.used > job.charged:
        raise invalid(f"{what}: limit, reserved or used out of bounds")
    if job.shape is not None:
        _check_pending(job.shape, f"{what} (pending)")
    shape = (job.checkpoint, job.pending, job.result)
    ok = {
        RUNNING: shape == (True, False, False),
        WAITING: shape == (True, True, False),
        JOINING: shape[:2] == (False, False) and job.result != job.fault and not job.reserved,
        COMPLETED: shape == (False, False, True) and not job.reserved,
        CONFLICT: shape == (False, False, True) and not job.reserved,
        CANCELLED: shape[:2] == (False, False) and job.fault and not job.reserved,
        FAILED: shape[:2] == (False, False) and job.fault and not job.reserved,
    }[job.status]
    if not ok:
        raise invalid(f"{what}: status {job.status} with fields it does not allow")


def _read_worker(r: Reader, cid: bytes, what: str) -> bytes:
    """``Worker::read`` and ``validate``: its network (field 3)."""
    f = r.record(cid, ("neuron/worker/1", 12), what)
    texts = [r.text(f[i], f"{what} (text {i})") for i in (0, 1, 2)]
    network = r.reference(f[3], f"{what} (network)")
    texts += [r.text(f[i], f"{what} (text {i})") for i in (4, 5, 6)]
    for i in (7, 8, 9):
        r.reference(f[i], f"{what} (field {i})")
    arguments = r.uint(f[10], f"{what} (max arguments)")
    acts = [r.uint(v, f"{what} (act)") for v in r.sequence(f[11], 256, f"{what} (acts)")]
    if any(not t or len(t.encode()) > 128 or not t.isascii() for t in texts):
        raise invalid(f"{what}: a name that is empty, over 128 bytes or not ASCII")
    if not 0 < arguments <= 8 * 1024 * 1024:
        raise limit(f"{what}: max arguments {arguments} out of bounds")
    if any(a >= b for a, b in zip(acts, acts[1:], strict=False)):
        raise invalid(f"{what}: its acts are not strictly increasing")
    return network


def prepared(state: State, progs: dict[bytes, Prog], what: str) -> None:
    """The state ``state`` as neuron's ``prepare`` encodes it (neuron@53dbf8d1
    ``engine/src/neuron.rs`` ``prepare``): its held total recomputed over the invocations that
    are not terminal (``available``: ``InvalidData`` when charged and delegated exceed the
    limit; an overflow is ``Limit``), then ``NeuronState::encode``, which validates it first
    (:func:`_validate`); ``progs``: the progs not read from the store, validated as
    ``Prog::validate`` does (those read were validated by ``Prog::read``)."""
    held = 0
    for key, job in state.jobs.items():
        if not job.terminal:
            held += job.available(f"{what}: invocation {key.hex()}")
            if held > _U64:
                raise limit(f"{what}: the held total overflows")
    _validate(replace(state, held=held), progs, what)


def _validate(state: State, progs: dict[bytes, Prog], what: str) -> None:
    """``NeuronState::validate`` (execution.rs): the bounds (``Limit``), each prog of
    ``progs`` (:func:`_check_prog`), then each invocation (:func:`_validate_invocation`), its
    prog, parent, children, delegation and ancestry, and the state's held and charged totals
    (``InvalidData``)."""
    jobs = state.jobs
    if state.generation == 0 and state.worker:
        raise invalid(f"{what}: a worker with writer generation 0")
    counts = len(state.progs), len(jobs), len(state.imports)
    if (
        counts[0] > MAX_PROGS or counts[1] > MAX_INVOCATIONS or counts[2] > MAX_IMPORTS
        or state.charged + state.held > state.limit
    ):  # fmt: skip
        raise limit(f"{what}: charged {state.charged} + held {state.held} over its limit "
                    f"{state.limit}, or too many progs, invocations or imports {counts} "
                    f"(at most {MAX_PROGS}, {MAX_INVOCATIONS}, {MAX_IMPORTS})")  # fmt: skip
    for key, prog in sorted(progs.items()):
        _check_prog(prog, f"{what}: prog {key.hex()}")
    held = charged = 0
    for key, job in sorted(jobs.items()):
        _validate_invocation(job, f"{what}: invocation {key.hex()}")
        charged += job.charged
        if charged > _U64:
            raise limit(f"{what}: the invocations' charged total overflows")
        if job.prog not in state.progs:
            raise invalid(f"{what}: invocation {key.hex()} names a prog it does not hold")
        if not job.terminal:
            held += job.available(what)
            if held > _U64:
                raise limit(f"{what}: the held total overflows")
        if job.parent is not None and (
            job.parent not in jobs or key not in jobs[job.parent].children
        ):
            raise invalid(f"{what}: invocation {key.hex()}: its parent does not name it")
        _check_children(jobs, key, job, what)
    if held != state.held or charged > state.charged:
        raise invalid(f"{what}: held {state.held} or charged {state.charged} is not what its "
                      f"invocations hold ({held}) and charge ({charged})")  # fmt: skip


def _check_children(jobs: dict[bytes, Invocation], key: bytes, job: Invocation,
                    what: str) -> None:  # fmt: skip
    seen: set[bytes] = set()
    delegated = 0
    for child in job.children:
        if child in seen or child not in jobs or jobs[child].parent != key:
            raise invalid(f"{what}: invocation {key.hex()}: child {child.hex()} is not its own")
        seen.add(child)
        c = jobs[child]
        if job.terminal and not c.terminal:
            raise invalid(f"{what}: invocation {key.hex()} ended before its child")
        allocation = c.charged + c.delegated if c.terminal else c.limit
        if allocation > _U64:
            raise limit(f"{what}: a child's allocation overflows")
        delegated += allocation
        if delegated > _U64:
            raise limit(f"{what}: the delegated total overflows")
    if delegated != job.delegated:
        raise invalid(f"{what}: invocation {key.hex()} delegates {job.delegated}, its children "
                      f"hold {delegated}")  # fmt: skip
    ancestor, depth = job.parent, 0
    while ancestor is not None:
        depth += 1
        if ancestor == key or depth > 64 or ancestor not in jobs:
            raise invalid(f"{what}: invocation {key.hex()}: its ancestry loops or is too deep")
        ancestor = jobs[ancestor].parent
