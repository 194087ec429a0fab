"""The git transport: a publisher that commits staged groups into a working tree, a puller
that runs ``git pull``, and the working tree read as a source (``replication.tree``).

The publish contract (docs/replication.md): the *directory* travels, dot-files included -
``.wal-generation.json`` is load-bearing (it is (re)written from the stream's lines when the
workspace lost it), ``.wal-ontology.json`` and ``.wal-embedding-model.json`` travel as
provenance, ``.checkpoints/`` only with ``--with-marks``. Never copied: ``.writer.lock``,
``.quarantine/`` and ``.wal-bounds.json`` (a local cache each replica keeps for itself; a
tracked copy would make the replica's working tree dirty and its next ``git pull`` fail).

Segments are append-only, so a segment whose size differs from the repository's copy is
copied whole, up to its last complete line (``StagedGroup.grown``). A repository copy of
another generation is refused unless ``--reset``, which replaces it; the replicas then rebuild
the group. Every file is written atomically and durably (``events.files.atomic_write``: temp
file, fsync, rename, directory fsync) before ``git commit`` runs, so a crash never commits a
torn copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from lcg.errors import ConfigError, StreamError
from lcg.events import (
    CHECKPOINTS_DIR,
    DEFAULT_MAX_SIDECAR_BYTES,
    UnsafeFileError,
    atomic_write,
    decode_line,
    effective_generation,
    encode_group,
    guard_case_collision,
    list_segments,
    read_generation,
    read_small,
    read_tail,
    remove_tree,
    sweep_removals,
    write_generation,
)
from lcg.replication.staging import StagedGroup, refuse_other_generation
from lcg.replication.transport import PublishResult
from lcg.replication.tree import TreeSource

__all__ = ["GITIGNORE", "GitPublisher", "GitPuller", "GitSource"]

#: Written into each published group directory so a replica's local files stay untracked.
GITIGNORE = ".wal-bounds.json\n.wal-bounds.*.tmp\n*.tmp\n.writer.lock\n.quarantine/\n"

#: A clone of the publication is read as a directory of group streams.
GitSource = TreeSource


def _repo_copy(path: Path) -> bytes | None:
    """The repository's copy of a sidecar; ``None`` if missing or not a small regular file.

    The repository is someone else's too (ADR 0154): a link or a FIFO there is replaced by
    the publish, never read through.
    """
    try:
        return read_small(path, DEFAULT_MAX_SIDECAR_BYTES)
    except UnsafeFileError:
        return None


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        raise ConfigError("git is not installed (lcg publish commits with git)") from None
    if check and proc.returncode != 0:
        raise StreamError(
            f"git {' '.join(args)} failed in {repo} (exit {proc.returncode}): "
            f"{(proc.stderr or proc.stdout).strip()}"
        )
    return proc


def _work_tree(repo: Path, flag: str) -> Path:
    if not repo.is_dir():
        raise ConfigError(f"{flag} {repo}: no such directory; clone or `git init` it first")
    proc = _git(repo, "rev-parse", "--show-toplevel", check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise ConfigError(
            f"{flag} {repo} is not a git working tree (a bare repository cannot be published "
            "into); clone it, or create one with `git init`, then publish again"
        )
    return Path(proc.stdout.strip()).resolve()


class GitPublisher:
    """Commits staged groups into a git working tree (``<repo>/<encoded group>/``)."""

    def __init__(self, repo: Path, top: Path) -> None:
        self.repo = repo.resolve()
        #: The working tree's top directory (``repo`` may be inside it).
        self.top = top

    @classmethod
    def open(cls, repo: Path, *, flag: str = "--repo") -> GitPublisher:
        """A publisher into ``repo``, which must be a git working tree (``ConfigError``,
        naming the option ``flag`` that gave it)."""
        return cls(repo, _work_tree(repo, flag))

    @property
    def label(self) -> str:
        """The working tree's top directory."""
        return str(self.top)

    def deliver(
        self, staged: StagedGroup, *, reset: bool = False, message: str | None = None
    ) -> PublishResult:
        """Write ``staged`` durably into the working tree, then commit it (if anything changed)."""
        group_id, generation = staged.group_id, staged.generation
        dest = self.repo / encode_group(group_id)
        previous = effective_generation(dest) if dest.is_dir() else None
        if previous is not None and previous != generation and not reset:
            raise refuse_other_generation(group_id, previous, generation)
        result = PublishResult(
            group_id=group_id,
            repo=str(self.top),
            path=str(dest),
            generation=generation,
            previous_generation=previous,
            reset=previous is not None and previous != generation,
        )
        # A replica reading this work tree sees the old copy whole or none of it (ADR 0156).
        sweep_removals(dest.parent, of=dest.name)
        if reset and remove_tree(dest):
            result.reset = True
        guard_case_collision(dest.parent, dest.name)
        dest.mkdir(parents=True, exist_ok=True)
        self._write(staged, dest, result)
        last = list_segments(dest)[-1].path
        tail = read_tail(last)
        result.max_seq = decode_line(tail.last_line).seq if tail.last_line is not None else None
        self._commit(dest, result, message)
        return result

    def _write(self, staged: StagedGroup, dest: Path, result: PublishResult) -> None:
        wanted = set(staged.names)
        for old in list_segments(dest):
            if old.path.name not in wanted:
                raise StreamError(
                    f"the repository's copy of group {staged.group_id!r} holds "
                    f"{old.path.name}, which the stream no longer has; a stream is "
                    "append-only - publish with --reset"
                )
        for name in staged.names:
            target = dest / name
            data = staged.grown(name, target.stat().st_size if target.exists() else -1)
            if data is None:
                continue
            atomic_write(target, data)
            result.files_copied += 1
            result.bytes_copied += len(data)
        # The generation always travels, even when the workspace's own sidecar was lost.
        if read_generation(dest) != staged.generation:
            write_generation(dest, staged.generation)
        for name, data in staged.sidecars.items():
            if _repo_copy(dest / name) != data:
                atomic_write(dest / name, data)
        if staged.marks is not None:
            shutil.copytree(staged.marks, dest / CHECKPOINTS_DIR, dirs_exist_ok=True)
        ignore = dest / ".gitignore"
        if not ignore.is_file() or ignore.read_text() != GITIGNORE:
            atomic_write(ignore, GITIGNORE.encode())

    def _commit(self, dest: Path, result: PublishResult, message: str | None) -> None:
        rel = os.path.relpath(dest, self.top)
        _git(self.top, "add", "-A", "--", rel)
        if _git(self.top, "diff", "--cached", "--quiet", "--", rel, check=False).returncode == 0:
            return
        text = message or (
            f"lcg publish {result.group_id}: through seq {result.max_seq} (generation "
            f"{result.generation})" + (" [reset]" if result.reset else "")
        )
        _git(self.top, "commit", "-q", "-m", text, "--", rel)
        result.committed = True
        result.commit = _git(self.top, "rev-parse", "HEAD").stdout.strip()


class GitPuller:
    """Runs ``git pull --ff-only`` in the publication every few seconds (``--pull-every``)."""

    def __init__(
        self, repo: Path, every_s: float, *, on_error: Callable[[str], None] | None = None
    ) -> None:
        self.repo = repo
        self.every_s = every_s
        self.on_error = on_error or _print_pull_error
        self._stop = threading.Event()
        self._last_error: str | None = None
        #: How many pulls ran (failed ones included).
        self.pulls = 0
        self._thread = threading.Thread(target=self._run, name="lcg-pull", daemon=True)

    def start(self) -> None:
        """Pull in a background thread until ``stop``."""
        self._thread.start()

    def stop(self) -> None:
        """Stop pulling (a pull under way finishes in the background)."""
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            proc = subprocess.run(
                ["git", "-C", str(self.repo), "pull", "--ff-only", "-q"],
                capture_output=True,
                text=True,
                check=False,
            )
            error = (proc.stderr or proc.stdout).strip() if proc.returncode else None
            # A failure is reported once, not every few seconds while it lasts.
            if error and error != self._last_error:
                self.on_error(error)
            self._last_error = error
            self.pulls += 1


def _print_pull_error(error: str) -> None:
    print(f"lcg follow: git pull failed: {error}", file=sys.stderr)
