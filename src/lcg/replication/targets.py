"""The transports registry: which transport a publish target or a follow source names.

``TRANSPORTS`` is the one list, a line per transport (``replication.kinds.Transport``: its
schemes, its options, its publisher, its follower set-up; ADR 0220). A target with a
``scheme://`` belongs to the transport listing that scheme; a target without one (a path) to
the transport that takes paths (git); any other scheme is refused, naming what is known.
``lcg publish`` and ``lcg follow`` add every transport's own options from here
(``add_transport_arguments``, an argument group named for each) and refuse another
transport's option given with a target (``chosen_transport``). Adding a transport is its own
modules plus one line below.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lcg.errors import ConfigError
from lcg.replication.git_kind import GitTransport
from lcg.replication.jetstream_kind import JetStreamTransport
from lcg.replication.kinds import NO_OPTIONS, FollowSetup, OptionGroup, Transport, scheme_of

if TYPE_CHECKING:
    from lcg.replication.transport import Publisher

__all__ = [
    "TRANSPORTS",
    "add_transport_arguments",
    "chosen_transport",
    "follow_setup",
    "open_publisher",
    "transport_for",
    "transport_of",
    "transports",
]

#: The transports lcg has, one line each.
TRANSPORTS: list[Transport] = [
    GitTransport(),
    JetStreamTransport(),
]

#: The parsed arguments' attribute naming which transport added which option.
_OWNERS = "_transport_options"


class _Owned:
    """One transport-only option: who added it, how it is spelled, what it is when absent."""

    def __init__(self, transport: str, flag: str, default: Any) -> None:
        self.transport = transport
        self.flag = flag
        self.default = default


def transports() -> list[Transport]:
    """The registered transports, in help order."""
    return list(TRANSPORTS)


def _known() -> str:
    return ", or ".join(f"{t.form} ({t.title})" for t in TRANSPORTS)


def transport_for(target: str) -> Transport:
    """The transport ``target`` names; ``ConfigError`` for a scheme no transport lists."""
    scheme = scheme_of(target)
    for transport in TRANSPORTS:
        if transport.paths if scheme is None else scheme in transport.schemes:
            return transport
    named = f"{scheme}://" if scheme is not None else "a path"
    raise ConfigError(f"{target}: lcg has no transport for {named} - a publication is {_known()}")


def transport_of(target: str) -> str:
    """The name of the transport ``target`` names (``"git"``, ``"jetstream"``)."""
    return transport_for(target).name


def open_publisher(target: str, *, flag: str = "--to") -> Publisher:
    """The publisher for ``lcg publish --to TARGET`` (judged before the stream is read;
    ``flag`` is the option that named it, for the refusals)."""
    return transport_for(target).open_publisher(target, flag=flag)


def follow_setup(
    source: str,
    workspace: Path,
    *,
    env: dict[str, str] | None = None,
    groups: Sequence[str] | None = None,
    **options: Any,
) -> FollowSetup:
    """The replica of ``workspace`` following ``source``, by the transport it names
    (``options``: that transport's own, by dest, e.g. git's ``pull_every``)."""
    transport = transport_for(source)
    return transport.follow_setup(
        source, workspace, options=options or NO_OPTIONS, env=env, groups=groups
    )


def add_transport_arguments(
    parser: argparse.ArgumentParser, command: Literal["publish", "follow"]
) -> None:
    """Add each transport's own options for ``command``, in an argument group named for it."""
    owned: dict[str, _Owned] = {}
    for transport in TRANSPORTS:
        group = OptionGroup(
            parser.add_argument_group(f"{transport.title} options ({transport.form})")
        )
        if command == "publish":
            transport.add_publish_arguments(group)
        else:
            transport.add_follow_arguments(group)
        for action in group.actions:
            flag = max(action.option_strings, key=len, default=action.dest)
            owned[action.dest] = _Owned(transport.name, flag, action.default)
    parser.set_defaults(**{_OWNERS: owned})


def chosen_transport(
    args: argparse.Namespace, target: str, flag: str = ""
) -> tuple[Transport, dict[str, Any]]:
    """The transport ``target`` names and its own options from ``args``; ``ConfigError`` when
    an option of another transport was given (``flag``: the option that named the target)."""
    transport = transport_for(target)
    owned: dict[str, _Owned] = getattr(args, _OWNERS, {})
    foreign: dict[str, list[str]] = {}
    mine: dict[str, Any] = {}
    for dest, entry in owned.items():
        value = getattr(args, dest, entry.default)
        if entry.transport == transport.name:
            mine[dest] = value
        elif value != entry.default:
            foreign.setdefault(entry.transport, []).append(entry.flag)
    for name, flags in foreign.items():
        owner = next(t for t in TRANSPORTS if t.name == name)
        named = f"{flag} {target}" if flag else target
        raise ConfigError(
            f"{' and '.join(flags)} {'is' if len(flags) == 1 else 'are'} {owner.title}'s, for "
            f"{owner.form}; {named} is {transport.title}'s ({transport.form}), which takes no "
            "such option"
        )
    return transport, mine
