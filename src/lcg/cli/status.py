"""``lcg status``: per-group positions, generations, hydration and counts."""

from __future__ import annotations

import argparse
from typing import Any

import msgspec

from lcg.cli._common import config_from, emit_json, format_table
from lcg.cli._holder import claim
from lcg.cli._service import open_direct
from lcg.cli._terminal import safe
from lcg.client import Client

__all__ = ["register"]

_HELP = """Show the workspace: per group the stream's max seq, each projection's applied seq,
the generation and its status, hydration status, counts and pending extractions.
Exits 1 when the workspace is not healthy: degraded, a stream ahead of its projections, a
damaged group (its stream lost events, or disagrees with its generation sidecar), vectors
built by another embedder than the configured one, or a failing part of the serving process
(the watcher of a self-serving lcg watch) - the reason and the remedy are printed.

Example:
  lcg status
  lcg status --json | jq .wal_groups
"""


def _fetch(args: argparse.Namespace) -> dict[str, Any]:
    """The status from the workspace's service; with none, from its files, looked at here.

    A holder that does not answer yet (starting, catching up) is waited for (ADR 0199)."""
    config = config_from(args, existing=True)
    got = claim(config, "status", take=lambda: open_direct(config, inspect=True))
    if isinstance(got, Client):
        with got:
            result = got.call("knowledge_status", {})
        result["served_by"] = "service"
        return dict(result)
    from lcg.workspace import build_status

    with got as ws:  # a status only looks
        data = msgspec.to_builtins(build_status(ws))
    data["served_by"] = "direct"
    return dict(data)


def _run(args: argparse.Namespace) -> int:
    data = _fetch(args)
    if args.json:
        emit_json(data, indent=2)
    else:
        _print_table(data)
    groups = data.get("wal_groups", {}).values()
    healthy = data.get("queryable", False) and all(
        g.get("hydration_status") in ("hydrated", "not_applicable") or _draining(data, g)
        for g in groups
    )
    healthy = healthy and not any(g.get("degraded_reason") for g in groups)
    # The reference calls a one-event stream "not_applicable" whether or not it is applied;
    # lcg's own exit status reads the projections (a stream that came while no service ran).
    healthy = healthy and not any(_unapplied(g) and not _draining(data, g) for g in groups)
    # A replica's group that its follower stopped (a defect or an unsafe file in the
    # publication) is no longer kept current: the other groups are (ADR 0154).
    healthy = healthy and not any(_replica_stopped(g) for g in groups)
    # Vectors built by another embedder than the configured one: vector search is not served
    # as configured until the group is re-embedded (or the embedder configured back).
    healthy = healthy and not any(g.get("embedding_model_status") == "mismatch" for g in groups)
    # A background part of the serving process that fails (a watcher, ADR 0193).
    healthy = healthy and not data.get("problems")
    return 0 if healthy else 1


def _say(text: str) -> None:
    """Print one line whose values came from the service (their controls escaped)."""
    print(safe(text))


def _print_table(data: dict[str, Any]) -> None:
    # An open workspace whose service is degraded is not queryable for writes (ADR 0214),
    # but it has a table to show: only a closed one has nothing else to say.
    if not data.get("connected"):
        _say(f"degraded: {data.get('reason')}")
        return
    _say(
        f"workspace: {data['entity_count']} entities, {data['relationship_count']} relationships, "
        f"{data['episode_count']} episodes ({data.get('pending_episodes', 0)} pending extraction)"
    )
    _say(f"embedder:  {data['embedding_model']} ({data['embedding_dim']}-d)  [{data['served_by']}]")
    rows = [
        (
            gid,
            _n(g["max_seq"]),
            _n(g["applied_seq"]),
            g["hydration_status"],
            f"{g['generation'] or '-'} ({g['generation_status']})",
            g["embedding_model_status"],
        )
        for gid, g in data.get("wal_groups", {}).items()
    ]
    headers = ["GROUP", "MAX_SEQ", "APPLIED", "HYDRATION", "GENERATION", "MODEL"]
    print(format_table(headers, rows))
    said: list[str] = list(data.get("problems", []))
    for problem in data.get("problems", []):
        _say(f"degraded: {problem}")
    for g in data.get("wal_groups", {}).values():
        if g.get("degraded_reason"):
            said.append(g["degraded_reason"])
            _say(f"degraded: {g['degraded_reason']}")
        for note in g.get("projection_repairs", []):  # damaged snapshots found on open
            _say(f"snapshot: {note}")
        if g.get("reference_stream"):  # another writer's stream, not replayed (ADR 0212)
            _say(f"reference stream: {g['reference_stream']['note']}")
    # The service's own faults (an I/O fault, an away embedder) that no line above names.
    if data.get("degraded") and not any(line in str(data.get("reason")) for line in said):
        _say(f"degraded: {data.get('reason')}")
    _print_remedies(data)


def _draining(data: dict[str, Any], group: dict[str, Any]) -> bool:
    """Whether only the group's vectors lag its stream, and the running service is making them
    (text first, ADR 0201): its words are searchable, nothing is wrong."""
    if data.get("served_by") != "service" or not group.get("vectors_pending"):
        return False
    max_seq = group.get("max_seq")
    positions = group.get("projections") or {}
    others = [seq for name, seq in positions.items() if name != "vectors"]
    return max_seq is not None and all(seq is not None and seq >= max_seq for seq in others)


def _replica_stopped(group: dict[str, Any]) -> bool:
    replica = group.get("replica")
    return isinstance(replica, dict) and replica.get("state") == "stopped"


def _print_remedies(data: dict[str, Any]) -> None:
    """What to do about groups whose vectors are another embedder's, or that lag their stream."""
    configured = f"{data['embedding_model']} ({data['embedding_dim']}-d)"
    for gid, g in data.get("wal_groups", {}).items():
        if _replica_stopped(g):
            _say(f"replica stopped: group {gid!r}: {g['replica'].get('reason')}")
        if g.get("embedding_model_status") == "mismatch":
            built = (
                f"{g['embedding_model']} ({g['embedding_dim']}-d)"
                if g.get("embedding_model")
                else "another embedder"
            )
            _say(
                f"mismatch: the vectors of group {gid!r} were built with {built}, the configured "
                f"embedder is {configured}: configure {built} again (LCG_EMBEDDER, "
                "LCG_EMBEDDING_DIM), or re-embed the group with "
                f"`lcg replay --group {gid} --force-clear`"
            )
        elif g.get("cleared_through_seq") is not None:
            _say(
                f"cleared: group {gid!r} was cleared by knowledge_clear_all through seq "
                f"{g['cleared_through_seq']} (its stream is kept; later events are applied); "
                f"`lcg replay --group {gid} --force-clear` restores it from the stream"
            )
        elif _draining(data, g):
            rate = data.get("vectors_per_s") or 0
            _say(
                f"vectors: group {gid!r} has {g['vectors_pending']:,} chunks whose vectors the "
                f"service is making in the background ({rate:g}/s); they are searchable by their "
                "words meanwhile"
            )
        elif g.get("hydration_status") != "wal_ahead" and _unapplied(g):
            _say(
                f"not applied: group {gid!r} holds {g['max_seq'] + 1} event(s) in its stream "
                "that its projections have not applied (it came while no service ran); "
                f"`lcg serve` applies them when it starts, or `lcg replay --group {gid} "
                "--force-clear` rebuilds the group"
            )
        elif g.get("hydration_status") == "wal_ahead":
            _say(
                f"behind: group {gid!r} is applied to seq {_n(g['applied_seq'])} of "
                f"{_n(g['max_seq'])}; `lcg serve` applies the rest when it starts, or "
                f"`lcg replay --group {gid} --force-clear` rebuilds the group"
            )


def _unapplied(group: dict[str, Any]) -> bool:
    """Whether the group's stream holds events past what every projection applied (a
    clear_all floor counts as applied), as ``lcg verify`` judges ``behind``."""
    if group.get("max_seq") is None:
        return False
    positions = list((group.get("projections") or {}).values())
    applied = None if not positions or None in positions else min(positions)
    floors = [s for s in (applied, group.get("cleared_through_seq")) if s is not None]
    return not floors or max(floors) < group["max_seq"]


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``lcg status``."""
    p = subparsers.add_parser(
        "status",
        help="show positions, generations and counts per group",
        description=_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_run)
