"""Curation passes: relation typing (§3.8), entity typing and the corrections file (§3.7).

Every pass reads the group, decides, and records its changes as events
(``RelationTypesChanged``, ``EntityTypesChanged``, ``CorrectionsApplied``). Long passes
write in batches (250 changes per event), each batch under the group's lock and re-checked
against the current graph first, so a concurrent write is never overwritten with a stale
decision. LLM calls (classification) happen with no lock held.

``progress`` callbacks receive ``CurationFrame``s (the reference's ``phase / processed /
total / total_mutations`` frames); the RPC layer forwards them as progress lines.

``relations`` holds the relation passes, ``entity_types`` the entity passes, ``corrections``
the corrections file; ``_common`` what they share.
"""

from __future__ import annotations

from lcg.ingest.curation._common import (
    CLASSIFY_BATCH,
    PROGRESS_EVERY,
    WRITE_BATCH,
    CurationFrame,
    Progress,
)
from lcg.ingest.curation.corrections import (
    CORRECTIONS_FILE,
    NO_ROOT_MESSAGE,
    ApplyCorrectionsResult,
    CorrectionDetail,
    ValidateCorrectionsResult,
    apply_corrections,
    corrections_path,
    validate_corrections,
)
from lcg.ingest.curation.entity_types import backfill_summary_embeddings, reprocess_entity_types
from lcg.ingest.curation.relations import (
    backfill_relation_types,
    backfill_type,
    canonicalize_relations,
    reprocess_relation_types,
)

__all__ = [
    "CLASSIFY_BATCH",
    "CORRECTIONS_FILE",
    "NO_ROOT_MESSAGE",
    "PROGRESS_EVERY",
    "WRITE_BATCH",
    "ApplyCorrectionsResult",
    "CorrectionDetail",
    "CurationFrame",
    "Progress",
    "ValidateCorrectionsResult",
    "apply_corrections",
    "backfill_relation_types",
    "backfill_summary_embeddings",
    "backfill_type",
    "canonicalize_relations",
    "corrections_path",
    "reprocess_entity_types",
    "reprocess_relation_types",
    "validate_corrections",
]
