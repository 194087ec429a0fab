"""``lcg publish --to nats://…``: publish groups to JetStream once, live, or show the acks.

The work is ``lcg.replication.jetstream`` (a publish of what the server lacks) and
``lcg.replication.jetstream_live`` (``--live``, ADR 0190); this module prints the results.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from lcg.cli._common import emit_json, format_table
from lcg.cli._terminal import safe
from lcg.errors import ConfigError
from lcg.events import decode_line, encode_group, list_groups, list_segments, read_tail
from lcg.replication import JetStreamPublisher, LivePublisher, stage_group

__all__ = ["run_jetstream"]


def _groups(args: argparse.Namespace, root: Path) -> list[str] | None:
    """The named group, or ``None`` for every group (``--all``)."""
    if args.group and args.all:
        raise ConfigError("--group and --all exclude each other")
    if not args.group and not args.all:
        raise ConfigError("name a --group, or publish --all")
    return [args.group] if args.group else None


def _local_max(root: Path, group_id: str) -> int | None:
    segments = list_segments(root / encode_group(group_id))
    for seg in reversed(segments):
        tail = read_tail(seg.path)
        if tail.last_line is not None:
            return decode_line(tail.last_line).seq
    return None


def _status(args: argparse.Namespace, root: Path, target: str, groups: list[str] | None) -> int:
    pub = JetStreamPublisher(target)
    try:
        names = groups or sorted(set(list_groups(root)) | set(pub.run(pub.published_groups())))
        acked = [pub.run(pub.acked_position(g)) for g in names]
    finally:
        pub.close()
    if args.json:
        emit_json({"target": pub.label, "groups": acked})
        return 0
    rows = []
    for pos in acked:
        local = _local_max(root, pos.group_id)
        lag = None if local is None else local - (-1 if pos.seq is None else pos.seq)
        rows.append([pos.group_id, pos.generation, pos.seq, pos.stream_seq, local, lag])
    headers = ["group", "generation", "acked seq", "stream seq", "local seq", "lag"]
    sys.stdout.write(f"{safe(pub.label)}\n{format_table(headers, rows)}\n")
    return 0


def _live(args: argparse.Namespace, root: Path, target: str, groups: list[str] | None) -> int:
    stop = threading.Event()

    def _on_signal(_sig: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)

    def _on_error(group_id: str, error: str) -> None:
        line = safe(f"lcg publish: group {group_id}: {error} (retrying)")
        print(line, file=sys.stderr, flush=True)

    live = LivePublisher(
        root, target, groups, reset=args.reset, replicas=args.replicas, on_error=_on_error
    )
    which = "every group" if groups is None else f"group {groups[0]}"
    print(
        safe(f"lcg publish: publishing {which} of {root} to {live.publisher.label} live; ")
        + "stop with Ctrl-C",
        flush=True,
    )
    live.run(stop)
    for status in live.status.values():
        pos = status.acked
        print(
            safe(
                f"group {status.group_id}: acknowledged through seq {pos.seq} "
                f"(stream seq {pos.stream_seq}), {status.published} published by this run"
            ),
            flush=True,
        )
    return 0


def run_jetstream(args: argparse.Namespace, root: Path, target: str) -> int:
    """Publish to (or report on) the JetStream target ``target``."""
    groups = _groups(args, root)
    if args.status:
        return _status(args, root, target, groups)
    if args.live:
        return _live(args, root, target, groups)
    pub = JetStreamPublisher(target, replicas=args.replicas)
    results = []
    try:
        for group_id in groups or list_groups(root):
            results.append(pub.deliver(stage_group(root, group_id), reset=args.reset))
    finally:
        pub.close()
    if args.json:
        emit_json(results if groups is None else results[0])
        return 0
    for r in results:
        extra = " (reset: the stream was purged)" if r.reset else ""
        if r.committed:
            sys.stdout.write(
                safe(
                    f"published group {r.group_id} through seq {r.max_seq}, generation "
                    f"{r.generation}{extra}: {r.files_copied} message(s), {r.bytes_copied} "
                    f"bytes, JetStream stream {r.path} at {r.commit}"
                )
                + "\n"
            )
        else:
            sys.stdout.write(
                safe(f"group {r.group_id}: {pub.label} already holds it through seq {r.max_seq}")
                + "; nothing to publish\n"
            )
    return 0
