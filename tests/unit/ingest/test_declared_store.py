"""The service side of declared structure (issue 29, ADR 0203): ``declare_structure`` makes a
group's declared graph of a source match a ``DeclaredStructure`` with one ``StructureDeclared``
event (none when they agree); the graph applies it, a replay rebuilds it, ``lcg verify``'s
check passes and a dump keeps it. Real workspace per test (Kuzu, BM25, hnswlib, stream); the
structures are hand-made (the parser and resolver are tested on their own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from lcg.config import Config
from lcg.errors import InvalidParamsError
from lcg.events.model import StructureDeclared
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import assertion
from lcg.ingest.declared import (
    DeclaredDocument,
    DeclaredEdge,
    DeclaredMention,
    DeclaredStructure,
    declare_structure,
)
from lcg.ingest.dump import dump_groups
from lcg.ingest.sources import ChunkIn, resolve_source, sync_chunks
from lcg.workspace import Workspace
from lcg.workspace.verify import verify_workspace

from .conftest import read_events

WHEN = "2024-03-01T10:00:00Z"
A_CHUNK = "notes/a.md#0123456789ab"


def _source(ws: Workspace, group: str, tmp_path: Path) -> str:
    root = tmp_path / "notes"
    root.mkdir(exist_ok=True)
    resolve_source(ws, group, str(root), "folder", create=True)
    return str(root)


def _doc(path: str, name: str, **kw: Any) -> DeclaredDocument:
    return DeclaredDocument(path=path, name=name, **kw)


def _edge(rel: Any, src: str, dst: str) -> DeclaredEdge:
    return DeclaredEdge(relation_type=rel, source=src, target=dst, fact=f"{src} {rel} {dst}")


def _vault(**changes: Any) -> DeclaredStructure:
    s = DeclaredStructure(
        documents=[
            _doc("a.md", "Alpha", doc_id="STORY-1", aliases=["A"], fields={"status": "open"}),
            _doc("b.md", "Beta"),
            _doc("c.md", "Gamma"),
        ],
        tags=["#moon"],
        edges=[
            _edge("LINKS_TO", "a.md", "b.md"),
            _edge("PART_OF", "b.md", "c.md"),
            _edge("SUPERSEDES", "c.md", "a.md"),
            _edge("TAGGED", "a.md", "#moon"),
        ],
        mentions=[DeclaredMention(chunk_id=A_CHUNK, target="c.md")],
    )
    for key, value in changes.items():
        setattr(s, key, value)
    return s


def _entities(ws: Workspace, group: str) -> dict[str, tuple[str, list[str], dict[str, Any]]]:
    """name → (uuid, labels, attributes) of the group's entities."""
    with ws.reading():
        rows = ws.graph.query(
            "MATCH (e:Entity) WHERE e.group_id = $g RETURN e.name, e.uuid, e.labels, e.attributes",
            {"g": group},
        )
    return {n: (u, list(lb), msgspec.json.decode(a)) for n, u, lb, a in rows}


def _edges(ws: Workspace, group: str) -> set[tuple[str, str, str]]:
    """(source name, relation, target name) of every bound edge a read serves."""
    with ws.reading():
        rows = ws.graph.query(
            "MATCH (a:Entity)-[:RELATES_TO]->(e:RelatesToNode_)-[:RELATES_TO]->(b:Entity) "
            "WHERE e.group_id = $g RETURN a.name, e.relation_type, b.name",
            {"g": group},
        )
    return {(str(a), str(r), str(b)) for a, r, b in rows}


def _mentions(ws: Workspace, group: str) -> set[tuple[str, str]]:
    with ws.reading():
        rows = ws.graph.query(
            "MATCH (p:Episodic)-[:MENTIONS]->(n:Entity) WHERE p.group_id = $g "
            "RETURN p.name, n.name",
            {"g": group},
        )
    return {(str(p), str(n)) for p, n in rows}


def _declared(ws: Workspace, group: str) -> list[StructureDeclared]:
    return [e for e in read_events(ws, group) if isinstance(e, StructureDeclared)]


def _chunk(ws: Workspace, group: str) -> None:
    sync_chunks(
        ws,
        group,
        [
            ChunkIn(
                chunk_id=A_CHUNK,
                source_file="notes/a.md",
                chunk_text="See STORY-1 and the gamma plan.",
                reference_time=WHEN,
            )
        ],
        [],
    )


def test_a_first_declare_writes_documents_tags_edges_and_mentions(
    ws: Workspace, group: str, tmp_path: Path
) -> None:
    root = _source(ws, group, tmp_path)
    _chunk(ws, group)
    result = declare_structure(ws, group, root, _vault())
    assert result.appended
    assert (result.entities_upserted, result.edges_upserted, result.mentions_added) == (4, 4, 1)
    ents = _entities(ws, group)
    assert set(ents) == {"Alpha", "Beta", "Gamma", "#moon"}
    _, labels, attrs = ents["Alpha"]
    assert labels == ["Entity", "Document"]
    assert attrs == {
        "origin": "declared",
        "source": "notes",
        "path": "a.md",
        "id": "STORY-1",
        "aliases": ["A"],
        "status": "open",
        "superseded_by": "c.md",
    }
    assert ents["#moon"][1] == ["Entity", "Tag"]
    assert _edges(ws, group) == {
        ("Alpha", "LINKS_TO", "Beta"),
        ("Beta", "PART_OF", "Gamma"),
        ("Gamma", "SUPERSEDES", "Alpha"),
        ("Alpha", "TAGGED", "#moon"),
    }
    assert _mentions(ws, group) == {(A_CHUNK, "Gamma")}
    assert len(_declared(ws, group)) == 1


def test_an_unchanged_structure_appends_nothing(ws: Workspace, group: str, tmp_path: Path) -> None:
    root = _source(ws, group, tmp_path)
    _chunk(ws, group)
    declare_structure(ws, group, root, _vault())
    before = len(read_events(ws, group))
    again = declare_structure(ws, group, root, _vault())
    assert not again.appended
    assert len(read_events(ws, group)) == before


def test_a_removed_link_a_deleted_file_and_a_dropped_tag_are_gone(
    ws: Workspace, group: str, tmp_path: Path
) -> None:
    root = _source(ws, group, tmp_path)
    _chunk(ws, group)
    declare_structure(ws, group, root, _vault())
    # b.md is deleted (with its PART_OF edge), a.md drops its link and its tag.
    result = declare_structure(
        ws,
        group,
        root,
        _vault(
            documents=[_doc("a.md", "Alpha", doc_id="STORY-1"), _doc("c.md", "Gamma")],
            tags=[],
            edges=[_edge("SUPERSEDES", "c.md", "a.md")],
            mentions=[],
        ),
    )
    assert result.appended
    assert set(_entities(ws, group)) == {"Alpha", "Gamma"}
    assert _edges(ws, group) == {("Gamma", "SUPERSEDES", "Alpha")}
    assert _mentions(ws, group) == set()
    with ws.reading():
        (count,) = ws.graph.query(
            "MATCH (e:RelatesToNode_) WHERE e.group_id = $g RETURN count(e)", {"g": group}
        )[0]
    assert count == 1  # removed, not left unbound or invalidated


def test_a_moved_file_keeps_its_uuid(ws: Workspace, group: str, tmp_path: Path) -> None:
    root = _source(ws, group, tmp_path)
    declare_structure(ws, group, root, _vault(mentions=[]))
    uuid = _entities(ws, group)["Beta"][0]
    moved = _vault(
        documents=[
            _doc("a.md", "Alpha", doc_id="STORY-1", aliases=["A"], fields={"status": "open"}),
            _doc("sub/b.md", "Beta", moved_from="b.md"),
            _doc("c.md", "Gamma"),
        ],
        edges=[
            _edge("LINKS_TO", "a.md", "sub/b.md"),
            _edge("PART_OF", "sub/b.md", "c.md"),
            _edge("SUPERSEDES", "c.md", "a.md"),
            _edge("TAGGED", "a.md", "#moon"),
        ],
        mentions=[],
    )
    declare_structure(ws, group, root, moved)
    ents = _entities(ws, group)
    assert ents["Beta"][0] == uuid
    assert ents["Beta"][2]["path"] == "sub/b.md"
    assert ("Alpha", "LINKS_TO", "Beta") in _edges(ws, group)


def test_a_tag_another_source_uses_stays(ws: Workspace, group: str, tmp_path: Path) -> None:
    root = _source(ws, group, tmp_path)
    other = tmp_path / "other" / "notes"
    other.mkdir(parents=True)
    resolve_source(ws, group, str(other), "folder", create=True)
    declare_structure(ws, group, root, _vault(mentions=[]))
    tagged = DeclaredStructure(
        documents=[_doc("x.md", "Ex")], tags=["#moon"], edges=[_edge("TAGGED", "x.md", "#moon")]
    )
    declare_structure(ws, group, str(other), tagged)
    tag = _entities(ws, group)["#moon"][0]
    declare_structure(ws, group, root, _vault(tags=[], edges=[], mentions=[]))
    assert _entities(ws, group)["#moon"][0] == tag  # one tag per group, still used
    assert ("Ex", "TAGGED", "#moon") in _edges(ws, group)
    declare_structure(ws, group, str(other), DeclaredStructure(documents=[_doc("x.md", "Ex")]))
    assert "#moon" not in _entities(ws, group)


def test_an_edge_to_nothing_declared_is_refused(ws: Workspace, group: str, tmp_path: Path) -> None:
    root = _source(ws, group, tmp_path)
    with pytest.raises(InvalidParamsError, match="names no document"):
        declare_structure(ws, group, root, _vault(edges=[_edge("LINKS_TO", "a.md", "zz.md")]))
    with pytest.raises(InvalidParamsError, match="no source"):
        declare_structure(ws, group, str(tmp_path / "elsewhere"), _vault())
    assert _declared(ws, group) == []


def test_an_extracted_edge_to_a_removed_document_is_kept_unbound(
    ws: Workspace, group: str, tmp_path: Path
) -> None:
    root = _source(ws, group, tmp_path)
    declare_structure(ws, group, root, _vault(mentions=[]))
    assertion.assert_relationship(
        ws, group_id=group, source_name="Beta", target_name="Gamma", predicate="CITES",
        fact="Beta cites Gamma",
    )  # fmt: skip
    declare_structure(ws, group, root, _vault(documents=[_doc("a.md", "Alpha")], edges=[]))
    assert verify_workspace(ws, [group]).ok
    with ws.reading():
        facts = ws.graph.query(
            "MATCH (e:RelatesToNode_) WHERE e.group_id = $g RETURN e.fact", {"g": group}
        )
    assert [f for (f,) in facts] == ["Beta cites Gamma"]


def test_replay_verify_and_dump_see_the_same_graph(
    ws: Workspace, group: str, tmp_path: Path
) -> None:
    root = _source(ws, group, tmp_path)
    _chunk(ws, group)
    declare_structure(ws, group, root, _vault())
    declare_structure(
        ws,
        group,
        root,
        _vault(
            documents=[_doc("a.md", "Alpha", doc_id="STORY-1"), _doc("c.md", "Gamma")],
            edges=[_edge("TAGGED", "a.md", "#moon")],
            mentions=[DeclaredMention(chunk_id=A_CHUNK, target="STORY-1")],
        ),
    )
    report = verify_workspace(ws, [group])
    assert report.ok, report
    live = ws.digests(group)
    assert _mentions(ws, group) == {(A_CHUNK, "Alpha")}
    dump_groups(ws, tmp_path / "dump", [group])
    replica = Config.from_env(
        tmp_path / "replica", env={"LCG_EMBEDDER": "hash", "LCG_WAL_DIR": str(tmp_path / "dump")}
    )
    with Workspace.open(replica, HashEmbedder()) as ws2:
        assert ws2.digests(group) == live
