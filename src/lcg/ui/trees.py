"""The sources a page lists and the files of each, through ``knowledge_sources`` and
``knowledge_source_manifest`` (a tree's chunks, or one file's: prefix ``"<file>:"``)."""

from __future__ import annotations

import msgspec

from lcg.events import chunk_file
from lcg.ingest import SourceStatus, StoredChunk
from lcg.ui.html import Html, el, href
from lcg.ui.site import Site

__all__ = [
    "file_chunks",
    "file_link",
    "list_sources",
    "recent_files",
    "source_of",
    "tree_files",
]


def list_sources(site: Site, group: str | None) -> list[SourceStatus]:
    """The sources of ``group`` (``None``: every group)."""
    result = site.reads.call("knowledge_sources", {"group_ids": None if group is None else [group]})
    return msgspec.convert(result["sources"], list[SourceStatus])


def _manifest(site: Site, group: str, prefix: str) -> list[StoredChunk]:
    result = site.reads.call("knowledge_source_manifest", {"prefix": prefix, "group_id": group})
    return msgspec.convert(result["chunks"], list[StoredChunk])


def tree_files(site: Site, source: SourceStatus, limit: int) -> tuple[list[str], int]:
    """Up to ``limit`` of the source's files, by path, and how many it has."""
    files = sorted({c.source_file for c in _manifest(site, source.group_id, source.prefix)})
    return files[:limit], len(files)


def file_chunks(site: Site, group: str, path: str) -> list[StoredChunk]:
    """The chunks ``group`` holds of the file ``path`` (as served: ``notes/moon.md``)."""
    if not path or path.endswith(("/", ":")):
        return []
    return _manifest(site, group, f"{path}:")


def source_of(sources: list[SourceStatus], path: str) -> SourceStatus | None:
    """The source a served path belongs to (its tree's prefix, or the file itself)."""
    for s in sources:
        if s.prefix.endswith("/") and path.startswith(s.prefix):
            return s
        if s.prefix.endswith(":") and path == s.prefix[:-1]:
            return s
    return None


def recent_files(site: Site, group: str, last_n: int) -> list[str]:
    """The files of the ``last_n`` newest episodes of ``group``, newest first, each once
    (one bounded read: the home page never lists a whole tree)."""
    got = site.reads.call("knowledge_get_episodes", {"group_id": group, "last_n": last_n})
    files: dict[str, None] = {}
    for row in got["episodes"]:
        path = chunk_file(str(row.get("name", "")), str(row.get("source_description", "")))
        if path:
            files.setdefault(path, None)
    return list(files)


def file_link(group: str, path: str, text: str | None = None) -> Html:
    """A link to the page of the file ``path`` of ``group``."""
    return el("a", text or path, href=href("/source", group=group, file=path), cls="file")
