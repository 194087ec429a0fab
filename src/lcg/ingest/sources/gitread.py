"""A git repository's history, read as data: no ``git`` process, nothing a repository configures.

A tree handed to lcg may carry its own git configuration (a ``core.fsmonitor``, a clean filter,
hooks, a ``core.worktree``, an ``include.path``), and every one of those names a command git
would run. So lcg never runs git on a tree it reads (ADR 0191): ``GitRepository`` reads the
object files themselves - loose objects inflated here, packs through dulwich's pack reader
(``dulwich.pack``: index and data files only, no config, hooks or filters) - and parses commits
and trees here, leniently. Every file under ``.git`` is opened as untrusted input
(``lcg.events.open_regular``: no symlink, regular files only, a FIFO never blocks).

Only the plain layout is read: a work tree whose ``.git`` is a real directory, format version
0 or 1, no ``extensions``, no ``core.worktree`` or ``core.bare``, no ``include``/``includeIf``,
not shallow, no alternates, no grafts, not a linked work tree. Anything else - a ``.git`` file,
a folder that is its own git directory, SHA-256 objects, an unreadable file - is not opened
(``GitRepository.open`` returns ``None``) and callers fall back to what the file system says.

``iter_commits`` walks the history newest first (by committer time, as ``git log`` does),
each commit once, at most ``GIT_WALK_LIMIT`` commits and ``GIT_WALK_ENTRIES`` tree entries
read in all: a hostile history costs a bounded walk, never an unbounded one. A commit's times
are untrusted: one outside years 0001-9999 or with an impossible offset is ``None``.
"""

from __future__ import annotations

import hashlib
import heapq
import os
import stat
import zlib
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, BinaryIO, cast

import msgspec

from lcg.events import UnsafeFileError, open_regular, read_small
from lcg.ingest.sources.gitlayout import looks_like_gitdir, plain_layout

if TYPE_CHECKING:
    from dulwich.objects import ObjectID
    from dulwich.pack import Pack, PackData, PackIndex

__all__ = [
    "GIT_WALK_ENTRIES",
    "GIT_WALK_LIMIT",
    "GitCommit",
    "GitRepository",
    "blob_id",
]

#: The most commits one walk reads; older history is not looked at.
GIT_WALK_LIMIT = 10_000
#: The most tree entries one walk reads (the diffs of its commits together).
GIT_WALK_ENTRIES = 2_000_000
#: The largest object (commit or tree, inflated) read; a larger one ends the walk.
MAX_OBJECT_BYTES = 64 * 1024 * 1024
#: The largest working file hashed; a larger one counts as changed.
MAX_HASHED_BYTES = 64 * 1024 * 1024
#: The largest ``HEAD``, ref or ``packed-refs`` file read.
_MAX_REF_BYTES = 4096
_MAX_PACKED_REFS_BYTES = 64 * 1024 * 1024
#: Symbolic refs followed from ``HEAD`` before giving up (git stops at 5 too).
_MAX_SYMREF_DEPTH = 5

_COMMIT, _TREE, _BLOB = 1, 2, 3
_KIND_BY_NAME = {b"commit": _COMMIT, b"tree": _TREE, b"blob": _BLOB, b"tag": 4}
_TREE_CACHE = 4096


class GitCommit(msgspec.Struct, frozen=True, kw_only=True):
    """One commit as read from the object store; times are ``None`` when unusable."""

    #: The commit's object id (hex).
    sha: str
    #: Its parents' object ids, first parent first.
    parents: tuple[str, ...]
    #: When it was committed (UTC); ``None`` if its committer line names no usable time.
    committed_at: datetime | None
    #: When it was authored (UTC); ``None`` likewise.
    authored_at: datetime | None
    #: The author's UTC offset in minutes as the commit states it (``None`` with no time).
    author_offset: int | None = None
    #: The author line's name and address (``Name <address>``), as text.
    author: str
    #: The message, as text (invalid UTF-8 replaced).
    message: str
    #: The paths (relative to the work tree, ``/``-separated) whose content or kind differs
    #: from the first parent's: added, changed or removed. A root commit touches every file
    #: it holds; a merge touches none (as ``git log`` lists them) unless the walk diffs merges.
    touched: tuple[str, ...]


def blob_id(path: Path) -> bytes | None:
    """The git blob id (SHA-1, hex) of the regular file at ``path``; ``None`` if it cannot be
    read as one (missing, a symlink, not regular, larger than ``MAX_HASHED_BYTES``, changing)."""
    try:
        fh = open_regular(path, max_bytes=MAX_HASHED_BYTES)
    except (OSError, UnsafeFileError):
        return None
    with fh:
        size = os.fstat(fh.fileno()).st_size
        digest = hashlib.sha1(b"blob %d\x00" % size, usedforsecurity=False)
        left = size + 1
        while left > 0:
            block = fh.read(min(left, 1 << 20))
            if not block:
                break
            digest.update(block)
            left -= len(block)
    # Exactly ``size`` bytes were read: the file did not grow or shrink while hashed.
    return digest.hexdigest().encode() if left == 1 else None


def _time(ident: bytes) -> tuple[int | None, datetime | None]:
    """(the raw seconds for ordering, the UTC time) of ``Name <mail> SECONDS +HHMM``."""
    raw, when, _ = _zoned(ident)
    return raw, when


def _zoned(ident: bytes) -> tuple[int | None, datetime | None, int | None]:
    """``_time`` and the offset in minutes (``None`` with no usable time)."""
    _, sep, rest = ident.rpartition(b">")
    fields = rest.split()
    if not sep or len(fields) != 2:
        return None, None, None
    seconds, offset = fields
    if not seconds.isdigit() or len(seconds) > 18:
        return None, None, None
    raw = int(seconds)
    if (
        len(offset) != 5
        or offset[:1] not in (b"+", b"-")
        or not offset[1:].isdigit()
        or int(offset[1:3]) > 23
        or int(offset[3:5]) > 59
    ):
        return raw, None, None
    try:
        when = datetime.fromtimestamp(raw, UTC)
    except (OverflowError, OSError, ValueError):
        return raw, None, None
    minutes = int(offset[1:3]) * 60 + int(offset[3:5])
    return raw, when, -minutes if offset[:1] == b"-" else minutes


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _object_id(text: bytes) -> bytes:
    """``text`` as an object id (40 lowercase hex digits); ``ValueError`` if it is none."""
    oid = text.strip().lower()
    if len(oid) != 40 or oid.strip(b"0123456789abcdef"):
        raise ValueError(f"{text[:80]!r} is not an object id")
    return oid


def _is_tree(mode: int) -> bool:
    return stat.S_ISDIR(mode)


def _is_file(mode: int) -> bool:
    # Regular, executable and symlink entries are blobs; a gitlink (a submodule) is not.
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


class _Budget:
    """What is left of a walk's tree entries."""

    def __init__(self, entries: int) -> None:
        self.left = entries


class _Parsed(msgspec.Struct, frozen=True):
    tree: bytes
    parents: tuple[bytes, ...]
    order: int
    committed_at: datetime | None
    authored_at: datetime | None
    author_offset: int | None
    author: str
    message: str


def _parse_commit(data: bytes) -> _Parsed | None:
    head, _, message = data.partition(b"\n\n")
    tree = b""
    parents: list[bytes] = []
    author = committer = b""
    for line in head.split(b"\n"):
        key, _, value = line.partition(b" ")
        if key == b"tree" and not tree:
            tree = value
        elif key == b"parent":
            parents.append(value)
        elif key == b"author" and not author:
            author = value
        elif key == b"committer" and not committer:
            committer = value
    try:
        ids = (_object_id(tree), *(_object_id(p) for p in parents))
    except ValueError:
        return None
    order, committed_at = _time(committer)
    _, authored_at, author_offset = _zoned(author)
    name = author.rpartition(b">")[0] + b">" if b">" in author else author
    return _Parsed(
        ids[0],
        ids[1:],
        order or 0,
        committed_at,
        authored_at,
        author_offset,
        _text(name),
        _text(message),
    )


class GitRepository:
    """A work tree's repository, opened for reading (``open``); close it (or use ``with``)."""

    def __init__(self, top: Path, gitdir: Path) -> None:
        #: The work tree's top directory (real path).
        self.top = top
        self.gitdir = gitdir
        self._objects = gitdir / "objects"
        self._packs: list[Pack] | None = None
        self._files: list[BinaryIO] = []
        self._trees: dict[bytes, dict[bytes, tuple[int, bytes]]] = {}
        # commit → its tree, for the diff against a parent parsed earlier in the walk.
        self._tree_of: dict[bytes, bytes] = {}
        #: Whether the last walk ended at an object or file it could not read (not a bound).
        self.walk_failed = False

    @classmethod
    def open(cls, folder: Path) -> GitRepository | None:
        """The repository whose work tree holds ``folder``; ``None`` when there is none, or
        it is anything but the plain layout this module reads (the module docstring)."""
        try:
            here = Path(os.path.realpath(folder))
        except (OSError, ValueError):
            return None
        for top in (here, *here.parents):
            dotgit = top / ".git"
            try:
                mode = os.lstat(dotgit).st_mode
            except FileNotFoundError:
                if looks_like_gitdir(top):
                    return None  # a folder that is its own git directory: git's, not ours
                continue
            except OSError:
                return None
            if not stat.S_ISDIR(mode) or not plain_layout(dotgit):
                return None  # a .git file or symlink, or a layout not read here
            return cls(top, dotgit)
        return None

    def __enter__(self) -> GitRepository:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release the pack files."""
        for pack in self._packs or []:
            pack.close()
        for fh in self._files:
            fh.close()
        self._packs, self._files = [], []

    # -- objects -------------------------------------------------------------------------

    def _pack_list(self) -> list[Pack]:
        if self._packs is not None:
            return self._packs
        self._packs = []
        folder = self._objects / "pack"
        try:
            names = sorted(os.listdir(folder))
        except FileNotFoundError:
            return self._packs
        for name in names:
            if not name.endswith(".pack") or name[:-5] + ".idx" not in names:
                continue
            try:
                pack = self._open_pack(folder / name, folder / (name[:-5] + ".idx"))
            except Exception:  # a link, a FIFO, a damaged index: that pack is not read
                continue
            self._packs.append(pack)
        return self._packs

    def _open_pack(self, data_path: Path, idx_path: Path) -> Pack:
        from dulwich.object_format import SHA1
        from dulwich.pack import Pack, PackData, load_pack_index_file

        # Both files opened here, guarded (a FIFO or a link is refused, not waited on);
        # dulwich maps them and never opens anything by name.
        idx_file = open_regular(idx_path)
        self._files.append(idx_file)
        data_file = open_regular(data_path)
        self._files.append(data_file)

        def data() -> PackData:
            return PackData(data_path, SHA1, file=data_file)

        def index() -> PackIndex:
            return load_pack_index_file(idx_path, idx_file, SHA1)

        return Pack.from_lazy_objects(data, index)

    def _raw(self, oid: bytes) -> tuple[int, bytes]:
        """(kind, content) of object ``oid`` (hex); ``KeyError`` if absent."""
        key = cast("ObjectID", oid)
        for pack in self._pack_list():
            try:
                kind, data = pack.get_raw(key)
            except KeyError:
                continue
            if len(data) > MAX_OBJECT_BYTES:
                raise ValueError(f"object {oid.decode()} is larger than read")
            return kind, data
        hexid = oid.decode()
        path = self._objects / hexid[:2] / hexid[2:]
        try:
            compressed = read_small(path, MAX_OBJECT_BYTES)
        except NotADirectoryError:
            compressed = None
        if compressed is None:
            raise KeyError(hexid)
        inflate = zlib.decompressobj()
        data = inflate.decompress(compressed, MAX_OBJECT_BYTES + 64)
        header, _, body = data.partition(b"\x00")
        name, _, size = header.partition(b" ")
        if name not in _KIND_BY_NAME or not size.isdigit() or int(size) != len(body):
            raise ValueError(f"loose object {hexid} is malformed or larger than read")
        return _KIND_BY_NAME[name], body

    def _tree(self, oid: bytes, budget: _Budget | None = None) -> dict[bytes, tuple[int, bytes]]:
        cached = self._trees.get(oid)
        if cached is None:
            kind, data = self._raw(oid)
            if kind != _TREE:
                raise ValueError(f"{oid.decode()} is not a tree")
            from dulwich.objects import parse_tree

            cached = {name: (mode, sha) for name, mode, sha in parse_tree(data, 20)}
            if len(self._trees) >= _TREE_CACHE:
                self._trees.clear()
            self._trees[oid] = cached
        if budget is not None:
            budget.left -= len(cached)
            if budget.left < 0:
                raise _Exhausted
        return cached

    def _head(self) -> bytes | None:
        """The commit ``HEAD`` names (hex), ``None`` for an unborn branch."""
        ref = b"HEAD"
        for _ in range(_MAX_SYMREF_DEPTH):
            value = self._ref(ref)
            if value is None:
                return None
            if value.startswith(b"ref: "):
                ref = value[5:].strip()
                if not ref.startswith(b"refs/") or b".." in ref.split(b"/"):
                    raise ValueError(f"HEAD names {ref!r}, not a ref")
                continue
            return _object_id(value)
        raise ValueError("HEAD's symbolic refs go round")

    def _ref(self, name: bytes) -> bytes | None:
        loose = read_small(self.gitdir / os.fsdecode(name), _MAX_REF_BYTES)
        if loose is not None:
            return loose.strip()
        if name == b"HEAD":
            return None
        packed = read_small(self.gitdir / "packed-refs", _MAX_PACKED_REFS_BYTES) or b""
        for line in packed.splitlines():
            sha, _, ref = line.partition(b" ")
            if ref == name:
                return sha
        return None

    # -- reading -------------------------------------------------------------------------

    def head_commit(self) -> str | None:
        """The commit ``HEAD`` names (hex); ``None`` for an unborn branch or a damaged ref."""
        try:
            head = self._head()
        except Exception:  # a damaged or hostile ref: no history
            return None
        return head.decode() if head is not None else None

    def head_blobs(self, paths: Iterable[str]) -> dict[str, bytes]:
        """The blob id (hex) each of ``paths`` (``/``-separated, relative to ``top``) has in
        ``HEAD``'s tree; paths not there as a file are left out."""
        try:
            head = self._head()
            if head is None:
                return {}
            kind, data = self._raw(head)
            parsed = _parse_commit(data) if kind == _COMMIT else None
            if parsed is None:
                return {}
            root = parsed.tree
            found: dict[str, bytes] = {}
            for path in paths:
                blob = self._lookup(root, os.fsencode(path).split(b"/"))
                if blob is not None:
                    found[path] = blob
            return found
        except Exception:  # a damaged file or object (dulwich's errors included): none known
            return {}

    def _lookup(self, tree: bytes, parts: list[bytes]) -> bytes | None:
        for i, part in enumerate(parts):
            entry = self._tree(tree).get(part)
            if entry is None:
                return None
            mode, oid = entry
            if i == len(parts) - 1:
                return oid if stat.S_ISREG(mode) else None
            if not _is_tree(mode):
                return None
            tree = oid
        return None

    def iter_commits(
        self,
        limit: int = GIT_WALK_LIMIT,
        entries: int = GIT_WALK_ENTRIES,
        *,
        within: Iterable[str] | None = None,
        under: str | None = None,
        merges: bool = False,
    ) -> Iterator[GitCommit]:
        """The commits reachable from ``HEAD``, newest committer time first, each once: at
        most ``limit`` of them and ``entries`` tree entries read. The walk ends quietly at a
        bound, a missing or malformed object, or a damaged file (what was read stands), and
        says which in ``walk_failed``.

        ``within`` (paths relative to ``top``) limits ``touched`` to those paths, and the
        diffs to the folders that hold them: a walk for a few files reads few trees.
        ``under`` (a folder relative to ``top``, ``""`` the whole tree) limits them to the
        files inside it. ``merges``: a merge touches what differs from its first parent.
        """
        budget = _Budget(entries)
        self.walk_failed = False
        scope: _Scope | _Under | None = None
        if within is not None:
            scope = _Scope(within)
        elif under:
            scope = _Under(under)
        try:
            head = self._head()
            first = self._commit(head) if head is not None else None
        except Exception:  # an unreadable HEAD (any error of a damaged store): no history
            self.walk_failed = True
            return
        if head is None or first is None:
            return
        waiting, seen = {head: first}, {head}
        queue = [(-first.order, 0, head)]
        pushed = 0
        for _ in range(limit):
            if not queue:
                return
            oid = heapq.heappop(queue)[2]
            commit = waiting.pop(oid)
            try:
                for parent in commit.parents:
                    if parent in seen:
                        continue
                    seen.add(parent)
                    parsed = self._commit(parent)
                    if parsed is None:
                        continue  # a parent that is no commit: that line of history ends
                    pushed += 1
                    waiting[parent] = parsed
                    heapq.heappush(queue, (-parsed.order, pushed, parent))
                touched = self._touched(commit, budget, scope, merges)
            except _Exhausted:  # the budget spent: the walk ends here
                return
            except Exception:  # a damaged object: the walk ends here
                self.walk_failed = True
                return
            yield GitCommit(
                sha=oid.decode(),
                parents=tuple(p.decode() for p in commit.parents),
                committed_at=commit.committed_at,
                authored_at=commit.authored_at,
                author_offset=commit.author_offset,
                author=commit.author,
                message=commit.message,
                touched=touched,
            )

    def _commit(self, oid: bytes) -> _Parsed | None:
        try:
            kind, data = self._raw(oid)
        except KeyError:
            return None
        parsed = _parse_commit(data) if kind == _COMMIT else None
        if parsed is not None:
            self._tree_of[oid] = parsed.tree
        return parsed

    def _touched(
        self, commit: _Parsed, budget: _Budget, scope: _Scope | _Under | None, merges: bool
    ) -> tuple[str, ...]:
        if len(commit.parents) > 1 and not merges:
            return ()
        before: bytes | None = None
        if commit.parents:
            before = self._tree_of.get(commit.parents[0])
            if before is None:
                parent = self._commit(commit.parents[0])
                before = parent.tree if parent is not None else None
        out: list[bytes] = []
        # An explicit stack, not recursion: a tree 10,000 folders deep is data like any other.
        stack: list[tuple[bytes | None, bytes | None, bytes]] = [(before, commit.tree, b"")]
        while stack:
            old_id, new_id, prefix = stack.pop()
            old = self._tree(old_id, budget) if old_id is not None else {}
            new = self._tree(new_id, budget) if new_id is not None else {}
            for name in old.keys() | new.keys():
                a, b = old.get(name), new.get(name)
                if a == b:
                    continue
                path = prefix + name
                a_tree = a[1] if a is not None and _is_tree(a[0]) else None
                b_tree = b[1] if b is not None and _is_tree(b[0]) else None
                if (a_tree is not None or b_tree is not None) and (
                    scope is None or scope.descend(path + b"/")
                ):
                    stack.append((a_tree, b_tree, path + b"/"))
                a_file = a is not None and _is_file(a[0])
                b_file = b is not None and _is_file(b[0])
                if (a_file or b_file) and (scope is None or scope.wants(path)):
                    out.append(path)
        return tuple(sorted(os.fsdecode(p) for p in out))


class _Scope:
    """The paths a walk reports, and the folders (``a/``, ``a/b/``) that hold them."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.files = {os.fsencode(p) for p in paths}
        self.folders = {
            f.rsplit(b"/", k)[0] + b"/" for f in self.files for k in range(1, f.count(b"/") + 1)
        }

    def descend(self, folder: bytes) -> bool:
        return folder in self.folders

    def wants(self, path: bytes) -> bool:
        return path in self.files


class _Under:
    """The files inside one folder (``a/b``), and the folders on the way to it."""

    def __init__(self, folder: str) -> None:
        self.prefix = os.fsencode(folder.strip("/")) + b"/"

    def descend(self, folder: bytes) -> bool:
        return self.prefix.startswith(folder) or folder.startswith(self.prefix)

    def wants(self, path: bytes) -> bool:
        return path.startswith(self.prefix)


class _Exhausted(Exception):
    """The walk's budget of tree entries is spent."""
