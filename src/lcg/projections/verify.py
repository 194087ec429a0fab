"""``lcg verify``: replay the streams into scratch projections and compare digests.

For each group, the live projections' digests are taken at their applied seq; the stream is
then replayed up to that seq into a temporary graph, text and vector projection with the same
embedder (through the same cache), and the three digests must be equal. The projections are
held for reading while this runs, so nothing is applied in between.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import msgspec

from lcg.projections.graph import GraphProjection
from lcg.projections.projector import Projector
from lcg.projections.text import TextProjection
from lcg.projections.vectors import VectorProjection
from lcg.projections.workspace import Workspace

__all__ = ["GroupVerdict", "VerifyReport", "verify_workspace"]


class GroupVerdict(msgspec.Struct, kw_only=True):
    """One group's live and replayed digests."""

    group_id: str
    applied_seq: int | None
    live: dict[str, str]
    replayed: dict[str, str]
    equal: bool
    differing: list[str] = []
    note: str | None = None


class VerifyReport(msgspec.Struct, kw_only=True):
    """The verdict of ``lcg verify``: ``ok`` when every group's digests are equal."""

    ok: bool
    groups: list[GroupVerdict]


def verify_workspace(ws: Workspace, groups: list[str] | None = None) -> VerifyReport:
    """Compare every group's live digests with a fresh replay of its stream."""
    chosen = groups if groups is not None else ws.store.groups()
    verdicts: list[GroupVerdict] = []
    with ws.reading(), tempfile.TemporaryDirectory(prefix="lcg-verify-") as tmp:
        root = Path(tmp)
        graph = GraphProjection(root / "db")
        text = TextProjection(root / "text")
        vectors = VectorProjection(root / "vectors", ws.embedder.dim, ws.embedder.model_id)
        projector = Projector(
            ws.store,
            graph,
            text,
            vectors,
            ws.text_embedder,
            batch_size=max(64, ws.config.replay_batch_size),
        )
        try:
            for group_id in chosen:
                positions = ws.projector.positions(group_id)
                seqs = {name: pos[0] for name, pos in positions.items()}
                applied = ws.projector.applied_seq(group_id)
                live = {
                    "graph": ws.graph.digest(group_id),
                    "text": ws.text.digest(group_id),
                    "vectors": ws.vectors.digest(group_id),
                }
                note = None
                if len(set(seqs.values())) > 1:
                    note = f"projections stand at different seqs {seqs}; compared at each"
                replayed: dict[str, str] = {}
                if applied is not None:
                    projector.rebuild(group_id, to_seq=applied)
                replayed = {
                    "graph": graph.digest(group_id),
                    "text": text.digest(group_id),
                    "vectors": vectors.digest(group_id),
                }
                differing = [k for k in live if live[k] != replayed[k]]
                verdicts.append(
                    GroupVerdict(
                        group_id=group_id,
                        applied_seq=applied,
                        live=live,
                        replayed=replayed,
                        equal=not differing,
                        differing=differing,
                        note=note,
                    )
                )
        finally:
            graph.close()
            text.close()
            vectors.close()
    return VerifyReport(ok=all(v.equal for v in verdicts), groups=verdicts)
