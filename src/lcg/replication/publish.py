"""Publish: stage one group's stream (``replication.staging``), then deliver it through a
transport's ``Publisher`` (``replication.transport``; git: ``replication.git``).

Staging is the same for every transport: the stream's generation, its complete lines after
the one line check, its sidecars. Where it goes and how it lands whole is the publisher's.
"""

from __future__ import annotations

from pathlib import Path

from lcg.replication.git import GITIGNORE, GitPublisher
from lcg.replication.staging import stage_group
from lcg.replication.transport import Publisher, PublishResult

__all__ = ["GITIGNORE", "PublishResult", "publish_group"]


def publish_group(
    stream_root: Path,
    group_id: str,
    to: Path | Publisher,
    *,
    message: str | None = None,
    with_marks: bool = False,
    reset: bool = False,
) -> PublishResult:
    """Stage ``group_id``'s stream under ``stream_root`` and deliver it ``to`` a target.

    A path is a git working tree (``GitPublisher``), judged before the stream is read.
    """
    publisher = GitPublisher.open(to) if isinstance(to, Path) else to
    staged = stage_group(stream_root, group_id, with_marks=with_marks)
    return publisher.deliver(staged, reset=reset, message=message)
