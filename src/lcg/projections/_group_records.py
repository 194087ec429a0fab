"""What the projector keeps per group beside its positions, each in a file of its own.

* ``DamageBook``: why a group is degraded (ADR 0076). ``skipped`` damage is kept in
  ``.lcg/damaged-groups.json`` across restarts (a later catch-up starts past the hole and would
  not see it), and ``foreign`` damage (ADR 0196) so that a workspace only inspected names it;
  ``behind`` and ``generation`` damage are re-derived at every open.
* ``FileRepairs``: the groups whose text or vector snapshot was found damaged on open, until
  a catch-up rebuilt that projection from the stream (then noted for status) or could not
  (then the group is degraded, ``projection`` damage, re-derived at every open; ADR 0155).
* ``ClearedFloors``: where ``knowledge_clear_all`` with ``preserve_wal`` left a group's
  projections — the stream's end then — so that a catch-up applies only later events
  (ADR 0100).

Without a path (a scratch projector, ``lcg verify``) both live in memory only.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from pathlib import Path
from typing import Final, Literal

import msgspec

from lcg import telemetry
from lcg.events import Position
from lcg.projections._group_file import GroupsFile, GroupSidecar, read_groups, write_groups

__all__ = [
    "ClearedFloor",
    "ClearedFloors",
    "DamageBook",
    "DamageKind",
    "FileRepairs",
    "GroupDamage",
]

DamageKind = Literal["behind", "generation", "skipped", "projection", "foreign"]
#: The kinds kept in the damage file across restarts.
_KEPT: Final[tuple[DamageKind, ...]] = ("skipped", "foreign")


class GroupDamage(msgspec.Struct, kw_only=True):
    """Why a group is degraded: what its stream lost, and what the operator can do."""

    kind: DamageKind
    #: The whole message, remedy included (shown by health, status and refused writes).
    reason: str


class ClearedFloor(msgspec.Struct, kw_only=True):
    """A group whose projections were cleared with its stream kept: the stream's end then."""

    through_seq: int
    generation: str | None = None


#: ``.lcg/damaged-groups.json``: the ``skipped`` damage of each group.
_damage_decoder = msgspec.json.Decoder(GroupsFile[GroupDamage])
#: ``<db_dir>/cleared.json``: the cleared floor of each group (ADR 0100).
_cleared_decoder = msgspec.json.Decoder(GroupsFile[ClearedFloor])


class DamageBook:
    """The degraded groups and why; writes to them are refused (``Workspace.commit``)."""

    def __init__(self, path: Path | None) -> None:
        #: Where ``skipped`` damage is kept across restarts (``None``: in memory only).
        self.path = path
        self.groups: dict[str, GroupDamage] = read_groups(
            path,
            _damage_decoder,
            "delete it and rebuild the groups whose streams are damaged "
            "(`lcg replay --group G --force-clear`), which finds the damage again",
        )

    def reason(self, group_id: str) -> str | None:
        """Why ``group_id`` is degraded, or ``None`` when it is not."""
        damage = self.groups.get(group_id)
        return None if damage is None else damage.reason

    def set(self, group_id: str, kind: DamageKind, reason: str) -> None:
        """Degrade ``group_id``; the service says so once per new reason."""
        previous = self.groups.get(group_id)
        self.groups[group_id] = GroupDamage(kind=kind, reason=reason)
        if kind in _KEPT or (previous is not None and previous.kind in _KEPT):
            self._save()
        # Only a workspace's own projector (it keeps a damage file) speaks for the service;
        # a scratch replay (``lcg verify``) reports through its result.
        if self.path is not None and (previous is None or previous.reason != reason):
            telemetry.emit(telemetry.ServiceState(state="degraded", reason=reason))

    def clear(self, group_id: str, kinds: tuple[DamageKind, ...]) -> None:
        """Heal ``group_id`` if its damage is of one of ``kinds``."""
        damage = self.groups.get(group_id)
        if damage is not None and damage.kind in kinds:
            del self.groups[group_id]
            if damage.kind in _KEPT:
                self._save()

    def forget(self) -> None:
        """Drop every group's damage."""
        self.groups.clear()
        self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        kept = {g: d for g, d in sorted(self.groups.items()) if d.kind in _KEPT}
        if not kept and not self.path.exists():
            return
        # Kept as an empty file once written (not deleted, as the other sidecars are).
        write_groups(self.path, kept)


class FileRepairs:
    """Projection files found damaged on open, and what became of them (ADR 0155).

    A damaged snapshot's group is not loaded, so that projection has no position and a
    catch-up rebuilds it from the stream. ``settle`` then looks: caught up with the graph, it
    is noted as rebuilt; still short of it (no stream to rebuild from, a workspace only
    inspected), the group is degraded with the path and the remedy. A vector projection that
    waits for the embedder stays pending, as any vectors lagging the embedder do.
    """

    def __init__(self, damage: DamageBook) -> None:
        self._damage = damage
        #: group → projection name → the damaged file and its fault, until settled.
        self.pending: dict[str, dict[str, str]] = {}
        #: group → what was found damaged and is rebuilt (for status).
        self.rebuilt: dict[str, list[str]] = {}

    def note(self, name: str, damaged: Mapping[str, str]) -> None:
        """Record the damaged snapshots ``name``'s projection found on open."""
        for group_id, problem in damaged.items():
            self.pending.setdefault(group_id, {})[name] = problem

    def forget(self, group_id: str | None = None) -> None:
        """Drop what is known of ``group_id``'s files (of every group if ``None``): its
        projections were emptied on purpose (``clear_all``), nothing is left to rebuild."""
        for book in (self.pending, self.rebuilt):
            if group_id is None:
                book.clear()
            else:
                book.pop(group_id, None)

    def notes(self, group_id: str) -> list[str]:
        """What status says of ``group_id``'s damaged files: rebuilt, or waiting."""
        waiting = [
            f"{problem}; not yet rebuilt" for problem in self.pending.get(group_id, {}).values()
        ]
        return [*self.rebuilt.get(group_id, []), *waiting]

    def settle(
        self,
        group_id: str,
        positions: Mapping[str, Position],
        *,
        attempted: bool = True,
        embedder_down: bool = False,
        record: str = "graph",
        embedding: Set[str] = frozenset({"vectors"}),
    ) -> None:
        """Judge ``group_id``'s pending projections after a catch-up (``attempted``) or not:
        each is rebuilt once it stands where the projection of record (``record``) does;
        those that embed (``embedding``) wait while the embedder is down."""
        pending = self.pending.get(group_id)
        if not pending:
            return
        standard = positions[record]
        for name in list(pending) if attempted else ():
            pos = positions[name]
            if pos.generation == standard.generation and not pos.behind(standard):
                done = f"{pending.pop(name)}; its {name} projection was rebuilt from the stream"
                if pos.seq is not None:
                    done += f" through seq {pos.seq}"
                self.rebuilt.setdefault(group_id, []).append(done)
                telemetry.emit(
                    telemetry.ServiceNotice(
                        kind="projection_rebuilt", reason=f"group {group_id!r}: {done}"
                    )
                )
        if not pending:
            del self.pending[group_id]
            self._damage.clear(group_id, ("projection",))
            return
        if set(pending) <= embedding and embedder_down:
            return  # rebuilt once the embedder answers, as any lagging vectors
        current = self._damage.groups.get(group_id)
        if current is not None and current.kind != "projection":
            return  # its stream's damage comes first; its remedy rebuilds these too
        found = "; ".join(pending.values())
        remedy = f"`lcg replay --group {group_id} --force-clear`"
        if attempted:
            why = (
                "it could not be rebuilt from the group's stream, so the group's searches miss "
                f"what its graph holds; restore the stream, or rebuild the group with {remedy}"
            )
        else:
            why = (
                "it is not served until rebuilt from the stream: `lcg serve` does so when it "
                f"opens the workspace, or run {remedy}"
            )
        self._damage.set(group_id, "projection", f"group {group_id!r}: {found}; {why}")


class ClearedFloors(GroupSidecar[ClearedFloor]):
    """The groups cleared with their streams kept, and the stream's end at the clear."""

    def __init__(self, path: Path | None) -> None:
        super().__init__(
            path,
            _cleared_decoder,
            "delete it (the next catch-up then restores every event a clear_all had cleared) "
            "or rebuild the groups",
        )

    def get(self, group_id: str) -> ClearedFloor | None:
        """The floor of ``group_id``, if it was cleared."""
        return self.groups.get(group_id)

    def record(self, floors: dict[str, ClearedFloor | None]) -> None:
        """Set (or, for ``None``, drop) the floors of these groups, then save once."""
        for group_id, floor in floors.items():
            if floor is None:
                self.groups.pop(group_id, None)
            else:
                self.groups[group_id] = floor
        self._save()
