"""The optional mapping of origin namespaces to a subject neuron: neuron's semantic import,
prepared (validated, inert) by a run and completed by neuron (:mod:`migrate.pipeline.subject`).

Given on the command line (``--subject HEX --map ORIGIN=INSTALL_NONCE ...``) or as a JSON file
validated by ``schemas/mapping.schema.json``::

    {"subject": "<64 hex>", "origins": [{"origin": "<64 hex>", "install_nonce": "<64 hex>"}],
     "import_nonce": "<64 hex, optional>"}

The optional import nonce (``--import-nonce``) is the one the operator will give ``neuron
import --nonce``: neuron refuses an import whose request id is already in the subject's
request index (``Conflict``), and the toolkit can check that only when it knows the nonce.

An install nonce is exactly 32 bytes: neuron's ``ImportOrigin.install_nonce`` is ``[u8; 32]``
(cyberia-to/neuron@fd24e768 ``engine/src/migration.rs`` L10) and the prog id neuron derives
from it (``neuron/prog-id/1``, L62-63) is defined for no other length.  neuron's import also
refuses an empty origin list (L40-42, ``Budget``), a repeated origin (L43-46, ``Conflict``) and
two origins with one install nonce (one prog id: the second finds it installed, L64-66,
``Conflict``); :func:`build` refuses these before anything is read (exit 2), naming neuron's
reason.  (More than 256 origins, neuron's ``MAX_PROGS``, and an origin that is the subject are
refused with the source's facts: :mod:`migrate.pipeline.preflight`.)

Without a mapping, every origin keeps its id and history (a plain backend conversion).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bbg_core import documents
from bbg_core.errors import UsageError

#: The length of an install nonce (neuron ``ImportOrigin.install_nonce: [u8; 32]``).
NONCE_LEN = 32


@dataclass(frozen=True)
class Origin:
    origin: bytes
    install_nonce: bytes


@dataclass(frozen=True)
class Mapping:
    """A subject and the origins mapped to it (sorted by origin id)."""

    subject: bytes
    origins: tuple[Origin, ...]
    #: The nonce the operator will give ``neuron import --nonce``, when named: its request id
    #: is then checked against the subject's request index (:mod:`migrate.pipeline.subject`).
    import_nonce: bytes | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "subject": self.subject.hex(),
            "origins": [
                {"origin": o.origin.hex(), "install_nonce": o.install_nonce.hex()}
                for o in self.origins
            ],
        }
        if self.import_nonce is not None:  # absent otherwise: earlier import ids stay
            doc["import_nonce"] = self.import_nonce.hex()
        return doc


def parse_hex(value: str, what: str) -> str:
    """``value`` as canonical lowercase hex (UsageError if it is not non-empty hex)."""
    return hex_bytes(value, what).hex()


def hex_bytes(
    value: str, what: str, length: int | None = None, *, empty_ok: bool = False
) -> bytes:
    """The bytes an operator gave in hex as ``what`` (an option or argument name): a
    UsageError when it is not hex, not ``length`` bytes, or (unless ``empty_ok``) empty."""
    try:
        raw = bytes.fromhex(value)
    except ValueError as exc:
        raise UsageError(f"{what}: {value!r} is not hex", value=value) from exc
    if length is not None and len(raw) != length:
        raise UsageError(f"{what}: {value!r} must be {length} bytes ({2 * length} hex digits)")
    if not raw and not empty_ok:
        raise UsageError(f"{what}: must not be empty")
    return raw


def build(
    subject: str, pairs: list[tuple[str, str]], import_nonce: str | None = None
) -> Mapping:
    """A validated mapping from hex strings (UsageError on any malformed or repeated entry, a
    nonce that is not 32 bytes or no origin -- neuron's import refuses each; the message names
    neuron's reason).  ``import_nonce``: the nonce of ``neuron import --nonce``, 32 bytes
    (``prepare_import(.., nonce: [u8; 32], ..)``), optional."""
    subj = hex_bytes(subject, "--subject", 32)
    request = None if import_nonce is None else hex_bytes(import_nonce, "--import-nonce", 32)
    origins: dict[bytes, Origin] = {}
    nonces: set[bytes] = set()
    for origin_hex, nonce_hex in pairs:
        origin = hex_bytes(origin_hex, "--map ORIGIN", 32)
        nonce = hex_bytes(nonce_hex, "--map INSTALL_NONCE")
        if len(nonce) != NONCE_LEN:
            raise UsageError(
                f"--map: origin {origin.hex()}: install nonce {nonce_hex!r} is {len(nonce)} "
                f"bytes; neuron's import takes exactly {NONCE_LEN} bytes ({2 * NONCE_LEN} hex "
                "digits: ImportOrigin.install_nonce, from which it derives the prog id); "
                "nothing was read or written",
                origin=origin.hex(),
                length=len(nonce),
            )
        if origin in origins:
            raise UsageError(
                f"--map: origin {origin.hex()} is mapped twice; neuron's import refuses a "
                "repeated origin (Conflict); nothing was read or written",
                origin=origin.hex(),
                reason="Conflict",
            )
        if nonce in nonces:
            raise UsageError(
                f"--map: install nonce {nonce_hex} is used for two origins; they would get one "
                "prog id, which neuron's import refuses (Conflict); nothing was read or written",
                reason="Conflict",
            )
        origins[origin] = Origin(origin, nonce)
        nonces.add(nonce)
    if not origins:
        raise UsageError(
            "--subject needs at least one --map ORIGIN=INSTALL_NONCE (neuron's import of no "
            "origin is refused: Budget)",
            reason="Budget",
        )
    return Mapping(subj, tuple(origins[k] for k in sorted(origins)), request)


def parse_cli(
    subject: str | None, maps: list[str] | None, mapping_file: Path | None,
    import_nonce: str | None = None,
) -> Mapping | None:  # fmt: skip
    """The mapping named on the command line, or None for a plain conversion."""
    maps = maps or []
    if mapping_file is not None:
        if subject is not None or maps or import_nonce is not None:
            raise UsageError(
                "give either --mapping FILE or --subject/--map/--import-nonce, not both"
            )
        return load_file(mapping_file)
    if subject is None:
        if maps or import_nonce is not None:
            raise UsageError("--map and --import-nonce need --subject HEX")
        return None
    pairs = []
    for item in maps:
        origin, sep, nonce = item.partition("=")
        if not sep:
            raise UsageError(f"--map {item!r}: expected ORIGIN=INSTALL_NONCE")
        pairs.append((origin.strip(), nonce.strip()))
    return build(subject, pairs, import_nonce)


def load_file(path: Path) -> Mapping:
    """Read and validate a mapping file against ``schemas/mapping.schema.json``."""
    import jsonschema  # here, not above: the hex parsing the hemera command uses stays light

    import schemas

    doc = documents.read(path, hint="name a mapping file (schemas/mapping.schema.json)")
    try:
        schemas.validate(doc, "mapping")
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top)"
        raise UsageError(
            f"{path}: mapping file invalid at {where}: {exc.message}", path=str(path)
        ) from exc
    pairs = [(o["origin"], o["install_nonce"]) for o in doc["origins"]]
    return build(doc["subject"], pairs, doc.get("import_nonce"))
