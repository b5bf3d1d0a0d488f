"""The fleet manifest: load, validate, expand globs and placeholders, group jobs into lanes.

A manifest (TOML or JSON, ``schemas/fleet-manifest.schema.json``) is a ``jobs`` array of
tables with ``source`` and ``store``; ``defaults`` gives options for every job that does not
set them.  Relative paths are relative to the manifest's directory.

Globs and placeholders: a source may be a glob whose wildcards (``*``, ``?``, ``[...]``) stay
inside single path components (``**`` is refused: one wildcard component matches exactly one
path component, which is what makes the placeholders unambiguous).  ``store``, ``mapping`` and
``name`` may then use

* ``{node}`` - the path component matched by the first wildcard component;
* ``{1}``, ``{2}``, ... - the path components matched by each wildcard component, in order;
* ``{stem}`` - the matched file's name without its last suffix (``cell`` for ``cell.redb``);
* ``{{`` and ``}}`` - literal braces.

``/srv/nodes/*/cell.redb`` -> ``/srv/bbg/{node}`` gives ``/srv/bbg/a`` for
``/srv/nodes/a/cell.redb``.  Named errors (exit 2, naming the entry and key): an unknown or
unusable placeholder, a glob that matches nothing, two jobs with the same (source, store)
after expansion (compared by real path), and two jobs with the same explicit nonce into
one store.

Lanes: jobs that share a source or a destination (by real path) form one lane; the scheduler
never runs two jobs of one lane at once (see :mod:`migrate.fleet.run` for why), and a shard
takes whole lanes (:func:`shard_of`).
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import jsonschema

import schemas
from bbg_core import documents
from bbg_core.canonical import canonical_json
from bbg_core.errors import MigrateError, UsageError
from bbg_core.files import cannot_read
from migrate.job import mapping as mapping_mod
from migrate.pipeline import Bounds, Job

MAPPING_KEYS = ("mapping", "subject", "map")
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


@dataclass(frozen=True)
class FleetJob:
    """One expanded job of a manifest: everything a worker needs to call ``run``/``plan``."""

    key: str  # sha256 over the real paths of (source, store): the job's identity
    entry: int  # index of the manifest entry it came from
    name: str
    source: Path
    store: Path
    kind: str | None = None
    nonce: str | None = None
    accept_torn_tail: bool = False
    bounds: dict[str, int] = field(default_factory=dict)
    mapping: mapping_mod.Mapping | None = None
    lane: str = ""  # real path that names the job's lane (set by :func:`load`)

    def job(self) -> Job:
        """The pipeline job (the same one a single ``run`` with these options builds)."""
        return Job(
            source=self.source,
            store=self.store,
            mapping=self.mapping,
            nonce=self.nonce,
            bounds=Bounds(**self.bounds),
            accept_torn_tail=self.accept_torn_tail,
            kind=self.kind,
        )


@dataclass(frozen=True)
class Manifest:
    path: Path
    jobs: tuple[FleetJob, ...]


def _where(path: Path, entry: int | None, raw: dict[str, Any] | None = None) -> str:
    if entry is None:
        return f"{path}"
    label = f"{path}: jobs[{entry}]"
    if raw is not None and isinstance(raw.get("source"), str):
        label += f" (source {raw['source']!r})"
    return label


def _read(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise cannot_read(path, exc) from exc
    fmt = "json" if path.suffix.lower() == ".json" else "toml"
    doc = documents.parse(data, path, fmt=fmt, hint="correct the fleet manifest")
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: the manifest must be a table/object", path=str(path))
    return doc


def _validate(path: Path, doc: dict[str, Any]) -> None:
    validator = schemas.validator("fleet-manifest")
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    if not errors:
        return
    first = errors[0]
    where = list(first.absolute_path)
    entry: int | None = None
    raw = None
    if len(where) >= 2 and where[0] == "jobs" and isinstance(where[1], int):
        entry, raw = where[1], doc["jobs"][where[1]]
        key = ".".join(str(p) for p in where[2:]) or "(entry)"
    else:
        key = ".".join(str(p) for p in where) or "(top)"
    message = first.message
    if first.validator == "unevaluatedProperties":
        message = f"unknown key: {message}"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    raise UsageError(
        f"{_where(path, entry, raw)}: {key}: {message}{more}",
        path=str(path),
        **({"job": entry} if entry is not None else {}),
        key=key,
    )


def _substitute(
    template: str, captures: dict[str, str], *, path: Path, entry: int, key: str
) -> str:
    def one(m: re.Match[str]) -> str:
        text = m.group(0)
        if text in ("{{", "}}"):
            return text[0]
        name = m.group(1)
        if name is None:
            raise UsageError(
                f"{path}: jobs[{entry}]: {key}: a lone {text!r} in {template!r} "
                "(write {{ or }} for a literal brace)",
                path=str(path),
                job=entry,
                key=key,
            )
        if name in captures:
            return captures[name]
        known = ", ".join("{" + k + "}" for k in captures)
        if (name == "node" or name.isdigit()) and "1" not in captures:
            known += " only: the source has no wildcard"
        raise UsageError(
            f"{path}: jobs[{entry}]: {key}: unknown placeholder {{{name}}} in {template!r}; "
            f"this source offers {known}",
            path=str(path),
            job=entry,
            key=key,
        )

    return _PLACEHOLDER.sub(one, template)


def _expand(path: Path, entry: int, pattern: str) -> list[tuple[str, dict[str, str]]]:
    """The sources an entry names, each with its placeholder values."""
    base = path.parent
    full = pattern if os.path.isabs(pattern) else str(base / pattern)
    full = os.path.normpath(full)
    parts = Path(full).parts
    wild = [i for i, part in enumerate(parts) if glob.has_magic(part)]
    if any("**" in parts[i] for i in wild):
        raise UsageError(
            f"{path}: jobs[{entry}]: source: ** is not supported in {pattern!r}; use one * per "
            "directory level",
            path=str(path),
            job=entry,
            key="source",
        )
    if not wild:
        return [(full, {"stem": Path(full).stem})]
    matches = sorted(glob.glob(full))
    if not matches:
        raise UsageError(
            f"{path}: jobs[{entry}]: source: the glob {pattern!r} matches nothing "
            f"(looked for {full})",
            path=str(path),
            job=entry,
            key="source",
        )
    out = []
    for match in matches:
        got = Path(match).parts
        captures = {str(n + 1): got[i] for n, i in enumerate(wild)}
        captures["node"] = captures["1"]
        captures["stem"] = Path(match).stem
        out.append((match, captures))
    return out


def _mapping(
    opts: dict[str, Any], captures: dict[str, str], path: Path, entry: int
) -> mapping_mod.Mapping | None:
    try:
        if "mapping" in opts:
            if "subject" in opts or "map" in opts:
                raise UsageError("give either mapping (a file) or subject and map, not both")
            file = _substitute(opts["mapping"], captures, path=path, entry=entry, key="mapping")
            mpath = Path(file) if os.path.isabs(file) else path.parent / file
            return mapping_mod.load_file(mpath)
        if "subject" in opts or "map" in opts:
            if "subject" not in opts or "map" not in opts:
                raise UsageError("subject and map go together")
            return mapping_mod.build(opts["subject"], sorted(opts["map"].items()))
    except MigrateError as exc:
        if "jobs[" in exc.message:
            raise
        raise UsageError(
            f"{path}: jobs[{entry}]: mapping: {exc.message}", path=str(path), job=entry,
            key="mapping",
        ) from exc  # fmt: skip
    return None


def _key(source: str, store: str) -> str:
    ident = canonical_json({"source": source, "store": store}, ascii=True)
    return hashlib.sha256(ident.encode()).hexdigest()


def _jobs_of_entry(
    path: Path, entry: int, raw: dict[str, Any], defaults: dict[str, Any]
) -> list[FleetJob]:
    own_mapping = any(k in raw for k in MAPPING_KEYS)
    opts = {k: v for k, v in defaults.items() if not (own_mapping and k in MAPPING_KEYS)}
    opts.update(raw)
    if "store" not in opts:
        raise UsageError(
            f"{_where(path, entry, raw)}: store: missing (give store here or in defaults)",
            path=str(path),
            job=entry,
            key="store",
        )
    bounds = {**defaults.get("bounds", {}), **raw.get("bounds", {})}
    try:
        Bounds(**bounds)
    except MigrateError as exc:
        raise UsageError(
            f"{_where(path, entry, raw)}: bounds: {exc.message}", path=str(path), job=entry,
            key="bounds",
        ) from exc  # fmt: skip
    jobs = []
    for source, captures in _expand(path, entry, raw["source"]):
        store = _substitute(opts["store"], captures, path=path, entry=entry, key="store")
        store = os.path.normpath(store if os.path.isabs(store) else str(path.parent / store))
        name = source if os.path.isabs(raw["source"]) else os.path.relpath(source, path.parent)
        if "name" in raw:
            name = _substitute(raw["name"], captures, path=path, entry=entry, key="name")
        real_source, real_store = os.path.realpath(source), os.path.realpath(store)
        jobs.append(
            FleetJob(
                key=_key(real_source, real_store),
                entry=entry,
                name=name,
                source=Path(source),
                store=Path(store),
                kind=opts.get("kind"),
                nonce=mapping_mod.parse_hex(opts["nonce"], "nonce") if "nonce" in opts else None,
                accept_torn_tail=bool(opts.get("accept_torn_tail", False)),
                bounds=bounds,
                mapping=_mapping(opts, captures, path, entry),
            )
        )
    return jobs


def _check_unique(path: Path, jobs: list[FleetJob]) -> None:
    seen: dict[str, FleetJob] = {}
    nonces: dict[tuple[str, str], FleetJob] = {}
    for job in jobs:
        other = seen.get(job.key)
        if other is not None:
            raise UsageError(
                f"{path}: jobs[{other.entry}] and jobs[{job.entry}] both migrate "
                f"{os.path.realpath(job.source)} into {os.path.realpath(job.store)}; "
                "remove one (or narrow the glob)",
                path=str(path),
                job=job.entry,
                key="source",
            )
        seen[job.key] = job
        if job.nonce is not None:
            slot = (os.path.realpath(job.store), job.nonce)
            prev = nonces.get(slot)
            if prev is not None:
                raise UsageError(
                    f"{path}: jobs[{prev.entry}] ({prev.source}) and jobs[{job.entry}] "
                    f"({job.source}) use the same nonce {job.nonce} in store {job.store}: "
                    "the second would be a conflict (exit 4); give each its own nonce",
                    path=str(path),
                    job=job.entry,
                    key="nonce",
                )
            nonces[slot] = job


def _lanes(jobs: list[FleetJob]) -> list[FleetJob]:
    """Group jobs sharing a source or a store (by real path) and name each group."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for job in jobs:
        a = find("source:" + os.path.realpath(job.source))
        b = find("store:" + os.path.realpath(job.store))
        if a != b:
            parent[max(a, b)] = min(a, b)
    names: dict[str, str] = {}
    for job in jobs:
        root = find("store:" + os.path.realpath(job.store))
        store = os.path.realpath(job.store)
        names[root] = min(names.get(root, store), store)
    return [replace(j, lane=names[find("store:" + os.path.realpath(j.store))]) for j in jobs]


def load(path: Path) -> Manifest:
    """Read, validate and expand a manifest; UsageError (exit 2) naming the entry and key."""
    path = Path(os.path.abspath(path))
    doc = _read(path)
    try:
        _validate(path, doc)
    except jsonschema.SchemaError as exc:  # pragma: no cover - the shipped schema is checked
        raise UsageError(f"fleet manifest schema broken: {exc.message}") from exc
    defaults: dict[str, Any] = doc.get("defaults", {})
    jobs: list[FleetJob] = []
    for entry, raw in enumerate(doc["jobs"]):
        jobs.extend(_jobs_of_entry(path, entry, raw, defaults))
    _check_unique(path, jobs)
    return Manifest(path, tuple(_lanes(jobs)))


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` (0 <= I < N) as a pair; UsageError otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if m is None or not 0 <= int(m.group(1)) < int(m.group(2)):
        raise UsageError(
            f"--shard {text!r}: expected I/N with 0 <= I < N (e.g. 0/3, 1/3, 2/3)", shard=text
        )
    return int(m.group(1)), int(m.group(2))


def shard_of(job: FleetJob, count: int) -> int:
    """The shard (0..count-1) that runs ``job``: a hash of its lane, not its list position.

    Adding or removing a job never moves another lane; jobs of one lane (a shared store or
    source) always land in the same shard, so two machines never write one store at once.
    """
    digest = hashlib.sha256(job.lane.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") % count


def select(jobs: tuple[FleetJob, ...], shard: tuple[int, int] | None) -> list[FleetJob]:
    """The jobs of ``shard`` (all when None), in manifest order."""
    if shard is None:
        return list(jobs)
    index, count = shard
    return [j for j in jobs if shard_of(j, count) == index]


def jobs_of(manifest: Manifest, shard: tuple[int, int] | None) -> list[FleetJob]:
    """The manifest's jobs of ``shard`` (all when None)."""
    return select(manifest.jobs, shard)
