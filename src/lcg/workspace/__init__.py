"""The application layer: the one place that turns a ``Config`` into the embedder, the
extractor, the projections and the projector (``Workspace``, ``factory``), the status report,
``verify``, the streams' maintenance (marks, checkpoints), and where the ontology files
live."""

from __future__ import annotations

from lcg.workspace.auto_recovery import RecoveryTrace
from lcg.workspace.factory import embedder_from_config, make_extractor, projection_dirs
from lcg.workspace.lock import hold_for_process, holder_pid, release_for_process, writing_offline
from lcg.workspace.maintenance import (
    close_segments,
    create_applied_mark,
    create_stream_mark,
    delete_group_mark,
    group_marks,
)
from lcg.workspace.ontology_files import OntologyLoader, workspace_ontology_path, write_hash_file
from lcg.workspace.status import (
    OntologyStatus,
    StatusReport,
    build_status,
    degraded_status,
    ontology_status,
)
from lcg.workspace.vector_drain import drain_step, next_lagging
from lcg.workspace.verify import VerifyReport, verify_workspace
from lcg.workspace.watching import WatchClaim, active_watches, watching
from lcg.workspace.workspace import Workspace

__all__ = [
    "OntologyLoader",
    "OntologyStatus",
    "RecoveryTrace",
    "StatusReport",
    "VerifyReport",
    "WatchClaim",
    "Workspace",
    "active_watches",
    "build_status",
    "close_segments",
    "create_applied_mark",
    "create_stream_mark",
    "degraded_status",
    "delete_group_mark",
    "drain_step",
    "embedder_from_config",
    "group_marks",
    "hold_for_process",
    "holder_pid",
    "make_extractor",
    "next_lagging",
    "ontology_status",
    "projection_dirs",
    "release_for_process",
    "verify_workspace",
    "watching",
    "workspace_ontology_path",
    "write_hash_file",
    "writing_offline",
]
