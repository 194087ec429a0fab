"""Where a followed group stands against its publication: the status, its lag, the telemetry."""

from __future__ import annotations

import time
from typing import Literal

import msgspec

from lcg import telemetry, timestamps

__all__ = [
    "ReplicaApplied",
    "ReplicaResetDetected",
    "ReplicaState",
    "ReplicaStatus",
    "ReplicaStopped",
    "refresh_lag",
]

#: ``following``: applying as events land; ``stopped``: a defect holds the group (see reason).
ReplicaState = Literal["starting", "following", "stopped"]


class ReplicaStatus(msgspec.Struct, kw_only=True):
    """Where one followed group stands against its publication."""

    group_id: str
    source: str
    state: ReplicaState = "starting"
    reason: str | None = None
    applied_seq: int | None = None
    source_max_seq: int | None = None
    lag_events: int = 0
    #: Publisher time between the newest published event and the newest applied one.
    lag_seconds: float = 0.0
    #: The replica's wall clock when it last applied events.
    last_applied_at: str | None = None
    #: The ``ts`` of the newest applied event (publisher clock).
    last_event_ts: str | None = None
    generation: str | None = None
    source_generation: str | None = None
    reset_detected: bool = False
    previous_generation: str | None = None
    resets: int = 0
    events_applied: int = 0


class ReplicaApplied(telemetry.Record, tag="replica_applied"):
    """A follower applied a run of events to a group."""

    group_id: str
    first_seq: int
    last_seq: int
    events: int
    lag_events: int


class ReplicaResetDetected(telemetry.Record, tag="reset_detected"):
    """A follower saw a new generation and rebuilt the group from it."""

    group_id: str
    previous_generation: str | None
    generation: str


class ReplicaStopped(telemetry.Record, tag="replica_stopped"):
    """A follower stopped applying a group; ``reason`` says why and what to do."""

    group_id: str
    reason: str


def _parse_ts(ts: str | None) -> float | None:
    if not ts:
        return None
    try:
        return timestamps.parse(ts).timestamp()
    except ValueError:
        return None


def now() -> str:
    """The replica's wall clock, as ``last_applied_at`` records it (the one recorded format)."""
    return timestamps.now()


def refresh_lag(
    status: ReplicaStatus, source_max: int | None, source_ts: str | None, applied_seq: int | None
) -> None:
    """Set ``status``'s applied seq, the publication's last seq (and ``ts``) and the lag."""
    status.applied_seq = applied_seq
    status.source_max_seq = source_max
    applied = -1 if applied_seq is None else applied_seq
    if source_max is None or applied >= source_max:
        status.lag_events = 0
        status.lag_seconds = 0.0
        return
    status.lag_events = source_max - applied
    newest = _parse_ts(source_ts)
    done = _parse_ts(status.last_event_ts)
    if newest is not None and done is not None:
        status.lag_seconds = round(max(0.0, newest - done), 6)
    elif newest is not None:
        status.lag_seconds = round(max(0.0, time.time() - newest), 6)
