"""A tree's git history as episodes: each commit that touched the tree is a chunk (ADR 0205).

Inside a git work tree, the commits that changed a file of the tree (the tree may be a folder
inside the work tree) are read as data by ``gitread`` (no git process, nothing a repository
configures: ADR 0191), newest first, bounded by a ``CommitWindow`` (the last
``DEFAULT_COMMITS``, or those committed since a time). Each becomes one chunk of the tree's
source, sent through the same chunk sync as the files: durable, replayed, removed with its
source, and not sent again while the group holds it.

All of a tree's commits are served as one source file, ``<label>/.git/commits``
(``COMMITS_FILE``): a hidden path, so never a file the tree's scan reads, and under the tree's
prefix, so its manifest, ``lcg sources remove`` and replicas see it like any file. A commit's
chunk id is ``<label>/.git/commits#<first 12 hex of its sha>`` (``~2`` for a second commit
sharing them), so the id names the commit. Its text is the message (bounded), its author's
name (no e-mail address: ADR 0205), its date with the author's offset, its sha and the files
it touched (bounded); its ``reference_time`` is its author time. The group holds exactly the
commits of the window: a commit that left it (older than the last ``limit``, or before
``since``) is removed, unless the walk ended on something it could not read (then what the
group holds stays, as a file that could not be read does: ADR 0192).

``commit_mentions`` gives the declared pass each commit's ``DeclaredMention`` of every file it
touched that the tree still holds: the commit's episode ``MENTIONS`` that file's ``Document``.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import msgspec

from lcg import timestamps
from lcg.ingest.declared.model import DeclaredMention
from lcg.ingest.sources.gitread import GitRepository
from lcg.ingest.sources.history import DEFAULT_COMMITS, DEFAULT_WINDOW, CommitWindow, history_dir
from lcg.ingest.sources.model import ChunkIn
from lcg.ingest.sources.tree import StoredChunk, TreeScope

__all__ = [
    "COMMITS_FILE",
    "DEFAULT_COMMITS",
    "DEFAULT_WINDOW",
    "MAX_FILES_LISTED",
    "MAX_MESSAGE_CHARS",
    "CommitChunk",
    "CommitLog",
    "CommitSync",
    "CommitWindow",
    "TreeCommit",
    "commit_chunks",
    "commit_mentions",
    "commit_source",
    "commit_text",
    "history_dir",
    "plan_commits",
    "read_commits",
    "tree_commits",
]

#: The source file a tree's commits are served as, inside its label: ``notes/.git/commits``.
COMMITS_FILE = ".git/commits"
#: The longest commit message kept in a chunk, in characters (the rest is cut, marked ``…``).
MAX_MESSAGE_CHARS = 2000
#: The most touched files a chunk's ``Files:`` line names (then ``and N more``).
MAX_FILES_LISTED = 40
#: Walks remembered (by repository, ``HEAD``, folder and window): a watcher's every save
#: re-reads ``HEAD`` only, not the history.
_CACHED_WALKS = 16


class TreeCommit(msgspec.Struct, frozen=True, kw_only=True):
    """One commit that touched the tree."""

    sha: str
    #: The author's name (the address is left out: ADR 0205).
    author: str
    #: The author time, in the author's own offset.
    authored_at: datetime
    #: The message, bounded to ``MAX_MESSAGE_CHARS``.
    message: str
    #: The tree-relative paths it added, changed or removed (against its first parent; a
    #: root commit: all it holds).
    files: tuple[str, ...]


class CommitLog(msgspec.Struct, kw_only=True):
    """The commits of a tree's window, newest first."""

    commits: list[TreeCommit] = []
    #: Whether the tree is inside a git work tree this reader reads (``gitread``).
    repository: bool = False
    #: Whether the walk ended at something it could not read (a damaged object or ref).
    damaged: bool = False


class CommitChunk(msgspec.Struct, frozen=True, kw_only=True):
    """A commit as the chunk the sync sends."""

    chunk: ChunkIn
    content_hash: str
    #: The tree-relative paths the commit touched (all of them, not only those listed).
    files: tuple[str, ...]


class CommitSync(msgspec.Struct, kw_only=True):
    """What a sync sends of a tree's commits: the chunks to add, the episodes to remove."""

    #: The source file the commits are served as (``commit_source``).
    source: str = ""
    #: Every commit of the window, as chunks (added or already held).
    chunks: list[CommitChunk] = []
    adds: list[ChunkIn] = []
    #: Episode uuids of commits the group holds that left the window.
    removals: list[str] = []
    unchanged: int = 0
    #: Commits read from the repository (the window's).
    read: int = 0
    damaged: bool = False


def commit_source(scope: TreeScope) -> str | None:
    """The source file a tree's commits are served as; ``None`` for a single-file source
    (its episodes are that file's alone)."""
    if scope.prefix.endswith(":"):
        return None
    return scope.prefix + COMMITS_FILE


_walks: dict[tuple[str, str, str, CommitWindow], CommitLog] = {}
_walks_lock = threading.Lock()


def read_commits(root: Path, window: CommitWindow) -> CommitLog:
    """The commits that touched the folder ``root`` within ``window``, newest first; none
    outside a git work tree or in a layout ``gitread`` does not read."""
    repo = GitRepository.open(root)
    if repo is None:
        return CommitLog()
    with repo:
        try:
            rel = Path(os.path.realpath(root)).relative_to(repo.top).as_posix()
        except (OSError, ValueError):
            return CommitLog()
        rel = "" if rel == "." else rel
        head = repo.head_commit()
        key = (str(repo.gitdir), head or "", rel, window)
        with _walks_lock:
            cached = _walks.get(key)
        if cached is not None:
            return cached
        log = _walk(repo, rel, window)
    if not log.damaged:
        with _walks_lock:
            if len(_walks) >= _CACHED_WALKS:
                _walks.clear()
            _walks[key] = log
    return log


def _walk(repo: GitRepository, rel: str, window: CommitWindow) -> CommitLog:
    log = CommitLog(repository=True)
    cut = len(rel) + 1 if rel else 0
    if window.limit <= 0:
        return log
    for c in repo.iter_commits(under=rel, merges=True):
        when = c.committed_at or c.authored_at
        if window.since is not None and when is not None and when < window.since:
            break  # newest committer time first: the rest is older still
        authored = c.authored_at or c.committed_at
        if not c.touched or authored is None:
            continue  # touched nothing of the tree, or names no usable time
        offset = c.author_offset if c.authored_at is not None else 0
        zone = timezone(timedelta(minutes=offset or 0))
        log.commits.append(
            TreeCommit(
                sha=c.sha,
                author=_name(c.author),
                authored_at=authored.astimezone(zone),
                message=_bounded(c.message),
                files=tuple(p[cut:] for p in c.touched),
            )
        )
        if len(log.commits) >= window.limit:
            break
    else:
        log.damaged = repo.walk_failed
    return log


def _name(author: str) -> str:
    name = author.rpartition("<")[0].strip() if "<" in author else author.strip()
    return name or "(no name)"


def _bounded(message: str) -> str:
    message = message.strip()
    if len(message) > MAX_MESSAGE_CHARS:
        return message[:MAX_MESSAGE_CHARS].rstrip() + "…"
    return message


def commit_text(commit: TreeCommit) -> str:
    """A commit's chunk text: subject, body, then ``Author``, ``Date``, ``Commit``, ``Files``."""
    subject, _, body = commit.message.partition("\n")
    parts = [subject.strip() or "(no message)"]
    if body.strip():
        parts.append(body.strip())
    listed = ", ".join(commit.files[:MAX_FILES_LISTED])
    more = len(commit.files) - MAX_FILES_LISTED
    if more > 0:
        listed += f" and {more} more"
    parts.append(
        f"Author: {commit.author}\nDate: {commit.authored_at.isoformat()}\n"
        f"Commit: {commit.sha}\nFiles: {listed}"
    )
    return "\n\n".join(parts)


def commit_chunks(scope: TreeScope, log: CommitLog) -> list[CommitChunk]:
    """The chunks of ``log``'s commits, served under ``scope`` (none for a single file)."""
    source = commit_source(scope)
    if source is None:
        return []
    now = datetime.now(UTC)
    seen: dict[str, int] = {}
    ids: dict[str, str] = {}
    # Repeats of a 12-hex prefix are numbered in the order of the full sha: an id never
    # changes as newer commits arrive.
    for sha in sorted({c.sha for c in log.commits}):
        n = seen[sha[:12]] = seen.get(sha[:12], 0) + 1
        ids[sha] = f"{source}#{sha[:12]}" + ("" if n == 1 else f"~{n}")
    out: list[CommitChunk] = []
    for commit in log.commits:
        text = commit_text(commit)
        when = min(commit.authored_at.astimezone(UTC), now)  # a skewed clock hides nothing
        chunk = ChunkIn(
            chunk_id=ids[commit.sha],
            source_file=source,
            chunk_text=text,
            reference_time=timestamps.to_text(when),
        )
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        out.append(CommitChunk(chunk=chunk, content_hash=digest, files=commit.files))
    return out


def plan_commits(
    scope: TreeScope, log: CommitLog, stored: list[StoredChunk], *, hold: bool = False
) -> CommitSync:
    """What makes the group hold exactly ``log``'s commits of the tree: the chunks it lacks
    (or holds with other text), and the episodes of commits no longer in the window. Nothing
    is removed when ``hold`` or the walk was ``damaged``."""
    source = commit_source(scope)
    plan = CommitSync(
        source=source or "",
        chunks=commit_chunks(scope, log),
        read=len(log.commits),
        damaged=log.damaged,
    )
    held: dict[str, list[StoredChunk]] = {}
    for s in stored:
        if s.source_file == source:
            held.setdefault(s.chunk_id, []).append(s)
    wanted: set[str] = set()
    for c in plan.chunks:
        wanted.add(c.chunk.chunk_id)
        copies = held.get(c.chunk.chunk_id, [])
        keep = next((s for s in copies if s.content_hash == c.content_hash), None)
        if keep is None:
            plan.adds.append(c.chunk)
        else:
            plan.unchanged += 1
        plan.removals.extend(s.episode_uuid for s in copies if s is not keep)
    for chunk_id, copies in held.items():
        if chunk_id not in wanted:
            plan.removals.extend(s.episode_uuid for s in copies)
    if hold or log.damaged:
        plan.removals = []
    return plan


def commit_mentions(commits: CommitSync, paths: Iterable[str]) -> list[DeclaredMention]:
    """A ``DeclaredMention`` from each commit's chunk to each file it touched that the tree
    holds (``paths``: tree-relative): the commit's episode ``MENTIONS`` that ``Document``."""
    held = set(paths)
    return [
        DeclaredMention(chunk_id=c.chunk.chunk_id, target=path)
        for c in commits.chunks
        for path in c.files
        if path in held
    ]


def tree_commits(
    scope: TreeScope,
    window: CommitWindow | None,
    stored: list[StoredChunk],
    *,
    within: str = "",
    hold: bool = False,
) -> CommitSync:
    """A sync's commits of the tree ``scope``: those of ``window`` (``None``: none, so the
    group's are removed). A sync of a part of the tree (``within``) leaves them as they are;
    ``hold`` removes nothing."""
    if within or commit_source(scope) is None:
        return CommitSync()
    log = read_commits(Path(scope.root), window) if window is not None else CommitLog()
    return plan_commits(scope, log, stored, hold=hold)
