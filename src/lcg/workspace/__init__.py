"""The application layer: the one place that turns a ``Config`` into the embedder, the
extractor, the projections and the projector (``Workspace``, ``factory``), the status report,
``verify``, the streams' maintenance (marks, checkpoints), and where the ontology files
live."""

from __future__ import annotations

from lcg.workspace.factory import embedder_from_config, make_extractor
from lcg.workspace.lock import writing_offline
from lcg.workspace.maintenance import (
    close_segments,
    create_applied_mark,
    create_stream_mark,
    delete_group_mark,
    group_marks,
)
from lcg.workspace.ontology_files import OntologyLoader, workspace_ontology_path, write_hash_file
from lcg.workspace.status import StatusReport, build_status
from lcg.workspace.verify import VerifyReport, verify_workspace
from lcg.workspace.workspace import Workspace

__all__ = [
    "OntologyLoader",
    "StatusReport",
    "VerifyReport",
    "Workspace",
    "build_status",
    "close_segments",
    "create_applied_mark",
    "create_stream_mark",
    "delete_group_mark",
    "embedder_from_config",
    "group_marks",
    "make_extractor",
    "verify_workspace",
    "workspace_ontology_path",
    "write_hash_file",
    "writing_offline",
]
