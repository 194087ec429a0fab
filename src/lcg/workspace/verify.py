"""``lcg verify``: replay the streams into scratch projections and compare digests.

For each group, the live projections' digests are taken at their applied seqs; the stream is
then replayed into a temporary graph, text and vector projection with the same embedder
(through the same cache), stopping at each seq a live projection stands at, and each live
digest must equal the replay's at that projection's own seq. The projections are held for
reading while this runs, so nothing is applied in between.

After a crash the projections can stand at different seqs (the graph commits every apply,
the text and vector snapshots are saved later) and behind their stream: that is a lag, not a
divergence. Such a group is ``behind`` (what ``lcg status`` calls ``wal_ahead``), named with
its remedy and not ok; ``differing`` is kept for projections that disagree with their
stream at their own seq.

Equal digests are not enough (ADR 0076): a group is not ok either when it is degraded (its
stream lost events, or disagrees with its generation sidecar) or when the replay skipped seqs
(a gap, a corrupt line): both are listed in ``problems``.

Each group is replayed alone: the scratch projections drop it once it is judged, so no
group's replay meets another's rows. A group stopped at an event that reaches another group's
rows (ADR 0196) is degraded, compared where it stopped, and not ``behind``: the events past
the stop are refused, not waiting to be applied.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import msgspec

from lcg.errors import GenerationError
from lcg.projections import Projections, Projector
from lcg.workspace.factory import OpenContext, open_projections
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
    #: Each projection's applied seq (``None``: nothing applied), each compared at its own.
    seqs: dict[str, int | None] = {}
    #: The stream's last seq; past ``applied_seq`` the group is ``behind``.
    max_seq: int | None = None
    #: The projections lag the stream (a service died before applying): not ok, not damage.
    behind: bool = False


class VerifyReport(msgspec.Struct, kw_only=True):
    """The verdict of ``lcg verify``: ``ok`` when every group is equal, undamaged and caught
    up with its stream."""

    ok: bool
    groups: list[GroupVerdict]


def verify_workspace(ws: Workspace, groups: list[str] | None = None) -> VerifyReport:
    """Compare every group's live digests with a fresh replay of its stream."""
    chosen = groups if groups is not None else ws.store.groups()
    verdicts: list[GroupVerdict] = []
    with ws.reading(), tempfile.TemporaryDirectory(prefix="lcg-verify-") as tmp:
        root = Path(tmp)
        # The same projections as the workspace's, by the same builder, in scratch.
        scratch = open_projections(
            lambda spec: root / spec.name,
            OpenContext(
                dim=ws.embedder.dim,
                model_id=ws.embedder.model_id,
                read_only=False,
                scratch=lambda name: root / "scratch" / name,
            ),
        )
        projector = Projector(
            ws.store, scratch, ws.text_embedder, batch_size=max(64, ws.config.replay_batch_size)
        )
        try:
            for group_id in chosen:
                verdicts.append(_verdict(ws, projector, scratch, group_id))
                scratch.purge_group(group_id)
        finally:
            for proj in scratch:
                proj.close()
    return VerifyReport(
        ok=all(v.equal and not v.problems and not v.behind for v in verdicts), groups=verdicts
    )


def _verdict(
    ws: Workspace, projector: Projector, scratch: Projections, group_id: str
) -> GroupVerdict:
    """Replay ``group_id`` into the scratch projections, comparing each live projection at
    the seq it stands at."""
    seqs = {name: pos.seq for name, pos in ws.projector.positions(group_id).items()}
    applied = ws.projector.applied_seq(group_id)
    live = ws.projections.digests(group_id)
    note = None
    if len(set(seqs.values())) > 1:
        note = f"projections stand at different seqs {seqs}; compared at each"
    problems: list[str] = []
    degraded = ws.projector.degraded_reason(group_id)
    if degraded is not None:
        problems.append(f"degraded: {degraded}")
    # A projection that applied nothing is compared with the replay of nothing.
    replayed = {
        name: scratch.named(name).digest(group_id) for name, seq in seqs.items() if seq is None
    }
    done: int | None = None
    for stop in sorted({seq for seq in seqs.values() if seq is not None}):
        try:
            result = projector.rebuild(
                group_id, from_seq=0 if done is None else done + 1, to_seq=stop
            )
        except GenerationError as exc:
            problems.append(f"not replayed: {exc}")
            break
        stopped = projector.refusal(group_id)  # the scratch replay's own verdict
        if stopped is not None:
            problems.append(f"the replay stops: {stopped}")
        elif not result.success:
            problems.append(
                f"the replay skipped {result.seqs_skipped} seq(s) "
                f"{[list(r) for r in result.skipped_seqs[:10]]} "
                f"(bad lines: {result.lines_skipped})"
            )
        done = stop
        replayed.update(
            {
                name: scratch.named(name).digest(group_id)
                for name, seq in seqs.items()
                if seq == stop
            }
        )
    for name in live:
        replayed.setdefault(name, scratch.named(name).digest(group_id))  # not replayed: its failure
    differing = [k for k in live if live[k] != replayed[k]]
    max_seq = ws.store.bounds(group_id).max_seq
    # Events up to a clear_all floor are left unapplied on purpose (ADR 0100): no lag.
    floors = [s for s in (applied, ws.projector.cleared_through(group_id)) if s is not None]
    damage = ws.projector.damage.get(group_id)
    refused = damage is not None and damage.kind == "foreign"
    behind = not refused and max_seq is not None and (not floors or max(floors) < max_seq)
    return GroupVerdict(
        group_id=group_id,
        applied_seq=applied,
        live=live,
        replayed=replayed,
        equal=not differing,
        differing=differing,
        note=note,
        problems=problems,
        seqs=seqs,
        max_seq=max_seq,
        behind=behind,
    )
