"""Preflight: read the whole source once, read-only, before anything is written anywhere.

Every stage starts here, ``plan`` included, so a dry run walks the same code as ``run``:
detect the kind by content, check the source's shape and links (an invalid source stops with
exit 3 and nothing written), enforce the bounds, check the mapping against the source's
namespaces, and fingerprint the source.  The result pins everything a receipt depends on.

A legacy Signal log or TextArchive is decoded whole and strictly here
(:mod:`migrate.pipeline.legacy`); its report has the same five-table fields as a cell
store's (the rows it becomes), plus a ``legacy`` section.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bbg_core.errors import OriginNotCellRecord, SourceError, UsageError, ValidationFailed
from migrate.job import CODEC, MODES, Bounds, Job
from migrate.job.mapping import Mapping
from migrate.pipeline import identity
from migrate.probe.detect import detect
from migrate.rules.report import cell_report
from migrate.rules.shape import RowSource
from migrate.rules.sources import RedbSource

if TYPE_CHECKING:
    from migrate.pipeline.legacy import LegacyImport
    from migrate.rules.cell_records import LegacyView

#: A mapped source's origins as neuron's legacy reader reads them: refusals, then views.
Origins = tuple[list[dict[str, Any]], list["LegacyView"]]

KINDS = ("redb", "signal-log", "bbg-frame-log", "text-archive")
LOG_KINDS = ("signal-log", "bbg-frame-log")
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Preflight:
    """The source as read before sealing: its report, fingerprint and derived identities."""

    kind: str
    report: dict[str, Any]
    fingerprint: dict[str, Any]
    nonce: str
    import_id: str
    legacy: LegacyImport | None = None
    #: Mapped origins neuron's legacy reader refuses (:func:`refuse_origins`).
    refusals: tuple[dict[str, Any], ...] = ()
    #: The views of the mapped origins it reads (for the post-import state check).
    views: tuple[LegacyView, ...] = ()

    @property
    def namespaces(self) -> dict[str, dict[str, Any]]:
        ns: dict[str, dict[str, Any]] = self.report["namespaces"]
        return ns

    @property
    def rows(self) -> int:
        return sum(t["rows"] for t in self.report["tables"].values())

    @property
    def nbytes(self) -> int:
        return sum(t["total_bytes"] for t in self.report["tables"].values())


def _check_bounds(report: dict[str, Any], bounds: Bounds, path: Path) -> None:
    rows = sum(t["rows"] for t in report["tables"].values())
    nbytes = sum(t["total_bytes"] for t in report["tables"].values())
    over = [
        (what, have, limit, opt)
        for what, have, limit, opt in (
            ("rows", rows, bounds.max_rows, "--max-rows"),
            ("bytes", nbytes, bounds.max_bytes, "--max-bytes"),
            ("namespaces", len(report["namespaces"]), bounds.max_namespaces, "--max-namespaces"),
        )
        if have > limit
    ]
    if over:
        what, have, limit, opt = over[0]
        raise ValidationFailed(
            f"{path}: the source has {have} {what}, over the bound of {limit}; raise {opt} "
            "if this is expected",
            path=str(path),
            errors=[{"code": "limit-exceeded", "detail": f"{what}: {have} > {limit}"}],
        )


#: At most this many origins per import (neuron ``MAX_PROGS``, cyberia-to/neuron@fd24e768
#: ``engine/src/migration.rs`` L40-42 → ``Budget``; bbg ``apply_migration``).
MAX_ORIGINS = 256


def _check_mapping(mapping: Mapping, report: dict[str, Any], path: Path) -> None:
    """The mapping names every namespace of the source, and each origin passes the rules of
    neuron's semantic import (``engine/src/migration.rs`` ``prepare_import``,
    ``engine/src/legacy.rs`` ``inspect``) that the store's structure shows: the birth rule,
    an origin that is not the subject's own namespace, at most 256 origins.  An entry for a
    refusal neuron's import makes names neuron's ``reason`` (migration.rs @fd24e768: more than
    ``MAX_PROGS`` origins L40-42 ``Budget``; an origin that is the subject L58-60
    ``Conflict``)."""
    namespaces: dict[str, Any] = report["namespaces"]
    mapped = {o.origin.hex() for o in mapping.origins}
    errors: list[dict[str, str]] = []
    if len(mapped) > MAX_ORIGINS:
        errors.append(
            {
                "code": "limit-exceeded",
                "reason": "Budget",
                "detail": f"{len(mapped)} origins mapped; neuron's import takes at most "
                f"{MAX_ORIGINS} (MAX_PROGS) and refuses more (Budget)",
            }
        )
    # The subject's namespace is the subject id itself.
    if mapping.subject.hex() in mapped:
        errors.append(
            {
                "code": "mapping-origin-is-subject",
                "reason": "Conflict",
                "detail": f"origin {mapping.subject.hex()} is the subject itself; neuron's "
                "import refuses it (Conflict)",
            }
        )
    errors += [
        {"code": "mapping-unknown-origin", "detail": f"origin {o} is not a namespace of the source"}
        for o in sorted(mapped - namespaces.keys())
    ] + [
        {"code": "mapping-incomplete", "detail": f"namespace {n} of the source is not mapped"}
        for n in sorted(namespaces.keys() - mapped)
    ]
    errors += [
        {"code": e["code"], "detail": f"origin {e['detail']} (neuron's semantic import)"}
        for e in report.get("semantic_errors", [])
        if e["namespace"] in mapped
    ]
    if errors:
        raise ValidationFailed(
            f"{path}: the mapping cannot be imported: {errors[0]['code']}: {errors[0]['detail']}"
            + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""),
            path=str(path),
            errors=errors,
        )


def source_kind(job: Job) -> str:
    """The kind of the job's source, by content (or ``job.kind`` where content cannot tell)."""
    found = detect(job.source)
    kind = str(found["kind"])
    if job.kind is not None:
        if job.kind not in KINDS:
            raise UsageError(f"--kind must be one of {', '.join(KINDS)}", kind=job.kind)
        if kind not in ("unknown", job.kind):
            raise UsageError(
                f"{job.source}: --kind {job.kind} but the content is a {kind}",
                path=str(job.source),
            )
        kind = job.kind
    elif kind == "unknown" and found.get("size_bytes") == 0:
        raise UsageError(
            f"{job.source}: the file is empty; name its kind with --kind signal-log, "
            "--kind bbg-frame-log or --kind text-archive",
            path=str(job.source),
        )
    if kind not in KINDS:
        raise SourceError(
            f"{job.source}: not a redb file, Signal log, frame log or TextArchive (judged by "
            "content)",
            path=str(job.source),
        )
    if job.content_check not in MODES:
        raise UsageError(
            f"--content-check must be one of {', '.join(MODES)}", content_check=job.content_check
        )
    if job.content_check != CODEC and kind != "redb":
        raise UsageError(
            f"{job.source}: --content-check applies to cell.redb sources (this is a {kind})",
            path=str(job.source),
        )
    if job.strict and kind != "bbg-frame-log":
        raise UsageError(
            f"{job.source}: --strict applies to bbg frame logs only (this is a {kind})",
            path=str(job.source),
        )
    if job.namespace is not None and kind != "text-archive":
        raise UsageError(
            f"{job.source}: --namespace applies to TextArchives only (this is a {kind})",
            path=str(job.source),
        )
    if job.accept_torn_tail and kind not in LOG_KINDS:
        raise UsageError(
            f"{job.source}: --accept-torn-tail applies to frame logs only (this is a {kind})",
            path=str(job.source),
        )
    return kind


def read_legacy(
    job: Job, kind: str, fp: dict[str, Any], progress: Progress | None
) -> LegacyImport:
    """The legacy source of ``job`` decoded whole and strictly (exit 3 on its first error)."""
    from migrate.pipeline.legacy import LegacyImport
    from migrate.pipeline.legacy_text import TextImport

    cls = TextImport if kind == "text-archive" else LegacyImport
    return cls.read(
        job.source, kind, fp, accept_torn_tail=job.accept_torn_tail, strict=job.strict,
        progress=progress, namespace=job.namespace,
    )  # fmt: skip


def _legacy_preflight(
    job: Job, kind: str, fp: dict[str, Any], progress: Progress | None
) -> tuple[dict[str, Any], LegacyImport]:
    imp = read_legacy(job, kind, fp, progress)
    # The seal of a log or archive counts the source's bytes read (the scan above); the row
    # check that follows counts rows' key+value bytes, which are not the file's bytes and
    # would run the counter past its total (the file's size).
    return imp.report(None), imp


def preflight(
    job: Job, kind: str, fp: dict[str, Any], progress: Progress | None = None
) -> Preflight:
    """Read and check the source (read-only) whose fingerprint is ``fp``; raise if wrong."""
    legacy = None
    if kind == "redb":
        with RedbSource(job.source) as src:
            report = redb_report(job, src, progress)
            origins = mapped_refusals(job, kind, report, src.lookup)
    else:
        report, legacy = _legacy_preflight(job, kind, fp, progress)
        origins = mapped_refusals(job, kind, report, None)
    return judge(job, kind, fp, report, legacy, origins)


def mapped_refusals(
    job: Job, kind: str, report: dict[str, Any],
    lookup: Callable[[str, bytes], bytes | None] | None,
) -> Origins:
    """The mapped origins of ``job`` that neuron's legacy reader refuses (none without a
    mapping, or when the source is refused anyway), and the views of those it reads: a
    cell.redb's read through ``lookup`` (:func:`origin_refusals`); every origin of a
    converted log is refused (:func:`_not_cell_log`)."""
    if job.mapping is None:
        return [], []
    if kind != "redb":
        return [_not_cell_log(o.origin, kind) for o in job.mapping.origins], []
    assert lookup is not None
    return origin_refusals(job.mapping, report, lookup) if report["valid"] else ([], [])


def origin_refusals(
    mapping: Mapping, report: dict[str, Any], lookup: Callable[[str, bytes], bytes | None]
) -> Origins:
    """neuron's legacy reader on each mapped origin of the source (:mod:`.cell_records`
    ``read_origin``): the first refusal of each, in origin order, and the views of the rest."""
    from migrate.rules.cell_records import read_origin

    out, views = [], []
    for o in mapping.origins:
        facts = report["namespaces"].get(o.origin.hex())
        if facts is not None:
            found = read_origin(lookup, o.origin, int(facts["head_index"]))
            if isinstance(found, dict):
                out.append(found)
            else:
                views.append(found)
    return out, views


def _not_cell_log(origin: bytes, kind: str) -> dict[str, Any]:
    """A converted log's namespace starts with the toolkit's own import record, a Blob:
    never neuron's ``cell/birth/1`` (``Reader::pair`` on a Blob: ``InvalidData``)."""
    return {
        "code": "origin-not-cell-record",
        "namespace": origin.hex(),
        "index": 0,
        "reason": "Data(InvalidData)",
        "detail": f"origin {origin.hex()} index 0 is the toolkit's import record of a {kind} "
        "(a Blob), not a cell/birth/1 record",
    }


def redb_report(job: Job, source: RowSource, progress: Progress | None,
                rows_read: Callable[[], object] | None = None) -> dict[str, Any]:  # fmt: skip
    """The preflight report of a cell.redb read through ``source`` (one checking pass;
    ``rows_read``: see :func:`~migrate.rules.report.cell_report`)."""
    return cell_report(
        source, progress=progress, hemera_digest=False, content_check=job.content_check,
        rows_read=rows_read,
    )  # fmt: skip


def judge(
    job: Job,
    kind: str,
    fp: dict[str, Any],
    report: dict[str, Any],
    legacy: LegacyImport | None = None,
    origins: Origins = ([], []),
) -> Preflight:
    """The preflight of a source whose report is ``report``: refuse an invalid source, a
    bound exceeded or a mapping that does not fit -- ``origins``: its origins that neuron's
    legacy reader refuses, and the views of the rest -- (nothing written); else its
    identities."""
    if not report["valid"]:
        first = report["errors"][0]
        raise ValidationFailed(
            f"{job.source}: the source breaks the cell store rules: {first['code']}: "
            f"{first['detail']}"
            + (f" (and {report['error_count'] - 1} more)" if report["error_count"] > 1 else "")
            + "; nothing was written",
            path=str(job.source),
            errors=report["errors"],
        )
    _check_bounds(report, job.bounds, job.source)
    if job.mapping is not None:
        _check_mapping(job.mapping, report, job.source)
    nonce, iid = import_of(job, kind, fp)
    return Preflight(
        kind=kind, report=report, fingerprint=fp, nonce=nonce, import_id=iid, legacy=legacy,
        refusals=tuple(origins[0]), views=tuple(origins[1]),
    )  # fmt: skip


def refuse_origins(job: Job, pre: Preflight) -> None:
    """OriginNotCellRecord (exit 3) for the first mapped origin neuron's legacy reader
    refuses.  Raised by the admission after the subject check, in neuron's order
    (``prepare_import`` inspects the subject before each origin)."""
    refusals = pre.refusals
    if refusals:
        first = refusals[0]
        raise OriginNotCellRecord(
            f"{job.source}: mapped origin {first['namespace']} is not neuron's legacy cell "
            f"history at index {first['index']}: neuron's import refuses it "
            f"({first['reason']}): {first['detail']}"
            + (f" (and {len(refusals) - 1} more origins)" if len(refusals) > 1 else "")
            + "; map only origins written by the cell runtime, or convert without a "
            "mapping; nothing was written",
            path=str(job.source),
            namespace=first["namespace"],
            index=first["index"],
            errors=list(refusals),
        )


def import_of(job: Job, kind: str, fp: dict[str, Any]) -> tuple[str, str]:
    """``(nonce, import id)`` of ``job`` on a source of ``kind`` with fingerprint ``fp``: what
    the seal alone decides, known before the source is read."""
    nonce = job.nonce or identity.default_nonce(fp["sha256"])
    mapping_doc = job.mapping.to_json() if job.mapping is not None else None
    return nonce, identity.import_id(
        kind, fp, mapping_doc, nonce, job.content_check, job.strict,
        records="cybergraph/text-observation/1" if kind == "text-archive" else None,
        namespace=job.namespace,
    )  # fmt: skip
