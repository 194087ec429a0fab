"""The workspace's status report (``knowledge_status`` and ``lcg status``).

Per group: the stream's bounds and generation, each projection's applied position, the
hydration status, counts, pending extractions, and the embedding model the stream's vectors
were built with against the running one. Field names and value rules follow the reference:

* ``applied_seq`` – the lowest applied seq over the projections, 0 when nothing is applied
  (the reference's overloaded 0; ``projections`` has each projection's own, null if none);
* ``max_seq`` – the highest seq in the stream, or ``None``;
* ``generation_status`` – ``known`` (a generation exists), ``not_applicable`` (no generation
  and no content), ``unknown`` (content but no readable generation);
* ``hydration_status`` – ``not_applicable`` (empty stream), ``hydrated`` (applied = max),
  ``wal_ahead`` (the stream holds events not applied yet), ``projections_ahead`` (a projection
  applied seqs the stream no longer holds: it lost its tail);
* ``degraded_reason`` – why the group is degraded (its writes are refused), with the remedy;
* ``projection_repairs`` – its text or vector snapshot files found damaged on open (the path
  and the fault) and rebuilt from the stream, or still waiting to be (ADR 0155).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from lcg.errors import CorruptFileError, StreamError
from lcg.events import (
    DEFAULT_GROUP,
    Position,
    ReferenceStream,
    effective_generation,
    read_embedding_model,
    reference_stream,
)
from lcg.extract import drift_summary
from lcg.projections import graph_records as gr
from lcg.workspace.ontology_files import (
    OntologyLoader,
    read_hash_file,
)
from lcg.workspace.workspace import Workspace

__all__ = [
    "OntologyStatus",
    "PointerCounts",
    "ProjectionPositions",
    "StatusReport",
    "WalGroupStatus",
    "WalStatus",
    "build_status",
    "degraded_status",
    "ontology_status",
]


class OntologyStatus(msgspec.Struct, kw_only=True):
    """The workspace ontology as loaded."""

    present: bool = False
    loaded: bool = False
    mode: Literal["open", "strict"] | None = None
    entity_type_count: int = 0
    relation_type_count: int = 0
    drifted: bool = False
    drift_summary: str | None = None


class ProjectionPositions(msgspec.Struct, kw_only=True):
    """Each projection's applied seq for a group."""

    graph: int | None
    text: int | None
    vectors: int | None


class WalGroupStatus(msgspec.Struct, kw_only=True):
    """One group's stream against its projections."""

    applied_seq: int | None
    max_seq: int | None
    generation: str | None
    generation_status: Literal["known", "not_applicable", "unknown"]
    hydration_status: Literal["not_applicable", "hydrated", "wal_ahead", "projections_ahead"]
    embedding_model: str | None
    embedding_dim: int | None
    embedding_model_status: Literal["not_applicable", "unknown", "match", "mismatch"]
    projections: ProjectionPositions
    entity_count: int = 0
    relationship_count: int = 0
    episode_count: int = 0
    pending_episodes: int = 0
    vectors_lagging_reason: str | None = None
    #: Texts (chunks, names, facts) of this group whose vectors are not made yet: BM25 alone
    #: answers for them meanwhile (ADR 0201). Known to a serving process that is making
    #: them; else the events the vector projection lags the stream by.
    vectors_pending: int = 0
    #: Events up to this seq were cleared by ``knowledge_clear_all`` (stream kept) and are
    #: not in the projections until ``knowledge_rebuild_from_wal`` replays them.
    cleared_through_seq: int | None = None
    degraded_reason: str | None = None
    #: Snapshot files of this group found damaged on open: rebuilt from the stream, or not yet.
    projection_repairs: list[str] = []
    #: A stream in the reference's format found in the group's directory (files lcg did not
    #: name): not replayed, not empty; its ``max_seq`` is the stream's when lcg has none,
    #: and its ``import_command`` brings it in (ADR 0212).
    reference_stream: ReferenceStream | None = None


class WalStatus(WalGroupStatus, kw_only=True):
    """The default group's stream, with its file statistics (the reference's flat ``wal``)."""

    exists: bool = False
    file_count: int = 0
    byte_size: int = 0


class PointerCounts(msgspec.Struct, kw_only=True):
    """Cross-group pointers of current edges by binding state."""

    bound: int = 0
    unbound: int = 0
    ambiguous: int = 0


class StatusReport(msgspec.Struct, kw_only=True, omit_defaults=False):
    """The queryable shape of ``knowledge_status``."""

    database_path: str
    embedding_model: str
    embedding_dim: int
    entity_count: int
    relationship_count: int
    episode_count: int
    pending_episodes: int
    last_index_time: str | None
    #: The oldest episode's time; the key is left out when there is none (as the reference).
    index_created_at: str | msgspec.UnsetType = msgspec.UNSET
    context_graph_initialized: bool = True
    connected: bool = True
    queryable: bool = True
    initializing: bool = False
    wal: WalStatus
    wal_groups: dict[str, WalGroupStatus]
    indices_built: bool = True
    #: ``null`` while the service is degraded: a name looked up may be missing from a group
    #: whose projections are damaged or lag (the reference's degraded shape, ADR 0214).
    name_index_trusted: bool | None = True
    name_index_fallback_scans: int = 0
    cross_group_pointers: PointerCounts
    ontology: OntologyStatus
    #: What background parts of the serving process report wrong (a watcher, ADR 0193);
    #: the key is left out when nothing is.
    problems: list[str] | msgspec.UnsetType = msgspec.UNSET
    #: Texts of every group whose vectors are not made yet, and how many the background
    #: drainer made per second over the last minute (ADR 0201).
    vectors_pending: int = 0
    vectors_per_s: float = 0.0
    #: Present only while ``health_check`` says degraded with the workspace open (a damaged
    #: group, an I/O fault, an away embedder, a failing watcher): ``degraded: true`` and the
    #: health's ``reason``, with ``queryable: false`` so that the reference's readiness recipe
    #: waits (ADR 0214).
    degraded: bool | msgspec.UnsetType = msgspec.UNSET
    reason: str | msgspec.UnsetType = msgspec.UNSET


class DegradedStatus(msgspec.Struct, kw_only=True):
    """The shape of ``knowledge_status`` when no workspace is open."""

    running: bool = True
    degraded: bool = True
    reason: str | None
    context_graph_initialized: bool = False
    connected: bool = False
    queryable: bool = False
    initializing: bool
    recovery_available: list[str]
    ontology: OntologyStatus
    indices_built: bool = False
    name_index_trusted: bool | None = None
    name_index_fallback_scans: int | None = None
    cross_group_pointers: PointerCounts | None = None


def ontology_status(loader: OntologyLoader, *, has_episodes: bool) -> OntologyStatus:
    """The workspace ontology as the extraction layer loaded it (reference §3.1, §5.11).

    ``present``: a workspace ontology file existed when the service loaded it (at start); a
    file added later is neither present nor loaded until a restart, as the reference documents
    ("When no ontology is loaded, present is false"; ADR 0216). ``loaded``: it parsed into types
    (an empty or broken file is present but not loaded); drift against
    ``.lcg/ontology-hash.json``.
    """
    root = loader.root
    if root is None:
        return OntologyStatus()
    present = loader.workspace_found()
    onto = loader.workspace()
    try:
        summary = drift_summary(read_hash_file(root), onto, has_episodes=has_episodes)
    except CorruptFileError as exc:
        summary = str(exc)
    return OntologyStatus(
        present=present,
        loaded=onto is not None,
        mode=onto.mode if onto is not None else None,
        entity_type_count=len(onto.entity_types) if onto is not None else 0,
        relation_type_count=len(onto.relation_types) if onto is not None else 0,
        drifted=summary is not None,
        drift_summary=summary,
    )


def degraded_status(
    reason: str | None, *, initializing: bool, ontology: OntologyStatus | None = None
) -> DegradedStatus:
    """The status while the workspace is closed (initializing or degraded)."""
    return DegradedStatus(
        degraded=not initializing,
        reason=reason,
        initializing=initializing,
        recovery_available=["drop_lbug_wal", "rebuild_from_workspace_wal"],
        # The reference reports the workspace ontology in this shape too (§3.1 shape 1).
        ontology=ontology or OntologyStatus(),
    )


def _group_status(ws: Workspace, group_id: str) -> tuple[WalGroupStatus, int, int]:
    bounds = ws.store.bounds(group_id)
    gdir = ws.store.group_dir(group_id)
    reference, ours = reference_stream(gdir, group_id), bounds.max_seq
    if reference is not None and bounds.max_seq is None:  # not empty: another writer's
        bounds = msgspec.structs.replace(
            bounds,
            max_seq=reference.max_seq,
            file_count=reference.file_count,
            byte_size=reference.byte_size,
        )
    # Read from disk, not from a writer's memory: a stream replaced (a new generation) under
    # a running service shows at once, as the reference reads it per call.
    generation = effective_generation(gdir)
    positions = ws.projector.positions(group_id)
    applied = ws.projector.applied_seq(group_id)
    if generation is not None:
        gen_status: Literal["known", "not_applicable", "unknown"] = "known"
    elif bounds.max_seq is None:
        gen_status = "not_applicable"
    else:
        gen_status = "unknown"
    Hydration = Literal["not_applicable", "hydrated", "wal_ahead", "projections_ahead"]
    # A projection of another generation is not ahead of this stream: it awaits its reset.
    stream_end = Position(group_id=group_id, generation=generation, seq=bounds.max_seq)
    ahead = any(p.generation == generation and stream_end.behind(p) for p in positions.values())
    hydration: Hydration
    if ahead:
        hydration = "projections_ahead"
    elif not bounds.max_seq:
        # The reference's rule: max_seq null or 0 → not_applicable; applied (null → 0) ≥ max.
        hydration = "not_applicable"
    elif (applied if applied is not None else 0) >= bounds.max_seq:
        hydration = "hydrated"
    else:
        hydration = "wal_ahead"
    sidecar = read_embedding_model(ws.store.group_dir(group_id))
    model_status: Literal["not_applicable", "unknown", "match", "mismatch"]
    if applied is None:
        model_status = "not_applicable"
    elif group_id in ws.vectors.foreign_groups:
        model_status = "mismatch"  # an inspecting open found another embedder's vectors
    elif sidecar is None:
        model_status = "unknown"
    elif (sidecar.model, sidecar.dim) == (ws.embedder.model_id, ws.embedder.dim):
        model_status = "match"
    else:
        model_status = "mismatch"
    counts = ws.graph.counts(group_id)
    status = WalGroupStatus(
        # The reference reports 0 for "nothing applied" (a fresh or cleared group), never null;
        # each projection's own position (null when none) is in ``projections``.
        applied_seq=0 if applied is None else applied,
        max_seq=bounds.max_seq,
        generation=generation,
        generation_status=gen_status,
        hydration_status=hydration,
        embedding_model=sidecar.model if sidecar else None,
        embedding_dim=sidecar.dim if sidecar else None,
        embedding_model_status=model_status,
        projections=ProjectionPositions(
            graph=positions["graph"].seq,
            text=positions["text"].seq,
            vectors=positions["vectors"].seq,
        ),
        entity_count=counts.entities,
        relationship_count=counts.edges,
        episode_count=counts.episodes,
        pending_episodes=counts.pending_episodes,
        vectors_lagging_reason=ws.projector.embedder_failures.get(group_id),
        vectors_pending=_vectors_pending(ws, group_id, ours, positions["vectors"].seq),
        cleared_through_seq=ws.projector.cleared_through(group_id),
        degraded_reason=ws.projector.degraded_reason(group_id),
        projection_repairs=ws.projector.file_repairs.notes(group_id),
        reference_stream=reference,
    )
    return status, bounds.file_count, bounds.byte_size


def _vectors_pending(ws: Workspace, group_id: str, max_seq: int | None, seq: int | None) -> int:
    """Texts of ``group_id`` without vectors: the drainer's count, else the events the
    vector projection lags by."""
    known = ws.vectors.backlog.pending().get(group_id)
    if known is not None:
        return known
    if max_seq is None:
        return 0
    return max(0, max_seq - (-1 if seq is None else seq))


def _unreadable_status(ws: Workspace, group_id: str, exc: StreamError) -> WalGroupStatus:
    """What is known of a group whose stream files could not be read, and why."""
    positions = ws.projector.positions(group_id)
    applied = ws.projector.applied_seq(group_id)
    counts = ws.graph.counts(group_id)
    return WalGroupStatus(
        applied_seq=0 if applied is None else applied,
        max_seq=None,
        generation=None,
        generation_status="unknown",
        hydration_status="not_applicable",
        embedding_model=None,
        embedding_dim=None,
        embedding_model_status="unknown",
        projections=ProjectionPositions(
            graph=positions["graph"].seq,
            text=positions["text"].seq,
            vectors=positions["vectors"].seq,
        ),
        entity_count=counts.entities,
        relationship_count=counts.edges,
        episode_count=counts.episodes,
        pending_episodes=counts.pending_episodes,
        degraded_reason=f"the stream of group {group_id!r} cannot be read: {exc}",
    )


def build_status(ws: Workspace, ontology: OntologyStatus | None = None) -> StatusReport:
    """The full status report of an open workspace."""
    groups = ws.known_groups(record_only=True)
    wal_groups: dict[str, WalGroupStatus] = {}
    flat: WalStatus | None = None
    for group_id in groups:
        try:
            status, files, size = _group_status(ws, group_id)
        except StreamError as exc:
            # One group's unreadable stream (a symlink, a FIFO, a huge file in a publication)
            # is that group's status, never the whole report's (ADR 0154).
            status, files, size = _unreadable_status(ws, group_id, exc), 0, 0
        wal_groups[group_id] = status
        if group_id == DEFAULT_GROUP:
            flat = WalStatus(
                **msgspec.structs.asdict(status),
                exists=ws.store.group_dir(group_id).is_dir(),
                file_count=files,
                byte_size=size,
            )
    if flat is None:
        status, files, size = _group_status(ws, DEFAULT_GROUP)
        flat = WalStatus(**msgspec.structs.asdict(status), exists=False)
    totals = ws.graph.counts(None)
    oldest, newest = gr.episode_time_bounds(ws.graph)
    pointers = gr.pointer_counts(ws.graph)
    return StatusReport(
        database_path=str(ws.config.db_dir),
        embedding_model=ws.embedder.model_id,
        embedding_dim=ws.embedder.dim,
        entity_count=totals.entities,
        relationship_count=totals.edges,
        episode_count=totals.episodes,
        pending_episodes=totals.pending_episodes,
        last_index_time=newest,
        index_created_at=oldest if oldest is not None else msgspec.UNSET,
        wal=flat,
        wal_groups=wal_groups,
        cross_group_pointers=PointerCounts(**pointers),
        ontology=ontology or OntologyStatus(),
        vectors_pending=sum(g.vectors_pending for g in wal_groups.values()),
        vectors_per_s=round(ws.vectors.backlog.rate(), 2),
    )
