"""The reference's ``wal_auto_recovery`` phases, emitted by the healing lcg already does
(ADR 0213).

Two paths heal without a person choosing how:

* **on open** — a projection snapshot found damaged is set aside (not loaded) and the
  catch-up rebuilds it from the group's stream (ADR 0155): ``StartupHealing``;
* **from degraded** — ``knowledge_recover_full`` (or ``knowledge_recover`` with
  ``rebuild_from_workspace_wal``) on a service whose workspace did not open removes every
  projection and replays every stream: ``RecoveryTrace`` driven by ``ServiceApp.recover``.

Both step through the documented phases: ``corruption_detected`` → ``checkpoint_drop_complete``
(the damaged projection is set aside) → ``cursor_derived`` (``from_seq`` 0: the projection is
rebuilt from the stream's start; ``cursor_reason`` says why) → ``replay_complete`` →
``index_build_complete`` → ``recovery_complete``, or ``fallback_triggered`` with the reason a
person must act.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from lcg import telemetry
from lcg.projections import Projector, ReplayResult

__all__ = [
    "CURSOR_DAMAGED_SNAPSHOT",
    "CURSOR_FULL_REBUILD",
    "RecoveryTrace",
    "StartupHealing",
]

#: ``cursor_reason`` on open: a damaged snapshot's projection has no position.
CURSOR_DAMAGED_SNAPSHOT = "damaged_snapshot_rebuilt_from_stream_start"
#: ``cursor_reason`` of a full rebuild: every projection was removed.
CURSOR_FULL_REBUILD = "projections_removed_replay_from_stream_start"


class RecoveryTrace:
    """Emits one healing run's phases; ``elapsed_ms`` is the time since the previous phase
    (since the start for the first, and the whole run for the last)."""

    def __init__(self) -> None:
        self._start = self._last = time.monotonic()

    def _elapsed(self, *, whole: bool = False) -> int:
        now = time.monotonic()
        since = self._start if whole else self._last
        self._last = now
        return int((now - since) * 1000)

    def detected(self) -> None:
        """Damage was found (a damaged snapshot, a workspace that did not open)."""
        telemetry.emit(
            telemetry.WalAutoRecovery(phase="corruption_detected", elapsed_ms=self._elapsed())
        )

    def dropped(self, cursor_reason: str = CURSOR_FULL_REBUILD) -> None:
        """The damaged projections are gone; the cursor is the stream's start."""
        telemetry.emit(
            telemetry.WalAutoRecovery(phase="checkpoint_drop_complete", elapsed_ms=self._elapsed())
        )
        telemetry.emit(
            telemetry.WalAutoRecovery(
                phase="cursor_derived", from_seq=0, cursor_reason=cursor_reason
            )
        )

    def replayed(self, mutations: int) -> None:
        """The streams were replayed into the projections."""
        telemetry.emit(
            telemetry.WalAutoRecovery(
                phase="replay_complete",
                from_seq=0,
                mutations_replayed=mutations,
                elapsed_ms=self._elapsed(),
            )
        )

    def indexed(self) -> None:
        """The search indices (text, vectors) stand where the graph does."""
        telemetry.emit(
            telemetry.WalAutoRecovery(phase="index_build_complete", elapsed_ms=self._elapsed())
        )

    def healed(self, mutations: int) -> None:
        """The run ended well: the service healed itself."""
        telemetry.emit(
            telemetry.WalAutoRecovery(
                phase="recovery_complete",
                mutations_replayed=mutations,
                elapsed_ms=self._elapsed(whole=True),
            )
        )

    def gave_up(self, reason: str) -> None:
        """The run ended badly: a person must act (``reason`` says what)."""
        telemetry.emit(
            telemetry.WalAutoRecovery(
                phase="fallback_triggered",
                fallback_reason=reason,
                elapsed_ms=self._elapsed(whole=True),
            )
        )


class StartupHealing:
    """The phases of rebuilding the snapshots a projector found damaged on open."""

    def __init__(self, groups: list[str]) -> None:
        self.groups = groups
        self.trace = RecoveryTrace()

    @classmethod
    def begin(cls, projector: Projector) -> StartupHealing | None:
        """Start a run if ``projector`` found damaged snapshots on open (else ``None``)."""
        groups = sorted(projector.file_repairs.pending)
        if not groups:
            return None
        healing = cls(groups)
        healing.trace.detected()
        # Set aside already: a damaged snapshot is never loaded (ADR 0155).
        healing.trace.dropped(CURSOR_DAMAGED_SNAPSHOT)
        return healing

    def end(self, projector: Projector, results: Mapping[str, ReplayResult]) -> None:
        """After the catch-up: healed, gave up (a group left degraded), or still waiting
        (for the embedder, or for room on disk: no final phase until the next open)."""
        mutations = sum(r.mutations_replayed for g, r in results.items() if g in self.groups)
        self.trace.replayed(mutations)
        still = [g for g in self.groups if g in projector.file_repairs.pending]
        damage = projector.damage
        given_up = [damage[g].reason for g in still if g in damage]
        if given_up:
            self.trace.gave_up("; ".join(given_up))
        elif not still:
            self.trace.indexed()
            self.trace.healed(mutations)

    def fail(self, exc: BaseException) -> None:
        """The catch-up itself failed."""
        self.trace.gave_up(str(exc) or type(exc).__name__)
