"""Finding the files of a source tree: recursive, with git's ignore rules, hidden folders skipped.

A tree's ``.gitignore`` files (and ``.lcgignore`` files, same syntax) are read at every level
with ``pathspec``'s implementation of git's rules; a deeper file's decision overrides a
shallower one's, as in git. ``.git/``, every hidden folder and hidden file, and symbolic links
to folders (a loop would never end) are passed over. A file too large to be notes, or a folder
that cannot be listed, is *skipped*: counted and named, never an error that stops the walk.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pathspec

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "IGNORE_FILES",
    "Discovery",
    "FoundFile",
    "Skipped",
    "discover",
]

#: Files larger than this are skipped (notes and code are far smaller; a dump is not notes).
DEFAULT_MAX_FILE_BYTES = 2 * 1024 * 1024
#: The ignore files read at every level of a tree, in the order their rules apply.
IGNORE_FILES = (".gitignore", ".lcgignore")


class Skipped(msgspec.Struct, frozen=True, kw_only=True):
    """A file (or folder) left out, and why."""

    path: str
    reason: str


class FoundFile(msgspec.Struct, frozen=True, kw_only=True):
    """A candidate file: where it is, its path inside the tree, and its stat."""

    path: str
    rel: str
    size: int
    mtime_ns: int


class Discovery(msgspec.Struct, kw_only=True):
    """What a walk found: candidate files (sorted by ``rel``), the skipped, the ignored count."""

    files: list[FoundFile] = []
    skipped: list[Skipped] = []
    ignored: int = 0


class _Rules:
    """The ignore specs that apply inside one folder: (folder's path in the tree, spec)."""

    def __init__(self, layers: list[tuple[str, pathspec.GitIgnoreSpec]]) -> None:
        self.layers = layers

    def below(self, folder: Path, rel: str) -> _Rules:
        """These rules plus the folder's own ignore files, if it has any."""
        lines: list[str] = []
        for name in IGNORE_FILES:
            try:
                lines.extend((folder / name).read_text(encoding="utf-8").splitlines())
            except (OSError, UnicodeDecodeError):
                continue
        if not lines:
            return self
        return _Rules([*self.layers, (rel, pathspec.GitIgnoreSpec.from_lines(lines))])

    def ignored(self, rel: str, *, is_dir: bool) -> bool:
        """Whether ``rel`` (a path in the tree) is ignored: the deepest deciding rule wins."""
        for base, spec in reversed(self.layers):
            inner = rel[len(base) + 1 :] if base else rel
            result = spec.check_file(inner + "/" if is_dir else inner)
            if result.include is not None:
                return bool(result.include)
        return False


def _join(base: str, name: str) -> str:
    return f"{base}/{name}" if base else name


def discover(root: Path, *, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Discovery:
    """Every candidate file under ``root`` (or ``root`` itself when it is a file)."""
    out = Discovery()
    if root.is_file():
        _consider(out, root, root.name, max_bytes)
        return out
    _walk(out, root, "", _Rules([]).below(root, ""), max_bytes)
    out.files.sort(key=lambda f: f.rel)
    return out


def _walk(out: Discovery, folder: Path, rel: str, rules: _Rules, max_bytes: int) -> None:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        out.skipped.append(Skipped(path=rel or ".", reason=f"cannot list: {exc.strerror}"))
        return
    for entry in entries:
        child = _join(rel, entry.name)
        if entry.name.startswith("."):
            # .git/, .lcg/, editors' swap and lock files: never notes.
            out.ignored += 1
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_link = entry.is_symlink()
        except OSError:
            continue
        if is_link and Path(entry.path).is_dir():
            out.ignored += 1
            continue
        if rules.ignored(child, is_dir=is_dir):
            out.ignored += 1
            continue
        if is_dir:
            _walk(out, Path(entry.path), child, rules.below(Path(entry.path), child), max_bytes)
        else:
            _consider(out, Path(entry.path), child, max_bytes)


def _consider(out: Discovery, path: Path, rel: str, max_bytes: int) -> None:
    try:
        st = path.stat()
    except OSError as exc:
        out.skipped.append(Skipped(path=rel, reason=f"unreadable: {exc.strerror}"))
        return
    if not os.path.isfile(path):
        out.ignored += 1  # a socket, a fifo, a device: nothing to read
        return
    if st.st_size > max_bytes:
        out.skipped.append(
            Skipped(path=rel, reason=f"too large: {st.st_size:,} bytes (limit {max_bytes:,})")
        )
        return
    out.files.append(FoundFile(path=str(path), rel=rel, size=st.st_size, mtime_ns=st.st_mtime_ns))
