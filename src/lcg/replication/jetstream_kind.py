"""The JetStream transport's registry entry: ``nats://HOST:PORT[/PREFIX]`` (and ``tls://``).

The engine is ``replication.jetstream`` (``JetStreamPublisher``: a publish of what the server
lacks), ``replication.jetstream_live`` (``--live``) and ``replication.jetstream_follow`` (the
mirror a replica follows), ADR 0190. This object names the targets and its own ``lcg
publish`` options: ``--all`` (every group), ``--live`` (keep publishing new lines until
stopped), ``--status`` (what the server acknowledged, against the local stream) and
``--replicas N``; ``lcg follow`` takes none of its own. The NATS client is imported only
when a command runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lcg.errors import ConfigError
from lcg.replication.kinds import (
    NO_OPTIONS,
    Console,
    FollowSetup,
    OptionGroup,
    Options,
    PublishRequest,
    Transport,
)

if TYPE_CHECKING:
    from lcg.replication.jetstream import JetStreamPublisher
    from lcg.replication.transport import PublishResult

__all__ = ["JetStreamTransport"]


def _groups(request: PublishRequest) -> list[str] | None:
    """The named group, or ``None`` for every group (``--all``)."""
    every = bool(request.options.get("all"))
    if request.group and every:
        raise ConfigError("--group and --all exclude each other")
    if not request.group and not every:
        raise ConfigError("name a --group, or publish --all")
    return [request.group] if request.group else None


def _local_max(root: Path, group_id: str) -> int | None:
    from lcg.events import decode_line, encode_group, list_segments, read_tail

    for seg in reversed(list_segments(root / encode_group(group_id))):
        tail = read_tail(seg.path)
        if tail.last_line is not None:
            return decode_line(tail.last_line).seq
    return None


class JetStreamTransport(Transport):
    """Publish each group as a JetStream stream, a message per line; follow it by a mirror."""

    name = "jetstream"
    title = "JetStream"
    form = "nats://HOST:PORT[/PREFIX]"
    schemes = ("nats", "tls")

    def add_publish_arguments(self, group: OptionGroup) -> None:
        """``--all``, ``--live``, ``--status``, ``--replicas N``."""
        group.add_argument("--all", action="store_true", help="every group")
        group.add_argument(
            "--live",
            action="store_true",
            help="keep publishing new lines (Ctrl-C stops)",
        )
        group.add_argument(
            "--status", action="store_true", help="show what the server acknowledged"
        )
        group.add_argument(
            "--replicas",
            type=int,
            metavar="N",
            help="JetStream copies of a new stream (default 1)",
        )

    def open_publisher(
        self, target: str, *, flag: str = "--to", options: Options = NO_OPTIONS
    ) -> JetStreamPublisher:
        """A ``JetStreamPublisher`` (the target is parsed now; the connection on first use)."""
        from lcg.replication.jetstream import JetStreamPublisher

        return JetStreamPublisher(target, replicas=options.get("replicas") or 1)

    def publish(self, request: PublishRequest, console: Console) -> int:
        """Publish the named group or ``--all`` once, ``--live``, or show ``--status``."""
        from lcg.events import list_groups
        from lcg.replication.staging import stage_group

        groups = _groups(request)
        if request.options.get("status"):
            return self._status(request, console, groups)
        if request.options.get("live"):
            return self._live(request, console, groups)
        pub = self.open_publisher(request.target, options=request.options)
        results = []
        try:
            for group_id in groups or list_groups(request.root):
                results.append(
                    pub.deliver(stage_group(request.root, group_id), reset=request.reset)
                )
        finally:
            pub.close()
        self.report(results, console, one=groups is not None)
        return 0

    def describe(self, result: PublishResult) -> str:
        """The messages published and the stream's sequence, or that the server has them."""
        if not result.committed:
            return (
                f"group {result.group_id}: {result.repo} already holds it through seq "
                f"{result.max_seq}; nothing to publish"
            )
        extra = " (reset: the stream was purged)" if result.reset else ""
        return (
            f"published group {result.group_id} through seq {result.max_seq}, generation "
            f"{result.generation}{extra}: {result.files_copied} message(s), "
            f"{result.bytes_copied} bytes, JetStream stream {result.path} at {result.commit}"
        )

    def _status(self, request: PublishRequest, console: Console, groups: list[str] | None) -> int:
        from lcg.events import list_groups

        pub = self.open_publisher(request.target, options=request.options)
        try:
            local = set(list_groups(request.root))
            names = groups or sorted(local | set(pub.run(pub.published_groups())))
            acked = [pub.run(pub.acked_position(g)) for g in names]
        finally:
            pub.close()
        if console.json:
            console.emit({"target": pub.label, "groups": acked})
            return 0
        rows = []
        for pos in acked:
            top = _local_max(request.root, pos.group_id)
            lag = None if top is None else top - (-1 if pos.seq is None else pos.seq)
            rows.append([pos.group_id, pos.generation, pos.seq, pos.stream_seq, top, lag])
        headers = ["group", "generation", "acked seq", "stream seq", "local seq", "lag"]
        console.table(pub.label, headers, rows)
        return 0

    def _live(self, request: PublishRequest, console: Console, groups: list[str] | None) -> int:
        from lcg.replication.jetstream_live import LivePublisher

        stop = console.stop_event()

        def _on_error(group_id: str, error: str) -> None:
            console.warn(f"lcg publish: group {group_id}: {error} (retrying)")

        live = LivePublisher(
            request.root,
            request.target,
            groups,
            reset=request.reset,
            replicas=request.options.get("replicas") or 1,
            on_error=_on_error,
        )
        which = "every group" if groups is None else f"group {groups[0]}"
        console.say(
            f"lcg publish: publishing {which} of {request.root} to {live.publisher.label} live; "
            "stop with Ctrl-C"
        )
        live.run(stop)
        for status in live.status.values():
            pos = status.acked
            console.say(
                f"group {status.group_id}: acknowledged through seq {pos.seq} "
                f"(stream seq {pos.stream_seq}), {status.published} published by this run"
            )
        return 0

    def follow_setup(
        self,
        source: str,
        workspace: Path,
        *,
        options: Options = NO_OPTIONS,
        env: dict[str, str] | None = None,
        groups: Sequence[str] | None = None,
    ) -> FollowSetup:
        """The messages are mirrored, checked, into the replica's own ``.lcg`` (its wal)."""
        from lcg.replication.jetstream import JetStreamTarget
        from lcg.replication.jetstream_follow import JetStreamPuller, MirrorSource, mirror_root
        from lcg.replication.service import replica_config

        root = mirror_root(workspace.resolve(), JetStreamTarget.parse(source))
        root.mkdir(parents=True, exist_ok=True)
        puller = JetStreamPuller(source, root, groups)
        return FollowSetup(
            config=replica_config(workspace, root, env=env),
            label=puller.target.label,
            source=lambda ws: MirrorSource(puller, limits=ws.store.limits),
            puller=puller,
        )
