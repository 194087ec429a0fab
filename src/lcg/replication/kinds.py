"""What the transports registry holds: one ``Transport`` object per way a stream travels.

``replication.transport`` is the engine's seam (``Publisher``, ``Source``, ``Puller``); a
``Transport`` here is everything else one transport owns, so that ``lcg publish`` and ``lcg
follow`` only loop over the registry (``replication.targets.TRANSPORTS``, ADR 0220):

* the targets it answers: its URL ``schemes``, and whether a plain path is its own (``paths``;
  one transport at most), with ``form``, how a target of it looks, for help and refusals;
* its own command-line options, added by ``add_publish_arguments`` / ``add_follow_arguments``
  to an argument group named for it (the CLI refuses them with another transport's target);
* its publisher (``open_publisher``) and what ``lcg publish`` does with it (``publish``: by
  default the named group staged and delivered once; JetStream adds ``--all``, ``--live`` and
  ``--status``), writing through a ``Console`` the CLI provides (this layer prints nothing);
* its follower set-up (``follow_setup``: the replica's settings, its source, its puller).

Importing this module (and a transport's object module) is light: a transport's engine
(git, NATS, the workspace) is imported inside the methods that use it.
"""

from __future__ import annotations

import abc
import argparse
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from lcg.errors import ConfigError

if TYPE_CHECKING:
    from lcg.config import Config
    from lcg.replication.service import SourceFactory
    from lcg.replication.transport import Publisher, PublishResult, Puller

__all__ = [
    "NO_OPTIONS",
    "Console",
    "FollowSetup",
    "OptionGroup",
    "Options",
    "PublishRequest",
    "Transport",
    "scheme_of",
]

#: A transport's own options as parsed: dest → value (only the options it added).
Options = Mapping[str, Any]
#: No options (every option at its default).
NO_OPTIONS: Options = MappingProxyType({})

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def scheme_of(target: str) -> str | None:
    """The URL scheme of ``target``, lower case (``None``: no ``scheme://``, a path)."""
    match = _URL.match(target)
    return match.group(1).lower() if match else None


class Console(Protocol):
    """Where a transport's ``publish`` writes (the CLI's terminal; escaping is the console's)."""

    @property
    def json(self) -> bool:
        """Whether ``--json`` asked for machine output (``emit``) instead of lines."""
        ...

    def say(self, text: str) -> None:
        """Print one line of the command's output."""
        ...

    def warn(self, text: str) -> None:
        """Print one line on the error stream (a retry, a warning)."""
        ...

    def emit(self, value: object) -> None:
        """Print ``value`` (msgspec-encodable) as JSON."""
        ...

    def table(self, title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        """Print ``title``, then the rows as aligned columns (``None`` as ``-``)."""
        ...

    def stop_event(self) -> threading.Event:
        """An event set when the person stops the command (Ctrl-C, SIGTERM)."""
        ...


class OptionGroup:
    """The argument group a transport adds its own options to; remembers what it added."""

    def __init__(self, group: argparse._ArgumentGroup) -> None:
        self._group = group
        #: The actions added through this group, in order.
        self.actions: list[argparse.Action] = []

    def add_argument(self, *flags: str, **kwargs: Any) -> argparse.Action:
        """``argparse``'s ``add_argument``. An option's default should be ``None`` (or ``False``
        for a switch): a value other than the default is what counts as given."""
        action = self._group.add_argument(*flags, **kwargs)
        self.actions.append(action)
        return action


@dataclass(frozen=True)
class PublishRequest:
    """One ``lcg publish``: the target, the options every transport shares, and its own."""

    target: str
    #: The option that named the target (``--to``, ``--repo``), for refusals.
    flag: str
    #: The stream root the groups are read from (the workspace's, or ``--stream-root``).
    root: Path
    #: ``--group`` (``None``: not given).
    group: str | None = None
    #: ``--reset``: replace a publication of another generation.
    reset: bool = False
    #: The transport's own options (``OptionGroup``'s dests → values).
    options: Options = field(default_factory=dict)


@dataclass(frozen=True)
class FollowSetup:
    """What ``lcg follow SOURCE`` runs: the replica's settings, its source, its puller."""

    config: Config
    #: The publication, as statuses and refusals name it.
    label: str
    #: Builds the follower's source (``None``: the workspace's ``.lcg/wal`` as a directory).
    source: SourceFactory | None = None
    #: Brings new lines within the source's reach (git: ``git pull`` every few seconds).
    puller: Puller | None = None


class Transport(abc.ABC):
    """One transport: its targets, its options, its publisher, its follower set-up."""

    #: The name ``transport_of`` answers and refusals use (``"git"``, ``"jetstream"``).
    name: str
    #: How help and messages name it (``"git"``, ``"JetStream"``).
    title: str
    #: How a target of it looks (``"a path or a git URL"``).
    form: str
    #: The URL schemes (lower case, without ``://``) whose targets are its own.
    schemes: tuple[str, ...] = ()
    #: Whether a target without a scheme (a path) is its own.
    paths: bool = False

    def add_publish_arguments(self, group: OptionGroup) -> None:  # noqa: B027 - optional
        """Add this transport's own ``lcg publish`` options (none by default)."""

    def add_follow_arguments(self, group: OptionGroup) -> None:  # noqa: B027 - optional
        """Add this transport's own ``lcg follow`` options (none by default)."""

    @abc.abstractmethod
    def open_publisher(
        self, target: str, *, flag: str = "--to", options: Options = NO_OPTIONS
    ) -> Publisher:
        """The publisher for ``target`` (judged before any stream is read; ``flag`` is the
        option that named it, for the refusals)."""

    @abc.abstractmethod
    def follow_setup(
        self,
        source: str,
        workspace: Path,
        *,
        options: Options = NO_OPTIONS,
        env: dict[str, str] | None = None,
        groups: Sequence[str] | None = None,
    ) -> FollowSetup:
        """The replica of ``workspace`` following ``source``."""

    def publish(self, request: PublishRequest, console: Console) -> int:
        """``lcg publish`` to this transport (default: the named group, delivered once)."""
        return self.deliver_one(request, console)

    def deliver_one(
        self,
        request: PublishRequest,
        console: Console,
        *,
        message: str | None = None,
        with_marks: bool = False,
    ) -> int:
        """Stage the named group, deliver it through ``open_publisher``, report the result."""
        from lcg.replication.publish import publish_group

        if not request.group:
            raise ConfigError(f"a {self.title} publish names its --group")
        publisher = self.open_publisher(request.target, flag=request.flag, options=request.options)
        try:
            result = publish_group(
                request.root,
                request.group,
                publisher,
                message=message,
                with_marks=with_marks,
                reset=request.reset,
            )
        finally:
            close = getattr(publisher, "close", None)
            if callable(close):
                close()
        self.report([result], console, one=True)
        return 0

    def report(self, results: Sequence[PublishResult], console: Console, *, one: bool) -> None:
        """Print what was published (``one``: a single group, as one JSON object)."""
        if console.json:
            console.emit(results[0] if one else list(results))
            return
        for result in results:
            console.say(self.describe(result))

    def describe(self, result: PublishResult) -> str:
        """The line ``lcg publish`` prints for one delivered group."""
        if not result.committed:
            return (
                f"group {result.group_id}: {result.repo} already holds it through seq "
                f"{result.max_seq}; nothing to publish"
            )
        extra = f" (reset from {result.previous_generation})" if result.reset else ""
        return (
            f"published group {result.group_id} through seq {result.max_seq}, generation "
            f"{result.generation}{extra} to {result.repo}: {result.files_copied} item(s), "
            f"{result.bytes_copied} bytes"
        )
