"""Why a group's stream and its projections cannot go on together: each check and its reason.

The projector degrades a group (``DamageBook``) with one of these reasons, remedy included:

* ``generation_split``: the generation sidecar and the stream's lines name different
  generations (a reset is detected only when both agree; this is never purged);
* ``lost_tail``: a projection has applied a seq the stream no longer holds, so the writer
  would hand out seqs the projections take as applied (ADR 0076);
* ``foreign_rows``: an event of the stream names a row another group holds, or another
  group: the group is stopped before it, and the other group is untouched (ADR 0196);
* ``unknown_generation``: the projections hold a position but the stream names no
  generation (a rebuild and a catch-up refuse it).
"""

from __future__ import annotations

from lcg.events import GENERATION_FILE, Position, WalStore, stream_generation
from lcg.projections.base import ForeignRowError, Projections

__all__ = ["foreign_rows", "generation_split", "lost_tail", "unknown_generation"]


def generation_split(store: WalStore, projections: Projections, group_id: str) -> str | None:
    """The reason, if the sidecar and the lines name different generations."""
    gdir = store.group_dir(group_id)
    witnesses = stream_generation(gdir)
    if not witnesses.split:
        return None
    sidecar, lines = witnesses.sidecar, witnesses.lines
    held = {gen for p in projections if (gen := p.position(group_id).generation)}
    kept = ", ".join(sorted(held)) or "none"
    return (
        f"group {group_id!r}: {gdir / GENERATION_FILE} names generation {sidecar!r} but "
        f"the stream's lines carry {lines!r}; the projections (generation {kept}) are kept "
        "as they are and served, and writes are refused. Restore the sidecar from the "
        "stream's publication, or delete it (the next writer restores it from the lines), "
        "then restart lcg"
    )


def lost_tail(
    store: WalStore, projections: Projections, group_id: str, generation: str
) -> str | None:
    """The reason, if a projection has applied a seq past the end of the stream."""
    max_seq = store.bounds(group_id).max_seq
    end = Position(group_id=group_id, generation=generation, seq=max_seq)
    for proj in projections:
        name = proj.name
        pos = proj.position(group_id)
        # A position of another generation is not past this stream: it is reset.
        if pos.generation == generation and end.behind(pos):
            lost = pos.next_seq(generation) - end.next_seq(generation)
            stream_end = "holds no event" if max_seq is None else f"ends at seq {max_seq}"
            return (
                f"group {group_id!r}: the stream {stream_end} but the {name} projection "
                f"has applied seq {pos.seq}; the stream lost its last {lost} event(s) (a "
                "torn line quarantined, power loss under LCG_WAL_FSYNC=batch|off, or an "
                "older copy restored). New writes would reuse those seqs, so they are "
                f"refused: rebuild from what the stream holds with `lcg replay --group "
                f"{group_id} --force-clear`, or restore the stream's lost tail"
            )
    return None


def foreign_rows(store: WalStore, refusal: ForeignRowError) -> str:
    """The reason of a group stopped at an event that reaches another group's rows."""
    g = refusal.group_id
    return (
        f"{refusal}. Group {g!r} is stopped before seq {refusal.seq}: nothing of it from there "
        f"on is applied and its writes are refused; group {refusal.owner!r} is untouched. "
        f"Replace its stream ({store.group_dir(g)}), or replay it without the events that "
        f"reach other groups' rows with `lcg replay --group {g} --force-clear --accept-loss` "
        "(then `knowledge_delete_by_group` removes it if it is not wanted)"
    )


def unknown_generation(store: WalStore, group_id: str) -> str:
    """The reason a group whose projections hold a position has no known generation."""
    path = store.group_dir(group_id) / GENERATION_FILE
    return (
        f'group "{group_id}": {path} is absent or unreadable and no line names a generation, '
        f"but the projections hold a recorded position; restore the stream's "
        f"{GENERATION_FILE} from its publication, or delete the group's projections "
        "(knowledge_delete_by_group) and rebuild"
    )
