"""A source tree as chunks, and the plan that brings a group's copy of it up to date.

A folder given to ``lcg ingest`` is a *tree*, known by its resolved absolute root (with the
group; ``registry``), and served under its *label*: its files as ``<label>/<path inside
it>`` (``notes/ideas/today.md``). The label is the folder's own name, or ``<name>~2``,
``<name>~3``… when another source of the group already has that name (``source_label``;
ADR 0200). A single file is a tree of one, served as its label (``README.md``,
``README~2.md``). A sync may cover only a part of a tree (``within``: a file or folder inside
it, read under the tree's own ignore rules) and leaves out the folders that are sources of
their own (``exclude``), so a file belongs to one source. Each chunk is named by its file
and its text:
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

from lcg.events import chunk_file
from lcg.ingest.declared import FileDeclarations, declare_file
from lcg.ingest.sources.chunking import DEFAULT_MAX_CHARS, chunk_document
from lcg.ingest.sources.discover import (
    DEFAULT_MAX_FILE_BYTES,
    Discovery,
    FoundFile,
    Skipped,
    discover,
)
from lcg.ingest.sources.readers import Unreadable, read_in_tree

__all__ = [
    "LocalChunk",
    "LocalFile",
    "Scan",
    "ScanCache",
    "StoredChunk",
    "SyncPlan",
    "TreeScope",
    "chunk_source",
    "is_source_chunk",
    "plan_sync",
    "prefix_of",
    "scan_tree",
    "source_label",
    "tree_scope",
    "under",
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
    #: What the file declares (``declare_file``, ADR 0203): read with its text, so a scan
    #: cache keeps it with the chunks.
    declarations: FileDeclarations | None = None


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


def tree_scope(root: Path, label: str | None = None, *, file: bool | None = None) -> TreeScope:
    """The scope of the tree rooted at ``root`` (a folder or a single file), served under
    ``label`` (default: its own name); ``file`` says its kind (default: what is on disk)."""
    resolved = root.resolve()
    label = label or resolved.name or "root"
    single = resolved.is_file() if file is None else file
    prefix = f"{label}:" if single else f"{label}/"
    return TreeScope(root=str(resolved), label=label, prefix=prefix)


def source_label(name: str, *, file: bool, taken: set[str]) -> str:
    """The label of a new source named ``name``: the name itself, else the first free of
    ``name~2``, ``name~3``… (a file's number goes before its extension: ``README~2.md``)."""
    name = name or "root"
    if name not in taken:
        return name
    stem, ext = name, ""
    if file:
        dot = name.rfind(".")
        if dot > 0:
            stem, ext = name[:dot], name[dot:]
    n = 2
    while f"{stem}~{n}{ext}" in taken:
        n += 1
    return f"{stem}~{n}{ext}"


def under(rel: str, part: str) -> bool:
    """Whether the path ``rel`` (inside a tree) is ``part`` or inside it (``""``: the whole
    tree)."""
    return not part or rel == part or rel.startswith(part + "/")


def chunk_source(chunk_id: str, source_description: str) -> str | None:
    """The source file of an episode that is a chunk of a source tree (``None``: not one)."""
    return chunk_file(chunk_id, source_description) if _CHUNK_ID.search(chunk_id) else None


def prefix_of(source_file: str) -> str:
    """The prefix of the tree a source file is served from (``notes/``, or ``a.md:`` for a
    file served alone): labels are one path component."""
    label, slash, _ = source_file.partition("/")
    return f"{label}/" if slash else f"{label}:"


def is_source_chunk(chunk_id: str, source_description: str, scope: TreeScope) -> str | None:
    """The source file of an episode of ``scope``'s tree (``None``: not one of its chunks)."""
    source_file = chunk_source(chunk_id, source_description)
    if source_file is None:
        return None
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
    scope: TreeScope | None = None,
    within: str = "",
    exclude: tuple[str, ...] = (),
    max_chars: int = DEFAULT_MAX_CHARS,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    cache: ScanCache | None = None,
) -> Scan:
    """Read and chunk every file of the tree at ``root`` (served as ``scope``, default its
    own name); ``cache`` spares unchanged files.

    ``within`` (a path inside the tree) reads only that file or folder, under the whole
    tree's ignore rules; ``exclude`` (paths inside the tree: other sources' roots) leaves
    those out, each named.
    """
    scope = scope or tree_scope(root)
    found = discover(Path(scope.root), max_bytes=max_bytes)
    single = scope.prefix.endswith(":")
    if within or exclude:
        _narrow(found, within, exclude, file=bool(within) and (Path(scope.root) / within).is_file())

    def served(rel: str) -> str:
        # A file or folder of the tree ("" or "." is the root: the whole tree).
        if single:
            return scope.label
        return scope.prefix + ("" if rel == "." else rel)

    skipped = [Skipped(path=served(s.path), reason=s.reason) for s in found.skipped]
    skipped += [
        Skipped(path=served(x), reason="a source of its own: synced there, not in this tree")
        for x in exclude
        if under(x, within) or under(within, x)
    ]
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


def _narrow(found: Discovery, within: str, exclude: tuple[str, ...], *, file: bool) -> None:
    """Keep of ``found`` what is ``within`` and not in an excluded path; a ``file`` named by
    ``within`` that the walk passed over (an ignore rule, a hidden folder) is named."""

    def near(path: str) -> bool:
        return under(path, within) or under(within, path)

    files = [f for f in found.files if under(f.rel, within)]
    files = [f for f in files if not any(under(f.rel, x) for x in exclude)]
    skipped = [s for s in found.skipped if near(s.path)]
    skipped = [s for s in skipped if not any(under(s.path, x) for x in exclude)]
    if file and not files and not skipped:
        reason = "left out by the tree's ignore rules, or in a hidden folder"
        skipped.append(Skipped(path=within, reason=reason))
    found.files = files
    found.skipped = skipped


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
        declarations=declare_file(f.rel, doc.text),
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
