"""The git transport's registry entry: a path (a git working tree, a clone) is its target.

The engine is ``replication.git`` (``GitPublisher``, ``GitPuller``) and ``replication.tree``
(the clone read as a ``Source``); this object names its targets and its own options:
``--message`` and ``--with-marks`` for ``lcg publish``, ``--pull-every`` for ``lcg follow``.
A git URL is git's, but refused with the remedy: lcg commits into, and follows, a clone.
"""

from __future__ import annotations

import argparse
import re
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
    scheme_of,
)

if TYPE_CHECKING:
    from lcg.replication.transport import Publisher, PublishResult

__all__ = ["GitTransport"]

#: git's scp-like form, ``user@host:path`` (a local path names no user and host so).
_SCP = re.compile(r"^[\w.+-]+@[\w.-]+:")


def _is_url(target: str) -> bool:
    return scheme_of(target) is not None or _SCP.match(target) is not None


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


class GitTransport(Transport):
    """Publish by committing into a git working tree; follow a clone (``git pull``)."""

    name = "git"
    title = "git"
    form = "a path or a git URL"
    #: git's own URL forms, and a local file URL (refused with "clone it first").
    schemes = ("file", "git", "http", "https", "ssh")
    paths = True

    def add_publish_arguments(self, group: OptionGroup) -> None:
        """``-m/--message``, ``--with-marks``."""
        group.add_argument("-m", "--message", metavar="M", help="the commit message")
        group.add_argument("--with-marks", action="store_true", help="also publish .checkpoints/")

    def add_follow_arguments(self, group: OptionGroup) -> None:
        """``--pull-every S``."""
        group.add_argument(
            "--pull-every", type=_positive, metavar="S", help="run `git pull --ff-only` every S s"
        )

    def open_publisher(
        self, target: str, *, flag: str = "--to", options: Options = NO_OPTIONS
    ) -> Publisher:
        """A ``GitPublisher`` into the working tree ``target``; a git URL is refused."""
        from lcg.replication.git import GitPublisher

        if _is_url(target):
            raise ConfigError(
                f"{flag} {target} is a git URL; lcg publish commits into a working tree - "
                f"clone it (`git clone {target} DIR`), publish with {flag} DIR, then push"
            )
        return GitPublisher.open(Path(target), flag=flag)

    def publish(self, request: PublishRequest, console: Console) -> int:
        """Commit the named group into the working tree (``--message``, ``--with-marks``)."""
        return self.deliver_one(
            request,
            console,
            message=request.options.get("message"),
            with_marks=bool(request.options.get("with_marks")),
        )

    def describe(self, result: PublishResult) -> str:
        """``published group … commit <short>``, or that nothing was committed."""
        if not result.committed:
            return (
                f"group {result.group_id} is already published through seq {result.max_seq}; "
                "nothing to commit"
            )
        extra = f" (reset from {result.previous_generation})" if result.reset else ""
        return (
            f"published group {result.group_id} through seq {result.max_seq}, generation "
            f"{result.generation}{extra}: {result.files_copied} file(s), {result.bytes_copied} "
            f"bytes, commit {(result.commit or '')[:12]}"
        )

    def follow_setup(
        self,
        source: str,
        workspace: Path,
        *,
        options: Options = NO_OPTIONS,
        env: dict[str, str] | None = None,
        groups: Sequence[str] | None = None,
    ) -> FollowSetup:
        """The replica's ``.lcg/wal`` links to the clone; ``--pull-every`` adds a puller."""
        from lcg.replication.git import GitPuller
        from lcg.replication.service import replica_config

        if _is_url(source):
            raise ConfigError(
                f"{source} is a git URL; lcg follow reads a clone - clone it (`git clone "
                f"{source} DIR`) and follow DIR with --pull-every"
            )
        path = Path(source)
        config = replica_config(workspace, path, env=env)
        resolved = path.resolve()
        pull_every = options.get("pull_every")
        puller = GitPuller(resolved, pull_every) if pull_every else None
        return FollowSetup(config=config, label=str(resolved), puller=puller)
