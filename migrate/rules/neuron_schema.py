"""neuron's schema identities: the id a record's field 0 must carry.

Every neuron record is ``pair(ref(schema_id(name)), fields(...))`` and neuron's reader refuses a
record whose field 0, read as a ref, is not ``schema_id(name)``: ``Error::UnsupportedSchema``
(cyberia-to/neuron@dbebea3f ``model/src/data.rs`` ``Reader::record``; the engine wraps it as
``Data(UnsupportedSchema)``).  ``schema_id(name)`` (``Builder::schema``) is the nox Model B
particle of::

    pair(atom(0x53434831), fields(text(name), ref(contract_id(name))))

with ``atom`` an 8-byte LE node, ``pair`` a 64-byte node, ``uint(v) = pair(atom(v >> 32),
atom(v & 0xffffffff))``, ``fields`` right-nested pairs ending in ``atom(0)``, ``text(s) =
pair(uint(len), fields(one atom per byte))`` and ``ref(id) = pair(pair(a0, a1), pair(a2, a3))``
of the id's four u64 LE limbs.  ``contract_id(name)`` is the plain hemera hash of the bytes of
a suite file compiled into neuron: ``model/schema-suite-neuron-v1.txt`` for names starting
``neuron/``, ``model/schema-suite-v1.txt`` for every other name (``contract``,
``contract_id``).

The two contract ids below are **derived, not transcribed**: neuron writes no expected value
down (its tests assert only round trips and determinism), so they were computed by hashing each
suite file as the public file index stores it, with this project's hemera (whose byte hash and
tree mode are pinned by hemera's own vectors, tests/hemera).  They have not been checked
against a store neuron wrote.  The suite text itself is not carried here, only its hash.
"""

from __future__ import annotations

from functools import cache

from hashing import hemera, nox

#: hemera(bytes of cyberia-to/neuron ``model/schema-suite-v1.txt`` @2fe713bd9175e692), 6648
#: bytes, sha256 9746aa7b338c46804df3b740df35337426f3208e3ae1b94eeb1ae123dad79be7; derived by
#: hashing the file as stored in the public index; neuron writes no expected value down; not
#: verified against a neuron-written store.
CELL_CONTRACT = bytes.fromhex("3a7f214545f3a3387e40cbbd81160bc7492d3968225a31221eac9fd3f06bfb61")
#: hemera(bytes of cyberia-to/neuron ``model/schema-suite-neuron-v1.txt`` @fd24e768d623604b),
#: 5327 bytes, sha256 91ae825a0cc99ee2c1da6f7bd18608124dfaf4d7cb32478b23f1909b7c2d94ea; derived
#: by hashing the file as stored in the public index; neuron writes no expected value down; not
#: verified against a neuron-written store.
NEURON_CONTRACT = bytes.fromhex("d9f038682ac87b9109084d9a158555755604120e6bffbd1537cbb39012baa833")
#: The rule blob every original cell profile names (neuron@f18015c2
#: ``engine/src/legacy/records.rs`` ``profile``).
RUNTIME_RULE = (
    b"cell/local-runtime/1:exclusive-private-store;local-durable;host-observed;full-history"
)
#: The five lifecycles a ``cell/snapshot/1`` may name (neuron model ``records.rs`` ``Lifecycle``).
LIFECYCLES = ("installed", "active", "paused", "retiring", "retired")
#: The manifest marker atom ("SCH1").
MARKER = 0x5343_4831
_U32 = 0xFFFF_FFFF
_CELL_SUITE = "model/schema-suite-v1.txt"


def atom(value: int) -> bytes:
    """The particle of a Model B atom (a canonical u64)."""
    return nox.particle(value.to_bytes(8, "little"))


def pair(left: bytes, right: bytes) -> bytes:
    """The particle of a Model B pair of two particles."""
    return nox.particle(left + right)


def uint(value: int) -> bytes:
    """neuron's uint: ``pair(atom(hi32), atom(lo32))``."""
    return pair(atom(value >> 32), atom(value & _U32))


def ref(particle: bytes) -> bytes:
    """neuron's ref of a 32-byte id: ``pair(pair(a0, a1), pair(a2, a3))`` of its u64 LE limbs."""
    a = [atom(int.from_bytes(particle[i : i + 8], "little")) for i in range(0, 32, 8)]
    return pair(pair(a[0], a[1]), pair(a[2], a[3]))


def fields(values: list[bytes]) -> bytes:
    """neuron's fields: right-nested pairs ending in ``atom(0)``."""
    tail = atom(0)
    for value in reversed(values):
        tail = pair(value, tail)
    return tail


def text(value: str) -> bytes:
    """neuron's text: ``pair(uint(len), fields(one atom per UTF-8 byte))``."""
    raw = value.encode()
    return pair(uint(len(raw)), fields([atom(b) for b in raw]))


def suite(name: str) -> str:
    """The suite file a schema name belongs to (data.rs ``contract``)."""
    return "model/schema-suite-neuron-v1.txt" if name.startswith("neuron/") else _CELL_SUITE


def contract_id(name: str) -> bytes:
    """The hash of the suite a schema name belongs to (data.rs ``contract_id``)."""
    return CELL_CONTRACT if suite(name) == _CELL_SUITE else NEURON_CONTRACT


@cache
def schema_id(name: str) -> bytes:
    """The id field 0 of a ``name`` record must carry (data.rs ``Builder::schema``)."""
    return pair(atom(MARKER), fields([text(name), ref(contract_id(name))]))


def record(name: str, values: list[bytes]) -> bytes:
    """neuron's record: ``pair(ref(schema_id(name)), fields(values))``."""
    return pair(ref(schema_id(name)), fields(values))


def sequence(values: list[bytes]) -> bytes:
    """neuron's list: ``pair(uint(len), fields(values))``."""
    return pair(uint(len(values)), fields(values))


def variant(name: str, values: list[bytes] | None = None) -> bytes:
    """neuron's variant ``cell/<name>/1`` (records.rs ``Builder::variant``)."""
    return record(f"cell/{name}/1", values or [])


@cache
def legacy_profile() -> bytes:
    """The one profile an original cell's snapshot may name (legacy/records.rs ``profile``):
    ``cell/profile/1(variant profile/runtime, seven refs of the RUNTIME_RULE blob, empty
    sequence)``.  legacy.rs ``inspect`` refuses any other with ``Unsupported``."""
    rule = ref(hemera.hash(RUNTIME_RULE))
    return record("cell/profile/1", [variant("profile/runtime"), *[rule] * 7, sequence([])])


@cache
def lifecycle_variants() -> dict[bytes, str]:
    """The particle of each ``cell/lifecycle/<name>/1`` variant, to its name."""
    return {variant(f"lifecycle/{name}"): name for name in LIFECYCLES}


def nonce(value: bytes) -> bytes:
    """neuron's nonce value of 32 bytes: ``fields`` of eight atoms, each a u32 LE word
    (neuron@2fe713bd ``model/src/records.rs`` ``Builder::nonce``)."""
    if len(value) != 32:
        raise ValueError(f"a nonce is 32 bytes, not {len(value)}")
    return fields([atom(int.from_bytes(value[i : i + 4], "little")) for i in range(0, 32, 4)])


def prog_id(subject: bytes, install_nonce: bytes) -> bytes:
    """The prog an import installs for an origin: ``neuron/prog-id/1(ref(subject),
    nonce(install_nonce))`` (neuron@fd24e768 ``engine/src/migration.rs`` L62-63)."""
    return record("neuron/prog-id/1", [ref(subject), nonce(install_nonce)])


def request_id(subject: bytes, request_nonce: bytes) -> bytes:
    """The request an import (or any neuron request) is committed under:
    ``neuron/request-id/1(ref(subject), nonce(request_nonce))`` (neuron@53dbf8d1
    ``engine/src/neuron.rs`` ``Neuron::request``)."""
    return record("neuron/request-id/1", [ref(subject), nonce(request_nonce)])
