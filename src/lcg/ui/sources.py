"""``/sources``, ``/source?group=G&file=PATH`` and ``/episode/<uuid>?group=G``: the trees
``lcg sources`` lists and their files; a file's chunks, what it links to and what links to it
(its declared document's ``LINKS_TO`` edges, both ways); one episode's text."""

from __future__ import annotations

from typing import Any, Final

from lcg.ingest import SourceStatus, heading_of
from lcg.ui.entity import declared_file
from lcg.ui.html import Html, el, href
from lcg.ui.search import attributes, entity_link
from lcg.ui.site import Answer, Query, Site, html_answer, not_found
from lcg.ui.trees import file_chunks, file_link, list_sources, tree_files

__all__ = ["episode_page", "source_page", "sources_page"]

#: The most files listed of one tree on ``/sources``.
TREE_FILES: Final = 5_000
#: Trees of more chunks than this list their files on a page of their own
#: (``/sources?group=G&tree=PREFIX``): the overview never reads a large tree whole.
INLINE_CHUNKS: Final = 2_000
#: The most chunks shown of one file, and links asked for each way.
FILE_CHUNKS: Final = 500
LINKS: Final = 500
_LINKS_TO: Final = "LINKS_TO"


def _tree(site: Site, s: SourceStatus, whole: bool) -> Html:
    if whole or s.chunks <= INLINE_CHUNKS:
        files, total = tree_files(site, s, TREE_FILES)
        more = (
            el("li", f"… and {total - len(files):,} more", cls="more") if total > len(files) else ""
        )
    else:
        files = []
        link = el(
            "a",
            f"list its {s.files:,} files",
            href=href("/sources", group=s.group_id, tree=s.prefix),
            cls="tree-files",
        )
        more = el("li", link, cls="more")
    where = s.root or "(stored by an older lcg: no path recorded)"
    meta = (
        f"[{s.group_id}] {s.files:,} files, {s.chunks:,} chunks, "
        f"watched: {'yes' if s.watching else 'no'}, {where}{' (missing)' if s.missing else ''}"
    )
    return el(
        "li",
        el("span", s.source, cls="tree-label"),
        " ",
        el("span", meta, cls="meta"),
        el("ul", *(el("li", file_link(s.group_id, f)) for f in files), more, cls="files"),
        cls="tree",
        data_group=s.group_id,
    )


def sources_page(site: Site, q: Query) -> Answer:
    """``/sources``."""
    group = q.get("group") or None
    tree = q.get("tree") or None
    rows = list_sources(site, group)
    if tree is not None:
        rows = [s for s in rows if s.prefix == tree]
    trees = [_tree(site, s, tree is not None) for s in rows]
    body = [
        el("h1", "Sources"),
        el("ul", *trees, id="trees")
        if trees
        else el("p", "no sources: `lcg ingest PATH` adds one", id="trees"),
    ]
    return html_answer("Sources", *body)


def _chunk(row: dict[str, Any]) -> Html:
    content = str(row.get("content", ""))
    heading = heading_of(content)
    text = content.partition("\n\n")[2] if heading else content
    return el(
        "li",
        el("div", heading, cls="heading") if heading else "",
        el("pre", text, cls="text"),
        el(
            "a",
            "episode",
            href=href(f"/episode/{row.get('uuid', '')}", group=row.get("group_id")),
            cls="meta",
        ),
        cls="chunk",
        id=f"chunk-{row.get('uuid', '')}",
    )


def _links(site: Site, doc: dict[str, Any], group: str) -> tuple[list[Html], list[Html]]:
    """(links out, backlinks) of a document: its ``LINKS_TO`` edges, each to the file of the
    document at the other end (or its entity page when it declares no file)."""
    got = site.reads.call(
        "knowledge_get_entity_neighbors",
        {"entity_uuid": doc["uuid"], "num_results": LINKS, "group_ids": [group]},
    )
    nodes = {str(n["uuid"]): n for n in got["nodes"]}
    out: list[Html] = []
    back: list[Html] = []
    for e in got["edges"]:
        if (e.get("relation_type") or e.get("name")) != _LINKS_TO:
            continue
        outgoing = e.get("source_node_uuid") == doc["uuid"]
        other = nodes.get(str(e.get("target_node_uuid" if outgoing else "source_node_uuid")))
        if other is None:
            continue
        file = declared_file(attributes(other))
        link = (
            file_link(group, file, str(other.get("name") or file))
            if file
            else entity_link(other, group)
        )
        (out if outgoing else back).append(el("li", link))
    return out, back


def source_page(site: Site, q: Query) -> Answer:
    """``/source``."""
    group = q.get("group", site.group or "liminis")
    path = q.get("file")
    if not path:
        return not_found("no file named: /source?group=G&file=PATH")
    chunks = file_chunks(site, group, path)[:FILE_CHUNKS]
    uuids = [c.episode_uuid for c in chunks]
    rows = (
        site.reads.call("knowledge_get_episodes_by_uuids", {"uuids": uuids})["episodes"]
        if uuids
        else []
    )
    docs = site.reads.call("knowledge_get_document", {"file": path, "group_id": group})["nodes"]
    if not rows and not docs:
        return not_found(f"group {group} holds no file {path}")
    out, back = _links(site, docs[0], group) if docs else ([], [])
    doc_link = el("p", "document: ", entity_link(docs[0], group), id="document") if docs else ""
    body = [
        el("h1", path, id="file-name"),
        el("p", f"group {group}, {len(rows)} chunks", cls="meta"),
        doc_link,
        el("h2", "Links to"),
        el("ul", *out, id="links-out"),
        el("h2", "Linked from"),
        el("ul", *back, id="backlinks"),
        el("h2", "Chunks"),
        el("ol", *(_chunk(r) for r in rows), id="chunks"),
    ]
    return html_answer(path, *body)


def episode_page(site: Site, q: Query) -> Answer:
    """``/episode/<uuid>``."""
    uuid = q.rest
    group = q.get("group") or None
    rows = site.reads.call("knowledge_get_episodes_by_uuids", {"uuids": [uuid]})["episodes"]
    rows = [r for r in rows if group is None or r.get("group_id") == group]
    if not rows:
        return not_found(f"no episode {uuid}")
    row = rows[0]
    body = [
        el("h1", str(row.get("name") or uuid), id="episode-name"),
        el(
            "p",
            el("span", str(row.get("valid_at") or row.get("created_at") or ""), id="episode-time"),
            " ",
            el(
                "span",
                f"[{row.get('group_id', '')}] {row.get('source_description', '')}",
                cls="meta",
            ),
        ),
        el("pre", str(row.get("content", "")), id="episode-text"),
    ]
    return html_answer(str(row.get("name") or "Episode"), *body)
