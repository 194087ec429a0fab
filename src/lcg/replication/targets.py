"""Which transport a publish target or a follow source names, by its form (the dispatch point).

A path or a git URL is git (``replication.git``); ``nats://`` (and ``tls://``) is JetStream
(``replication.jetstream``, ADR 0190); any other ``scheme://`` is refused here, naming what is
known. A transport added beside these registers its scheme in ``_SCHEMES`` and answers
``open_publisher`` and ``follow_setup`` for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lcg.config import Config
from lcg.errors import ConfigError
from lcg.replication.git import GitPublisher, GitPuller
from lcg.replication.jetstream import JetStreamPublisher, JetStreamTarget
from lcg.replication.jetstream_follow import JetStreamPuller, MirrorSource, mirror_root
from lcg.replication.service import SourceFactory, replica_config
from lcg.replication.transport import Publisher, Puller

__all__ = ["FollowSetup", "TransportName", "follow_setup", "open_publisher", "transport_of"]

#: The transports lcg has.
TransportName = Literal["git", "jetstream"]

#: URL schemes and the transport each names (git's own URL forms, and a local file URL).
_SCHEMES: dict[str, TransportName] = {
    "file": "git",
    "git": "git",
    "http": "git",
    "https": "git",
    "ssh": "git",
    "nats": "jetstream",
    "tls": "jetstream",
}
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
#: git's scp-like form, ``user@host:path`` (a local path names no user and host so).
_SCP = re.compile(r"^[\w.+-]+@[\w.-]+:")
_KNOWN = "a path or a git URL (the git transport), or nats://HOST:PORT (JetStream)"


def _scheme(target: str) -> str | None:
    match = _URL.match(target)
    return match.group(1).lower() if match else None


def transport_of(target: str) -> TransportName:
    """The transport ``target`` names: a path or a git URL is git; another scheme is refused."""
    scheme = _scheme(target)
    if scheme is None:
        return "git"
    transport = _SCHEMES.get(scheme)
    if transport is None:
        raise ConfigError(
            f"{target}: lcg has no transport for {scheme}:// - a publication is {_KNOWN}"
        )
    return transport


def _is_url(target: str) -> bool:
    return _scheme(target) is not None or _SCP.match(target) is not None


def open_publisher(target: str, *, flag: str = "--to") -> Publisher:
    """The publisher for ``lcg publish --to TARGET`` (judged before the stream is read;
    ``flag`` is the option that named it, for the refusals)."""
    match transport_of(target):
        case "git":
            if _is_url(target):
                raise ConfigError(
                    f"{flag} {target} is a git URL; lcg publish commits into a working tree - "
                    f"clone it (`git clone {target} DIR`), publish with {flag} DIR, then push"
                )
            return GitPublisher.open(Path(target), flag=flag)
        case "jetstream":
            return JetStreamPublisher(target)


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


def follow_setup(
    source: str,
    workspace: Path,
    *,
    pull_every: float | None = None,
    env: dict[str, str] | None = None,
    groups: Sequence[str] | None = None,
) -> FollowSetup:
    """The replica of ``workspace`` following ``source``, by the transport it names."""
    match transport_of(source):
        case "git":
            if _is_url(source):
                raise ConfigError(
                    f"{source} is a git URL; lcg follow reads a clone - clone it (`git clone "
                    f"{source} DIR`) and follow DIR with --pull-every"
                )
            path = Path(source)
            config = replica_config(workspace, path, env=env)
            resolved = path.resolve()
            puller = GitPuller(resolved, pull_every) if pull_every else None
            return FollowSetup(config=config, label=str(resolved), puller=puller)
        case "jetstream":
            # The messages are mirrored, checked, into the replica's own .lcg (its .lcg/wal).
            root = mirror_root(workspace.resolve(), JetStreamTarget.parse(source))
            root.mkdir(parents=True, exist_ok=True)
            nats_puller = JetStreamPuller(source, root, groups)
            return FollowSetup(
                config=replica_config(workspace, root, env=env),
                label=nats_puller.target.label,
                source=lambda ws: MirrorSource(nats_puller, limits=ws.store.limits),
                puller=nats_puller,
            )
