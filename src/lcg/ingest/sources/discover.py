"""Finding the files of a source tree: an iterative walk from the root's descriptor, with git's
ignore rules, hidden entries passed over, links never followed.

Every folder is opened relative to the tree's root one name at a time, never through a link
(``opening.open_folder``), and listed from its descriptor; the walk keeps a list of folders to
visit, not a call stack, and holds two descriptors at most, so neither a deep tree nor a long
path can stop it. A tree's ``.gitignore`` files (and ``.lcgignore`` files, same syntax) are
read at every level (``ignore.IgnoreFile``); a deeper file's decision overrides a shallower
one's, as in git. ``.git/`` and every hidden folder and file are passed over (counted as
ignored). Everything else left out is *skipped*: counted and named with its reason, never an
error that stops the walk — what no ignore line decides but people do not mean as knowledge
(``defaults``: lock files, editor backups, minified files, SVG), a symbolic link (never
followed, wherever it points), a FIFO, socket or device, a file too large to be notes, a file
of a format the table of formats lists as not read (``formats.Unread``: images, archives,
PDF; named with its reason, never opened), a name that is not UTF-8, a folder nested deeper
than ``MAX_DEPTH``, a folder that cannot be listed this run (its stored chunks kept).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import msgspec

from lcg.ingest.sources.defaults import default_skip
from lcg.ingest.sources.formats import Unread, entry_of
from lcg.ingest.sources.ignore import IgnoreFile
from lcg.ingest.sources.opening import (
    DEFAULT_MAX_FILE_BYTES,
    LINK_REASON,
    Refusal,
    kind_name,
    open_folder,
    read_at,
    refusal_of,
    shown,
    too_large,
)

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "IGNORE_FILES",
    "MAX_DEPTH",
    "MAX_IGNORE_FILE_BYTES",
    "Discovery",
    "FoundFile",
    "Skipped",
    "discover",
]

#: The ignore files read at every level of a tree, in the order their rules apply.
IGNORE_FILES = (".gitignore", ".lcgignore")
#: Folders nested deeper than this below the root are not read (skipped, named).
MAX_DEPTH = 256
#: The most of one ignore file that is read; rules past it do not apply (named when hit).
MAX_IGNORE_FILE_BYTES = 256 * 1024


class Skipped(msgspec.Struct, frozen=True, kw_only=True):
    """A file (or folder) left out, and why."""

    path: str
    reason: str


class FoundFile(msgspec.Struct, frozen=True, kw_only=True):
    """A candidate file: its folder of reference, its path below it, and its stat."""

    #: The folder ``rel`` is relative to (the tree's root, or a single file's folder).
    base: str
    rel: str
    path: str
    size: int
    mtime_ns: int
    #: Whether the default skips judge it when read (no ignore line re-included it).
    defaults: bool = True


class Discovery(msgspec.Struct, kw_only=True):
    """What a walk found: candidate files (sorted by ``rel``), the skipped, the ignored count.

    ``kept`` lists the paths (``rel``; a folder's with a trailing ``/``) that exist but could
    not be read this run: what the group holds of them stays.
    """

    files: list[FoundFile] = []
    skipped: list[Skipped] = []
    ignored: int = 0
    kept: list[str] = []

    def skip(self, rel: str, refusal: Refusal, *, folder: bool = False) -> None:
        """Name ``rel`` as skipped; remember it as kept if the refusal says so."""
        self.skipped.append(Skipped(path=rel or ".", reason=refusal.reason))
        if refusal.kept:
            self.kept.append(f"{rel}/" if folder and rel else rel)


class _Rules:
    """The ignore files that apply inside one folder: (folder's path in the tree, patterns)."""

    def __init__(self, layers: list[tuple[str, IgnoreFile]]) -> None:
        self.layers = layers

    def below(self, out: Discovery, dir_fd: int, rel: str) -> _Rules | None:
        """These rules plus the folder's own ignore files (``None``: one cannot be read now)."""
        lines: list[str] = []
        for name in IGNORE_FILES:
            where = _join(rel, name)
            got = read_at(dir_fd, name, MAX_IGNORE_FILE_BYTES, head=True)
            if isinstance(got, Refusal):
                if got.kept:
                    # Without its rules the folder could leak what it means to keep out.
                    out.skip(rel, Refusal(reason=f"{where}: {got.reason}", kept=True), folder=True)
                    return None
                if not got.gone:
                    out.skip(where, Refusal(reason=f"{got.reason}: its rules are not used"))
                continue
            if len(got) > MAX_IGNORE_FILE_BYTES:
                got = got[:MAX_IGNORE_FILE_BYTES].rpartition(b"\n")[0]  # whole lines only
                out.skip(
                    where,
                    Refusal(
                        reason=f"ignore file larger than {MAX_IGNORE_FILE_BYTES:,} bytes: "
                        "only the rules in its first part are used"
                    ),
                )
            lines.extend(got.decode("utf-8", "replace").splitlines())
        if not lines:
            return self
        rules = IgnoreFile(lines)
        return _Rules([*self.layers, (rel, rules)]) if rules else self

    def decide(self, rel: str, *, is_dir: bool) -> bool | None:
        """Whether ``rel`` (a path in the tree) is ignored (``False``: re-included, ``None``:
        no line decides): the deepest deciding rule wins."""
        for base, rules in reversed(self.layers):
            decided = rules.decide(rel[len(base) + 1 :] if base else rel, is_dir=is_dir)
            if decided is not None:
                return decided
        return None


def _join(base: str, name: str) -> str:
    return f"{base}/{name}" if base else name


def discover(root: Path, *, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Discovery:
    """Every candidate file under ``root`` (or ``root`` itself when it is a file).

    ``root`` itself is taken as given (the user named it, through a link or not); nothing
    below it is reached through a link.
    """
    out = Discovery()
    try:
        st = os.stat(root)
    except OSError as exc:
        out.skip("", refusal_of(exc), folder=True)
        return out
    if not stat.S_ISDIR(st.st_mode):
        if not stat.S_ISREG(st.st_mode):
            out.skip(root.name, Refusal(reason=f"not a regular file ({kind_name(st.st_mode)})"))
        elif st.st_size > max_bytes:
            out.skip(root.name, Refusal(reason=too_large(st.st_size, max_bytes)))
        elif isinstance(fmt := entry_of(root.name), Unread):
            out.skip(root.name, Refusal(reason=fmt.why(root.name)))
        else:
            # Named on the command line: read as it is, no default skip.
            out.files.append(_found(root.parent, root.name, st, defaults=False))
        return out
    try:
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        out.skip("", refusal_of(exc), folder=True)
        return out
    try:
        _walk(out, root, root_fd, max_bytes)
    finally:
        os.close(root_fd)
    out.files.sort(key=lambda f: f.rel)
    return out


def _found(base: Path, rel: str, st: os.stat_result, *, defaults: bool = True) -> FoundFile:
    return FoundFile(
        base=str(base),
        rel=rel,
        path=str(base / rel),
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        defaults=defaults,
    )


#: A folder still to visit: its components below the root and the rules of its parent.
_Pending = tuple[tuple[str, ...], _Rules]


def _walk(out: Discovery, root: Path, root_fd: int, max_bytes: int) -> None:
    pending: list[_Pending] = [((), _Rules([]))]
    while pending:
        parts, parent_rules = pending.pop()
        rel = "/".join(parts)
        try:
            dir_fd = open_folder(root_fd, parts)
        except OSError as exc:
            refusal = refusal_of(exc)
            if refusal.gone and _is_link(root_fd, parts):
                refusal = Refusal(reason=LINK_REASON)  # a folder swapped for a link
            out.skip(rel, refusal, folder=True)
            continue
        try:
            rules = parent_rules.below(out, dir_fd, rel)
            if rules is None:
                continue
            folders = _list(out, root, dir_fd, rel, rules, max_bytes)
        finally:
            os.close(dir_fd)
        for name in reversed(folders):
            child = (*parts, name)
            if len(child) > MAX_DEPTH:
                out.skip(
                    "/".join(child),
                    Refusal(reason=f"too deep: more than {MAX_DEPTH} nested folders (not read)"),
                )
            else:
                pending.append((child, rules))


def _is_link(root_fd: int, parts: tuple[str, ...]) -> bool:
    try:
        parent = open_folder(root_fd, parts[:-1])
    except OSError:
        return False
    try:
        return stat.S_ISLNK(os.stat(parts[-1], dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return False
    finally:
        os.close(parent)


def _list(
    out: Discovery, root: Path, dir_fd: int, rel: str, rules: _Rules, max_bytes: int
) -> list[str]:
    """Consider the entries of one folder; return its subfolders' names (sorted)."""
    try:
        with os.scandir(dir_fd) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        out.skip(rel, refusal_of(exc), folder=True)
        return []
    folders: list[str] = []
    for entry in entries:
        if entry.name.startswith("."):
            # .git/, .lcg/, editors' swap and lock files: never notes.
            out.ignored += 1
            continue
        child = _join(rel, entry.name)
        if shown(entry.name) != entry.name:
            # Undecodable bytes (held as surrogate escapes) cannot name a source.
            out.skip(_join(rel, shown(entry.name)), Refusal(reason="name is not UTF-8 (not read)"))
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError as exc:
            refusal = refusal_of(exc)
            if not refusal.gone:
                out.skip(child, refusal)
            continue
        is_dir = stat.S_ISDIR(st.st_mode)
        decided = rules.decide(child, is_dir=is_dir)
        if decided:
            out.ignored += 1
        elif is_dir:
            folders.append(entry.name)
        elif stat.S_ISLNK(st.st_mode):
            out.skip(child, Refusal(reason=LINK_REASON))
        elif not stat.S_ISREG(st.st_mode):
            out.skip(child, Refusal(reason=f"not a regular file ({kind_name(st.st_mode)})"))
        elif decided is None and (why := default_skip(entry.name)) is not None:
            out.skip(child, Refusal(reason=why))
        elif st.st_size > max_bytes:
            out.skip(child, Refusal(reason=too_large(st.st_size, max_bytes)))
        elif isinstance(fmt := entry_of(entry.name), Unread):
            out.skip(child, Refusal(reason=fmt.why(entry.name)))
        else:
            out.files.append(_found(root, child, st, defaults=decided is None))
    return folders
