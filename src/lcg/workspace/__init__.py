"""The application layer: ``Workspace`` (the one place that builds the embedder, the
projections and the projector from ``Config``), its status report, ``verify`` and where the
ontology files live."""

from __future__ import annotations

from lcg.workspace.ontology_files import OntologyLoader
from lcg.workspace.status import StatusReport, build_status
from lcg.workspace.verify import VerifyReport, verify_workspace
from lcg.workspace.workspace import Workspace

__all__ = [
    "OntologyLoader",
    "StatusReport",
    "VerifyReport",
    "Workspace",
    "build_status",
    "verify_workspace",
]
