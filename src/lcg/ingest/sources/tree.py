"""A source tree as chunks, and the plan that brings a group's copy of it up to date.

A folder given to ``lcg ingest`` is a *tree* named by the folder's own name: its files are
served as ``<name>/<path inside it>`` (``notes/ideas/today.md``), wherever the folder is and
however it was spelled, so the same folder given again is the same tree. A single file is a
tree of one, served under its name. Each chunk is named by its file and its text:
``<source_file>#<12 hex of its SHA-256>`` (``~2``, ``~3`` for repeats within the file), so an
edit renames exactly the chunks whose text changed, and a chunk's identity and hash say, from
the stream alone, what a source held.

What is stored of a file is removed only when the file is gone or left out by a rule that
holds from run to run (ignored, hidden, a link, binary, too large): a file or folder that
is there but could not be read this run (EACCES, EIO) keeps what the group holds of it, and
the scan names it (``Scan.kept``; ADR 0192).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import msgspec

from lcg.ingest.sources.chunking import DEFAULT_MAX_CHARS, chunk_document
from lcg.ingest.sources.discover import DEFAULT_MAX_FILE_BYTES, FoundFile, Skipped, discover
from lcg.ingest.sources.readers import Unreadable, read_in_tree

__all__ = [
    "LocalChunk",
    "LocalFile",
    "Scan",
    "ScanCache",
    "StoredChunk",
    "SyncPlan",
    "TreeScope",
    "is_source_chunk",
    "plan_sync",
    "scan_tree",
    "tree_scope",
]

#: What every chunk id of a source tree ends with.
_CHUNK_ID = re.compile(r"#[0-9a-f]{12}(~[0-9]+)?$")


class TreeScope(msgspec.Struct, frozen=True, kw_only=True):
    """Which of a group's episodes belong to a tree: those whose source starts with ``prefix``."""

    root: str
    label: str
    #: ``"<label>/"`` for a folder; ``"<label>:"`` for a single file (its source is ``label``).
    prefix: str


class LocalChunk(msgspec.Struct, frozen=True, kw_only=True):
    """A chunk as the file holds it now."""

    chunk_id: str
    source_file: str
    heading: str
    text: str
    content_hash: str


class LocalFile(msgspec.Struct, frozen=True, kw_only=True):
    """One file of the tree and its chunks."""

    path: str
    source_file: str
    size: int
    mtime_ns: int
    chunks: list[LocalChunk]


class Scan(msgspec.Struct, kw_only=True):
    """A tree as it is on disk now.

    ``kept``: the sources (a folder's ending in ``/``) that are there but could not be read
    this run; what the group holds of them is kept.
    """

    scope: TreeScope
    files: list[LocalFile] = []
    skipped: list[Skipped] = []
    ignored: int = 0
    kept: list[str] = []

    def keeps(self, source_file: str) -> bool:
        """Whether what the group holds of ``source_file`` stays although it was not read."""
        return any(
            source_file == k or (k.endswith("/") and source_file.startswith(k)) for k in self.kept
        )


class StoredChunk(msgspec.Struct, frozen=True, kw_only=True):
    """A chunk as the group holds it (an episode of the tree)."""

    episode_uuid: str
    chunk_id: str
    source_file: str
    content_hash: str


class SyncPlan(msgspec.Struct, kw_only=True):
    """What to add and remove so the group holds exactly the tree's chunks."""

    adds: list[LocalChunk] = []
    #: source file → uuids of its episodes to remove.
    removals: dict[str, list[str]] = {}
    files_new: int = 0
    files_changed: int = 0
    files_unchanged: int = 0
    files_removed: int = 0
    #: Files not read this run (an I/O error) whose stored chunks were kept.
    files_kept: int = 0


#: A previous scan's files by path, reused when size and modification time still match.
ScanCache = dict[str, LocalFile]


def tree_scope(root: Path) -> TreeScope:
    """The scope of the tree rooted at ``root`` (a folder or a single file)."""
    resolved = root.resolve()
    label = resolved.name or "root"
    prefix = f"{label}:" if resolved.is_file() else f"{label}/"
    return TreeScope(root=str(resolved), label=label, prefix=prefix)


def is_source_chunk(chunk_id: str, source_description: str, scope: TreeScope) -> str | None:
    """The source file of an episode of ``scope``'s tree (``None``: not one of its chunks)."""
    if not source_description.endswith(":" + chunk_id) or not _CHUNK_ID.search(chunk_id):
        return None
    source_file = source_description[: -len(chunk_id) - 1]
    if scope.prefix.endswith(":"):
        return source_file if source_file == scope.label else None
    return source_file if source_file.startswith(scope.prefix) else None


def _chunks_of(source_file: str, texts: list[tuple[str, str]]) -> list[LocalChunk]:
    out: list[LocalChunk] = []
    seen: dict[str, int] = {}
    for heading, text in texts:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        n = seen[digest] = seen.get(digest, 0) + 1
        suffix = "" if n == 1 else f"~{n}"
        out.append(
            LocalChunk(
                chunk_id=f"{source_file}#{digest[:12]}{suffix}",
                source_file=source_file,
                heading=heading,
                text=text,
                content_hash=digest,
            )
        )
    return out


def scan_tree(
    root: Path,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    cache: ScanCache | None = None,
) -> Scan:
    """Read and chunk every file of the tree at ``root``; ``cache`` spares unchanged files."""
    scope = tree_scope(root)
    found = discover(Path(scope.root), max_bytes=max_bytes)
    single = scope.prefix.endswith(":")

    def served(rel: str) -> str:
        # A file or folder of the tree ("" or "." is the root: the whole tree).
        if single:
            return scope.label
        return scope.prefix + ("" if rel == "." else rel)

    skipped = [Skipped(path=served(s.path), reason=s.reason) for s in found.skipped]
    scan = Scan(
        scope=scope, skipped=skipped, ignored=found.ignored, kept=[served(k) for k in found.kept]
    )
    for f in found.files:
        local = _read(f, served(f.rel), max_chars, max_bytes, cache)
        if isinstance(local, Unreadable):
            if not local.gone:
                scan.skipped.append(Skipped(path=served(f.rel), reason=local.reason))
            if local.kept:
                scan.kept.append(served(f.rel))
        elif local.chunks:
            scan.files.append(local)
    return scan


def _read(
    f: FoundFile, source_file: str, max_chars: int, max_bytes: int, cache: ScanCache | None
) -> LocalFile | Unreadable:
    held = cache.get(f.path) if cache is not None else None
    if held is not None and (held.size, held.mtime_ns) == (f.size, f.mtime_ns):
        return held
    doc = read_in_tree(Path(f.base), f.rel, max_bytes=max_bytes, defaults=f.defaults)
    if isinstance(doc, Unreadable):
        return doc
    pieces = [(c.heading, c.text) for c in chunk_document(doc, max_chars)]
    local = LocalFile(
        path=f.path,
        source_file=source_file,
        size=f.size,
        mtime_ns=f.mtime_ns,
        chunks=_chunks_of(source_file, pieces),
    )
    if cache is not None:
        cache[f.path] = local
    return local


def plan_sync(scan: Scan, stored: list[StoredChunk]) -> SyncPlan:
    """The adds and removals that make ``stored`` hold exactly ``scan``'s chunks.

    A stored chunk is kept only if the tree still has a chunk of that id and text, or its
    file could not be read this run (``scan.keeps``); a second copy of a kept chunk (left by
    an interrupted run elsewhere) is removed too.
    """
    held: dict[str, dict[str, list[StoredChunk]]] = {}
    for s in stored:
        held.setdefault(s.source_file, {}).setdefault(s.chunk_id, []).append(s)
    plan = SyncPlan()
    local_files = {f.source_file for f in scan.files}
    for f in scan.files:
        have = held.get(f.source_file, {})
        changed = False
        wanted: set[str] = set()
        for c in f.chunks:
            wanted.add(c.chunk_id)
            copies = have.get(c.chunk_id, [])
            keep = next((s for s in copies if s.content_hash == c.content_hash), None)
            if keep is None:
                plan.adds.append(c)
                changed = True
            extra = [s.episode_uuid for s in copies if s is not keep]
            if extra:
                plan.removals.setdefault(f.source_file, []).extend(extra)
                changed = True
        for chunk_id, copies in have.items():
            if chunk_id not in wanted:
                plan.removals.setdefault(f.source_file, []).extend(s.episode_uuid for s in copies)
                changed = True
        if not have:
            plan.files_new += 1
        elif changed:
            plan.files_changed += 1
        else:
            plan.files_unchanged += 1
    for source_file, chunks in sorted(held.items()):
        if source_file in local_files:
            continue
        if scan.keeps(source_file):
            plan.files_kept += 1
        else:
            plan.files_removed += 1
            plan.removals[source_file] = [s.episode_uuid for c in chunks.values() for s in c]
    return plan
