"""A declared edge (ADR 0203) is current while its file declares it: no curation pass retypes
it and no correction retracts it (extraction's restatement is in test_extraction_decide.py).
Real workspace; the hash embedder and the scripted extractor are TEST DOUBLES."""

from __future__ import annotations

from pathlib import Path

from lcg.events.model import CorrectionsApplied, RelationTypesChanged
from lcg.extract.ontology import parse_ontology
from lcg.extract.scripted import ScriptedExtractor
from lcg.ingest import resolve_source
from lcg.ingest.curation import apply_corrections, corrections_path, reprocess_relation_types
from lcg.ingest.declared import (
    DeclaredDocument,
    DeclaredEdge,
    DeclaredStructure,
    declare_structure,
)
from lcg.projections.graph import records as gr
from lcg.workspace import Workspace

from .conftest import read_events

FACT = "Plan links to Log."


def _declared_edge(ws: Workspace, group: str, tmp_path: Path) -> str:
    root = tmp_path / "notes"
    root.mkdir()
    resolve_source(ws, group, str(root), "folder", create=True)
    declare_structure(
        ws,
        group,
        str(root),
        DeclaredStructure(
            documents=[
                DeclaredDocument(path="a.md", name="Plan"),
                DeclaredDocument(path="b.md", name="Log"),
            ],
            edges=[DeclaredEdge(relation_type="LINKS_TO", source="a.md", target="b.md", fact=FACT)],
        ),
    )
    with ws.reading():
        (edge,) = gr.all_edges(ws.graph, group)
    return edge.uuid


def test_reprocessing_relation_types_leaves_a_declared_edge_alone(
    ws: Workspace, group: str, tmp_path: Path
) -> None:
    _declared_edge(ws, group, tmp_path)
    onto = parse_ontology("relation_types:\n  - {name: COMMANDED}\n")
    extractor = ScriptedExtractor(relation_types={FACT: "COMMANDED"})
    reprocess_relation_types(ws, extractor, onto, group_id=group, scope="all")
    assert [e for e in read_events(ws, group) if isinstance(e, RelationTypesChanged)] == []
    with ws.reading():
        (edge,) = gr.all_edges(ws.graph, group)
    assert edge.relation_type == "LINKS_TO"


def test_a_correction_does_not_retract_a_declared_edge(
    ws: Workspace, group: str, tmp_path: Path
) -> None:
    uuid = _declared_edge(ws, group, tmp_path)
    path = corrections_path(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"corrections:\n  - {{id: r, type: retract, edge_uuid: {uuid}}}\n")
    res = apply_corrections(ws, tmp_path)
    assert any("declared by a file" in e for e in res.errors), res
    assert [e for e in read_events(ws, group) if isinstance(e, CorrectionsApplied)] == []
    with ws.reading():
        (edge,) = gr.all_edges(ws.graph, group)
    assert edge.invalid_at is None
