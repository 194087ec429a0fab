"""Telemetry: one JSON object per line on stderr, ``{"type", "ts_ms", ...}``.

Each kind of record is a msgspec ``Struct`` tagged by ``type``; ``emit`` stamps ``ts_ms``.
Set ``LCG_TELEMETRY=off`` (read by ``config``) or call ``set_sink(None)`` to silence it.
This module imports nothing of lcg's.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO, Literal

import msgspec

__all__ = [
    "AutoRecoveryPhase",
    "ChunkTextOversized",
    "IoFault",
    "IpcCall",
    "Record",
    "ServiceNotice",
    "ServiceState",
    "ServiceStateName",
    "TokenUsage",
    "WalAutoRecovery",
    "WalReplayComplete",
    "WalRotated",
    "emit",
    "set_sink",
]


class Record(msgspec.Struct, kw_only=True, tag_field="type"):
    """Base of every telemetry record; ``ts_ms`` is stamped by ``emit``."""

    ts_ms: int = 0


class WalRotated(Record, tag="wal_rotated"):
    """A stream writer closed a file and opened the next."""

    from_file_seq: int
    to_file_seq: int
    closed_bytes: int
    closed_events: int


class WalReplayComplete(Record, tag="wal_replay_complete"):
    """A replay of one group's stream finished. Like every record here it names no group:
    the reference documents telemetry as scoped to the process (ADR 0213)."""

    mutations_replayed: int
    unrecognised_lines: int
    failed_lines: int
    unparseable_lines: int
    legacy_skipped_lines: int
    duration_ms: int


#: The phases the reference documents for ``wal_auto_recovery``, in the order they come.
AutoRecoveryPhase = Literal[
    "corruption_detected",
    "checkpoint_drop_complete",
    "cursor_derived",
    "replay_complete",
    "index_build_complete",
    "recovery_complete",
    "fallback_triggered",
]


class WalAutoRecovery(Record, tag="wal_auto_recovery", omit_defaults=True):
    """A phase of self-healing; every field but ``phase`` is absent where the phase has
    none. A run ends in ``recovery_complete`` (healed) or ``fallback_triggered`` (a person
    must act, ``fallback_reason`` says why)."""

    phase: AutoRecoveryPhase
    from_seq: int | None = None
    cursor_reason: str | None = None
    mutations_replayed: int | None = None
    elapsed_ms: int | None = None
    fallback_reason: str | None = None


class IpcCall(Record, tag="ipc_call"):
    """One JSON-RPC call was answered; ``duration_ms`` in whole milliseconds, as the
    reference writes it (typed consumers read an integer)."""

    method: str
    request_id: str | int | None
    duration_ms: int
    success: bool


#: The states the reference documents for ``service_state``; nothing else is written there.
ServiceStateName = Literal["degraded", "healthy", "shutting_down", "stopped"]


class ServiceState(Record, tag="service_state", omit_defaults=True):
    """The service changed state; ``reason`` and ``detail`` are absent, not null, when
    there is none (as the reference writes them)."""

    state: ServiceStateName
    reason: str | None = None
    detail: dict[str, int] | None = None


class ServiceNotice(Record, tag="service_notice"):
    """Something a person watching the log should know that is not one of the documented
    service states: the service is opening (``initializing``), a group's projection was
    rebuilt, a publisher's reset was detected. An addition of lcg's: consumers that switch on
    ``type`` never meet it in ``service_state``."""

    kind: str
    reason: str | None = None


class IoFault(Record, tag="io_fault"):
    """A write to disk started failing (``reason``) or works again (``reason`` null)."""

    component: str
    reason: str | None = None


class ChunkTextOversized(Record, tag="chunk_text_oversized"):
    """A chunk longer than ``LCG_CHUNK_TEXT_ADVISORY_MAX_CHARS`` was stored whole."""

    chunk_id: str
    source_file: str
    chunk_text_chars: int
    threshold_chars: int


class TokenUsage(Record, tag="token_usage"):
    """Tokens spent by one LLM call."""

    role: str
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    estimated_cost_usd: float | None = None


_encoder = msgspec.json.Encoder()
_lock = threading.Lock()
_enabled = True
_calls = True
_sink: IO[bytes] | None = None


def set_sink(sink: IO[bytes] | None, *, enabled: bool = True, calls: bool = True) -> None:
    """Send telemetry to ``sink`` (a binary stream; ``None`` = the current stderr), or nowhere;
    ``calls=False`` leaves out the per-request ``ipc_call`` records."""
    global _sink, _enabled, _calls
    _sink = sink
    _enabled = enabled
    _calls = calls


def _current_sink() -> IO[bytes] | None:
    if _sink is not None:
        return _sink
    return getattr(sys.stderr, "buffer", None)


def emit(record: Record) -> None:
    """Write ``record`` as one JSON line, stamping ``ts_ms`` with the current time."""
    if not _enabled or (not _calls and isinstance(record, IpcCall)):
        return
    sink = _current_sink()
    if sink is None:
        return
    record.ts_ms = int(time.time() * 1000)
    line = _encoder.encode(record) + b"\n"
    with _lock:
        try:
            sink.write(line)
            sink.flush()
        except (OSError, ValueError):
            # Telemetry must never take the engine down (a closed stderr, a full pipe).
            pass
