"""A third transport for the tests only: a test double that publishes into a local folder.

It shows what adding a transport takes: this one module (a ``Transport`` object with its
scheme, its own options, its publisher and its follower set-up) plus one line in the
registry (``lcg.replication.targets.TRANSPORTS``; a test adds that line with monkeypatch).
``double-folder://DIR`` names the folder; the publisher double copies each group's complete,
line-checked segments into ``DIR/<group dir>/`` (the stream layout, so the replica reads the
folder as a directory of group streams, as it reads a git clone). It records what its own
options were for the tests to see.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lcg.events import atomic_write, encode_group, read_generation, write_generation
from lcg.replication import (
    NO_OPTIONS,
    FollowSetup,
    OptionGroup,
    Options,
    PublishResult,
    StagedGroup,
    Transport,
    replica_config,
)
from lcg.replication.staging import refuse_other_generation

SCHEME = "double-folder"


def folder_of(target: str) -> Path:
    """The folder a ``double-folder://DIR`` target names."""
    return Path(target.removeprefix(f"{SCHEME}://"))


class FolderPublisherDouble:
    """Copies a staged group's complete segments into a folder (a ``Publisher``)."""

    def __init__(self, folder: Path, note: str | None) -> None:
        self.folder = folder
        self.note = note

    @property
    def label(self) -> str:
        """The folder, as a target."""
        return f"{SCHEME}://{self.folder}"

    def deliver(
        self, staged: StagedGroup, *, reset: bool = False, message: str | None = None
    ) -> PublishResult:
        """Copy what grew; another generation in the folder is refused unless ``reset``."""
        dest = self.folder / encode_group(staged.group_id)
        previous = read_generation(dest) if dest.is_dir() else None
        if previous is not None and previous != staged.generation and not reset:
            raise refuse_other_generation(staged.group_id, previous, staged.generation)
        dest.mkdir(parents=True, exist_ok=True)
        result = PublishResult(
            group_id=staged.group_id,
            repo=self.label,
            path=str(dest),
            generation=staged.generation,
            previous_generation=previous,
        )
        for name in staged.names:
            target = dest / name
            data = staged.grown(name, target.stat().st_size if target.exists() else -1)
            if data is not None:
                atomic_write(target, data)
                result.files_copied += 1
                result.bytes_copied += len(data)
        if read_generation(dest) != staged.generation:
            write_generation(dest, staged.generation)
        if self.note is not None:
            atomic_write(self.folder / "NOTE", self.note.encode())
        result.max_seq = max(
            (line.seq for line in staged.lines() if line.seq is not None), default=None
        )
        result.committed = result.files_copied > 0
        return result


class FolderTransportDouble(Transport):
    """The test double's registry entry: ``double-folder://DIR``, ``--double-note``,
    ``--double-tag``."""

    name = "folder-double"
    title = "folder double"
    form = f"{SCHEME}://DIR"
    schemes = (SCHEME,)

    def __init__(self) -> None:
        #: The options each follow set-up was given.
        self.followed: list[dict[str, Any]] = []

    def add_publish_arguments(self, group: OptionGroup) -> None:
        """``--double-note TEXT``."""
        group.add_argument("--double-note", metavar="TEXT", help="a note written into DIR/NOTE")

    def add_follow_arguments(self, group: OptionGroup) -> None:
        """``--double-tag T``."""
        group.add_argument("--double-tag", metavar="T", help="recorded by the double")

    def open_publisher(
        self, target: str, *, flag: str = "--to", options: Options = NO_OPTIONS
    ) -> FolderPublisherDouble:
        """A publisher double into the folder."""
        return FolderPublisherDouble(folder_of(target), options.get("double_note"))

    def follow_setup(
        self,
        source: str,
        workspace: Path,
        *,
        options: Options = NO_OPTIONS,
        env: dict[str, str] | None = None,
        groups: Sequence[str] | None = None,
    ) -> FollowSetup:
        """The replica's ``.lcg/wal`` links to the folder (read as a directory of streams)."""
        self.followed.append(dict(options))
        folder = folder_of(source)
        return FollowSetup(config=replica_config(workspace, folder, env=env), label=source)
