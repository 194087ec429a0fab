"""Publish: copy one group's whole stream directory into a git working tree and commit it.

The publish contract (docs/replication.md): the *directory* travels, dot-files included -
``.wal-generation.json`` is load-bearing (it is (re)written from the stream's lines when the
workspace lost it), ``.wal-ontology.json`` and ``.wal-embedding-model.json`` travel as
provenance, ``.checkpoints/`` only with ``--with-marks``. Never copied: ``.writer.lock``,
``.quarantine/`` and ``.wal-bounds.json`` (a local cache each replica keeps for itself; a
tracked copy would make the replica's working tree dirty and its next ``git pull`` fail).

Segments are append-only, so a segment whose size differs from the repository's copy is
copied whole, up to its last complete line (a service may be appending: readers take no
lock). A repository copy of another generation is refused unless ``--reset``, which replaces
it; the replicas then rebuild the group.

Every file is written atomically and durably (``events.files.atomic_write``: temp file, fsync,
rename, directory fsync) before ``git commit`` runs, so a crash never commits a torn copy. New
lines pass the one line check (``events.linecheck``); a line of another generation is refused.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import msgspec

from lcg.errors import ConfigError, GenerationError, StreamError
from lcg.events.codec import decode_line
from lcg.events.files import atomic_write, remove_tree, sweep_removals
from lcg.events.generation import effective_generation, read_generation, write_generation
from lcg.events.groups import encode_group, guard_case_collision
from lcg.events.guarded import DEFAULT_MAX_SIDECAR_BYTES, UnsafeFileError, read_small
from lcg.events.layout import CHECKPOINTS_DIR, EMBEDDING_MODEL_FILE, ONTOLOGY_SIDECAR_FILE
from lcg.events.linecheck import LineCheck
from lcg.events.segments import list_segments, read_tail

__all__ = ["GITIGNORE", "PublishResult", "publish_group"]

#: Written into each published group directory so a replica's local files stay untracked.
GITIGNORE = ".wal-bounds.json\n.wal-bounds.*.tmp\n*.tmp\n.writer.lock\n.quarantine/\n"


class PublishResult(msgspec.Struct, kw_only=True):
    """What one ``lcg publish`` did."""

    group_id: str
    repo: str
    path: str
    generation: str
    previous_generation: str | None = None
    reset: bool = False
    files_copied: int = 0
    bytes_copied: int = 0
    max_seq: int | None = None
    committed: bool = False
    commit: str | None = None


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


def _work_tree(repo: Path) -> Path:
    if not repo.is_dir():
        raise ConfigError(f"--repo {repo}: no such directory; clone or `git init` it first")
    proc = _git(repo, "rev-parse", "--show-toplevel", check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise ConfigError(
            f"--repo {repo} is not a git working tree (a bare repository cannot be published "
            "into); clone it, or create one with `git init`, then publish again"
        )
    return Path(proc.stdout.strip()).resolve()


def _complete(data: bytes) -> bytes:
    """``data`` up to its last newline: a line being appended is not published yet."""
    return data[: data.rfind(b"\n") + 1]


def _check_lines(group_id: str, name: str, data: bytes, generation: str) -> None:
    # Only another generation is refused: replicas report undecodable lines themselves, and
    # a bad line's generation is read from its JSON (``CheckedLine.gen``) all the same.
    check = LineCheck(generation)
    for line_no, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        gen = check.check(line).gen
        if gen is not None and gen != generation:
            raise GenerationError(
                f"the stream of group {group_id!r} mixes generations: {name}:{line_no} carries "
                f"{gen!r}, the stream's is {generation!r}; refusing to publish it - dump the "
                "group (`lcg dump`) and publish the dumped stream with --reset"
            )


def publish_group(
    stream_root: Path,
    group_id: str,
    repo: Path,
    *,
    message: str | None = None,
    with_marks: bool = False,
    reset: bool = False,
) -> PublishResult:
    """Copy ``group_id``'s stream directory under ``stream_root`` into ``repo`` and commit it."""
    top = _work_tree(repo)
    src = stream_root / encode_group(group_id)
    segments = list_segments(src)
    if not segments:
        raise StreamError(f"group {group_id!r} has no stream files under {stream_root}")
    generation = effective_generation(src)
    if generation is None:
        raise GenerationError(
            f"group {group_id!r}: {src} has no readable .wal-generation.json and no line names "
            "a generation; there is nothing a replica could verify - dump the group and publish "
            "the dump"
        )
    dest = repo.resolve() / encode_group(group_id)
    previous = effective_generation(dest) if dest.is_dir() else None
    if previous is not None and previous != generation and not reset:
        raise GenerationError(
            f"the repository's copy of group {group_id!r} has generation {previous!r}, the "
            f"stream being published has {generation!r} (the stream was dumped or replaced); "
            "pass --reset to replace the publication - every replica will rebuild the group"
        )
    result = PublishResult(
        group_id=group_id,
        repo=str(top),
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
    wanted = {s.path.name for s in segments}
    for old in list_segments(dest):
        if old.path.name not in wanted:
            raise StreamError(
                f"the repository's copy of group {group_id!r} holds {old.path.name}, which the "
                f"stream no longer has; a stream is append-only - publish with --reset"
            )
    for seg in segments:
        target = dest / seg.path.name
        have = target.stat().st_size if target.exists() else -1
        if have == seg.path.stat().st_size:
            continue
        data = _complete(seg.path.read_bytes())
        if len(data) == have:
            continue
        if len(data) < have:
            raise StreamError(
                f"the repository's copy of {seg.path.name} (group {group_id!r}) is longer than "
                "the stream's; a stream is append-only - publish with --reset"
            )
        _check_lines(group_id, seg.path.name, data[max(have, 0) :], generation)
        atomic_write(target, data)
        result.files_copied += 1
        result.bytes_copied += len(data)
    # The generation always travels, even when the workspace's own sidecar was lost.
    if read_generation(dest) != generation:
        write_generation(dest, generation)
    for name in (ONTOLOGY_SIDECAR_FILE, EMBEDDING_MODEL_FILE):
        if (src / name).is_file():
            data = (src / name).read_bytes()
            if _repo_copy(dest / name) != data:
                atomic_write(dest / name, data)
    if with_marks and (src / CHECKPOINTS_DIR).is_dir():
        shutil.copytree(src / CHECKPOINTS_DIR, dest / CHECKPOINTS_DIR, dirs_exist_ok=True)
    ignore = dest / ".gitignore"
    if not ignore.is_file() or ignore.read_text() != GITIGNORE:
        atomic_write(ignore, GITIGNORE.encode())
    last = list_segments(dest)[-1].path
    tail = read_tail(last)
    result.max_seq = decode_line(tail.last_line).seq if tail.last_line is not None else None
    rel = os.path.relpath(dest, top)
    _git(top, "add", "-A", "--", rel)
    if _git(top, "diff", "--cached", "--quiet", "--", rel, check=False).returncode == 0:
        return result
    text = message or (
        f"lcg publish {group_id}: through seq {result.max_seq} (generation {generation})"
        + (" [reset]" if result.reset else "")
    )
    _git(top, "commit", "-q", "-m", text, "--", rel)
    result.committed = True
    result.commit = _git(top, "rev-parse", "HEAD").stdout.strip()
    return result
