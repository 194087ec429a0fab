"""``lcg verify``: replay the streams into scratch projections and compare digests.

For each group, the live projections' digests are taken at their applied seq; the stream is
then replayed up to that seq into a temporary graph, text and vector projection with the same
embedder (through the same cache), and the three digests must be equal. The projections are
held for reading while this runs, so nothing is applied in between.

Equal digests are not enough (ADR 0076): a group is not ok either when it is degraded (its
stream lost events, or disagrees with its generation sidecar) or when the replay skipped seqs
(a gap, a corrupt line): both are listed in ``problems``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import msgspec

from lcg.errors import GenerationError
from lcg.projections.graph import GraphProjection
from lcg.projections.projector import Projector
from lcg.projections.text import TextProjection
from lcg.projections.vectors import VectorProjection
from lcg.workspace.workspace import Workspace

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
    #: Damage found besides the digests (a degraded group, seqs the replay skipped).
    problems: list[str] = []


class VerifyReport(msgspec.Struct, kw_only=True):
    """The verdict of ``lcg verify``: ``ok`` when every group is equal and undamaged."""

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
                problems: list[str] = []
                degraded = ws.projector.degraded_reason(group_id)
                if degraded is not None:
                    problems.append(f"degraded: {degraded}")
                if applied is not None:
                    try:
                        result = projector.rebuild(group_id, to_seq=applied)
                    except GenerationError as exc:
                        problems.append(f"not replayed: {exc}")
                    else:
                        if not result.success:
                            problems.append(
                                f"the replay skipped {result.seqs_skipped} seq(s) "
                                f"{[list(r) for r in result.skipped_seqs[:10]]} "
                                f"(bad lines: {result.lines_skipped})"
                            )
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
                        problems=problems,
                    )
                )
        finally:
            graph.close()
            text.close()
            vectors.close()
    return VerifyReport(ok=all(v.equal and not v.problems for v in verdicts), groups=verdicts)
