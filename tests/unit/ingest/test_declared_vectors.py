"""Which declared rows get vectors (issue 28 item 4, ADR 0223): a declared edge's fact none
(it is a sentence made of its two names, found by them as words); a declared ``Document``'s
name only when it is a title (front matter or heading) or a file name with a space, never a
bare file stem such as ``n00042``; tags, asserted and extracted rows as before. The rows stay
searchable by BM25, a dump's replay derives the same vectors, and a document whose title goes
loses its name vector. Real workspace (Kuzu, BM25, hnswlib, stream), hash embedder (TEST
DOUBLE)."""

from __future__ import annotations

from pathlib import Path

from lcg.config import Config
from lcg.events.model import EdgeRecord, EntityRecord
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import assertion
from lcg.ingest.declared import (
    DECLARED_ORIGIN,
    DeclaredDocument,
    DeclaredEdge,
    DeclaredStructure,
    declare_structure,
)
from lcg.ingest.dump import dump_groups
from lcg.ingest.sources import resolve_source
from lcg.projections import ops
from lcg.workspace import Workspace
from lcg.workspace.verify import verify_workspace

WHEN = "2024-03-01T10:00:00Z"


def _structure(alpha_name: str = "Alpha") -> DeclaredStructure:
    return DeclaredStructure(
        documents=[
            DeclaredDocument(path="a.md", name=alpha_name),
            DeclaredDocument(path="notes/n00042.md", name="n00042"),
            DeclaredDocument(path="apollo/Apollo 11.md", name="Apollo 11"),
        ],
        tags=["#moon"],
        edges=[
            DeclaredEdge(
                relation_type="LINKS_TO",
                source="a.md",
                target="notes/n00042.md",
                fact=f"{alpha_name} links to n00042",
            ),
            DeclaredEdge(
                relation_type="TAGGED", source="a.md", target="#moon", fact="a is tagged #moon"
            ),
        ],
    )


def _declare(ws: Workspace, group: str, tmp_path: Path, structure: DeclaredStructure) -> None:
    root = tmp_path / "notes"
    root.mkdir(exist_ok=True)
    resolve_source(ws, group, str(root), "folder", create=True)
    assert declare_structure(ws, group, str(root), structure).appended


def _vectors(ws: Workspace, group: str) -> tuple[int, int]:
    with ws.reading():
        return ws.vectors.count(group, "entity.name"), ws.vectors.count(group, "edge.fact")


def test_the_origin_spelled_in_ops_is_the_declared_pass_s() -> None:
    doc = EntityRecord(
        uuid="u1",
        name="n1",
        labels=["Entity", "Document"],
        attributes=f'{{"origin": "{DECLARED_ORIGIN}", "path": "n1.md"}}',
        created_at=WHEN,
    )
    assert not ops.embeds_entity(doc)


def test_which_rows_are_embedded() -> None:
    def doc(name: str, path: str, origin: str = "declared") -> EntityRecord:
        return EntityRecord(
            uuid="u",
            name=name,
            labels=["Entity", "Document"],
            attributes=f'{{"origin": "{origin}", "path": "{path}"}}',
            created_at=WHEN,
        )

    assert not ops.embeds_entity(doc("n00042", "notes/n00042.md"))
    assert not ops.embeds_entity(doc("parser", "src/parser.py"))
    assert ops.embeds_entity(doc("Priya Raman", "people/priya.md"))  # a title
    assert ops.embeds_entity(doc("Apollo 11", "apollo/Apollo 11.md"))  # a name with a space
    assert ops.embeds_entity(doc("n00042", "notes/n00042.md", origin="asserted"))
    tag = EntityRecord(
        uuid="t", name="#moon", labels=["Entity", "Tag"], attributes='{"origin": "declared"}',
        created_at=WHEN,
    )  # fmt: skip
    assert ops.embeds_entity(tag)
    plain = EntityRecord(uuid="p", name="n00042", labels=["Entity"], created_at=WHEN)
    assert ops.embeds_entity(plain)

    def edge(attributes: str) -> EdgeRecord:
        return EdgeRecord(
            uuid="e", name="LINKS_TO", source_uuid="a", target_uuid="b", fact="a links to b",
            attributes=attributes, created_at=WHEN,
        )  # fmt: skip

    assert not ops.embeds_edge(edge('{"origin": "declared", "source": "notes"}'))
    assert ops.embeds_edge(edge("{}"))
    assert ops.embeds_edge(edge('{"note": "declared in a.md"}'))  # the word alone is not it


def test_declared_edges_and_stem_named_documents_get_no_vectors(
    ws: Workspace, group: str, tmp_path: Path
) -> None:
    _declare(ws, group, tmp_path, _structure())
    # Names: Alpha (a title), Apollo 11 (a file name with a space), #moon; not n00042.
    # Facts: none of the two declared edges.
    assert _vectors(ws, group) == (3, 0)
    with ws.reading():
        # Still found by their words.
        assert ws.text.search(group, "edge", "links n00042", 5)
        assert ws.text.search(group, "entity", "n00042", 5)
    assertion.assert_relationship(
        ws, group_id=group, source_name="Alpha", target_name="Apollo 11", predicate="CITES",
        fact="Alpha cites Apollo 11",
    )  # fmt: skip
    assert _vectors(ws, group)[1] == 1  # an asserted edge's fact is embedded as before
    assert verify_workspace(ws, [group]).ok


def test_a_document_that_loses_its_title_loses_its_name_vector(
    ws: Workspace, group: str, tmp_path: Path
) -> None:
    _declare(ws, group, tmp_path, _structure())
    assert _vectors(ws, group) == (3, 0)
    _declare(ws, group, tmp_path, _structure(alpha_name="a"))  # no title: named by its stem
    assert _vectors(ws, group) == (2, 0)
    assert verify_workspace(ws, [group]).ok


def test_a_dump_replays_to_the_same_vectors(ws: Workspace, group: str, tmp_path: Path) -> None:
    _declare(ws, group, tmp_path, _structure())
    live = ws.digests(group)
    dump_groups(ws, tmp_path / "dump", [group])
    replica = Config.from_env(
        tmp_path / "replica", env={"LCG_EMBEDDER": "hash", "LCG_WAL_DIR": str(tmp_path / "dump")}
    )
    with Workspace.open(replica, HashEmbedder()) as ws2:
        assert ws2.digests(group) == live
        assert _vectors(ws2, group) == (3, 0)
