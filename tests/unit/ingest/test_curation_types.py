"""The typing passes of curation (§3.7, §3.8): how canonicalize, backfill and reprocess decide
an edge's relation type, and how reprocess decides an entity's labels. Real workspace (one per
module, a group per test); the hash embedder and the scripted extractor are TEST DOUBLES."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lcg.errors import ConfigError, ExtractionError
from lcg.events.model import EdgeRecord, EntityTypesChanged, Event, RelationTypesChanged
from lcg.extract.ontology import Ontology, parse_ontology
from lcg.extract.scripted import ScriptedExtractor
from lcg.ingest import assertion, merge
from lcg.ingest.curation import (
    backfill_relation_types,
    backfill_type,
    canonicalize_relations,
    reprocess_entity_types,
    reprocess_relation_types,
)
from lcg.projections.graph import records as gr
from lcg.workspace import Workspace

RELATIONS = """\
relation_types:
  - {name: WORKED_FOR, aliases: [EMPLOYED_BY], keywords: [employ]}
  - {name: COMMANDED}
  - {name: LANDED_ON, description: the spacecraft landed on the surface of the moon}
"""
ENTITIES = """\
entity_types:
  - {name: Agent}
  - {name: Person, parent: Agent}
  - {name: Mission}
"""


def _onto(text: str) -> Ontology:
    onto = parse_ontology(text)
    assert onto is not None
    return onto


class Group:
    """One group of the module's workspace."""

    def __init__(self, ws: Workspace, group_id: str) -> None:
        self.ws, self.id = ws, group_id
        self._pairs = 0

    def entity(self, name: str, labels: list[str] | None = None) -> str:
        made = assertion.assert_entity(self.ws, name=name, group_id=self.id, labels=labels)
        return made.entity_uuid

    def edge(self, name: str, fact: str = "", relation_type: str | None = None) -> str:
        """An edge called ``name`` between two entities of its own."""
        self._pairs += 1
        src, tgt = f"Source {self._pairs}", f"Target {self._pairs}"
        self.entity(src)
        self.entity(tgt)
        return assertion.assert_relationship(
            self.ws,
            source_name=src,
            target_name=tgt,
            predicate=name,
            group_id=self.id,
            fact=fact or None,
            relation_type=relation_type,
        ).edge_uuid

    def types(self) -> dict[str, str | None]:
        """Relation type by edge uuid."""
        with self.ws.reading():
            return {e.uuid: e.relation_type for e in gr.all_edges(self.ws.graph, self.id)}

    def labels(self) -> dict[str, list[str]]:
        """Labels by entity uuid."""
        with self.ws.reading():
            return {e.uuid: e.labels for e in gr.all_entities(self.ws.graph, self.id)}

    def events(self, kind: type[Event]) -> list[Any]:
        return [e for e in self.ws.store.reader(self.id).events() if isinstance(e, kind)]


@pytest.fixture
def g(shared_ws: Workspace, group: str) -> Group:
    return Group(shared_ws, group)


# ---- backfill -----------------------------------------------------------------------------


def _record(name: str, fact: str) -> EdgeRecord:
    return EdgeRecord(
        uuid="e", name=name, source_uuid="s", target_uuid="t", fact=fact, created_at="x"
    )


@pytest.mark.parametrize(
    ("name", "fact", "expected"),
    [
        ("worked for", "Armstrong flew to the Moon.", "WORKED_FOR"),  # the name, arrow-free
        ("Neil Armstrong → NASA", "Armstrong flew to the Moon.", "ARMSTRONG_FLEW_TO_THE"),
        ("A -> B", "Armstrong flew to the Moon.", "ARMSTRONG_FLEW_TO_THE"),
        ("", "Flew.", "FLEW"),
        ("   ", "", "UNCLASSIFIED"),
        ("→", "...", "UNCLASSIFIED"),
    ],
)
def test_backfill_types_an_edge_by_its_name_else_its_facts_first_four_words(
    name: str, fact: str, expected: str
) -> None:
    assert backfill_type(_record(name, fact)) == expected


def test_backfill_types_only_the_untyped_edges(g: Group) -> None:
    untyped = g.edge("worked for")
    typed = g.edge("commanded", relation_type="LED")
    dry = backfill_relation_types(g.ws, group_id=g.id, dry_run=True)
    assert (dry["backfilled"], g.events(RelationTypesChanged)) == (1, [])
    done = backfill_relation_types(g.ws, group_id=g.id)
    assert done["backfilled"] == 1
    assert g.types() == {untyped: "WORKED_FOR", typed: "LED"}
    (event,) = g.events(RelationTypesChanged)
    assert event.cause == "backfill"
    assert backfill_relation_types(g.ws, group_id=g.id)["backfilled"] == 0


# ---- canonicalize -------------------------------------------------------------------------


def test_canonicalize_needs_an_ontology_with_relation_types(g: Group) -> None:
    for onto in (None, _onto(ENTITIES)):
        with pytest.raises(ConfigError, match="no ontology with relation types"):
            canonicalize_relations(g.ws, onto, group_id=g.id)


def test_canonicalize_maps_names_and_types_onto_the_declared_types(g: Group) -> None:
    by_alias = g.edge("employed by")
    by_keyword = g.edge("was an employee of")
    declared = g.edge("anything", relation_type="COMMANDED")
    type_alias = g.edge("whatever", relation_type="employed_by")
    res = canonicalize_relations(g.ws, _onto(RELATIONS), group_id=g.id)
    assert (res["mapped_count"], res["noise_count"], res["residual_count"]) == (4, 0, 0)
    assert g.types() == {
        by_alias: "WORKED_FOR",
        by_keyword: "WORKED_FOR",
        declared: "COMMANDED",
        type_alias: "WORKED_FOR",
    }
    (event,) = g.events(RelationTypesChanged)
    assert event.cause == "canonicalize"
    assert {c.uuid for c in event.changes} == {by_alias, by_keyword, type_alias}, "not 'declared'"


def test_canonicalize_types_uppercase_arrow_names_as_noise_only_when_untyped(g: Group) -> None:
    untyped_noise = g.edge("NASA → ESA")
    typed_noise = g.edge("NASA -> JAXA", relation_type="PARTNERED")
    person_arrow = g.edge("Neil Armstrong → NASA")  # not noise: residual
    res = canonicalize_relations(g.ws, _onto(RELATIONS), group_id=g.id)
    assert (res["noise_count"], res["residual_count"]) == (2, 1)
    assert g.types() == {
        untyped_noise: "UNCLASSIFIED",
        typed_noise: "PARTNERED",
        person_arrow: "UNCLASSIFIED",
    }


def test_canonicalize_promotes_a_residual_edge_by_the_meaning_of_its_fact(g: Group) -> None:
    landed = g.edge("touched down", fact="the spacecraft landed on the surface of the moon")
    other = g.edge("touched", fact="rocks were sorted in Houston labs")
    res = canonicalize_relations(g.ws, _onto(RELATIONS), group_id=g.id, embedding_threshold=0.7)
    assert (res["embedding_fallback_promoted"], res["residual_count"]) == (1, 1)
    assert g.types() == {landed: "LANDED_ON", other: "UNCLASSIFIED"}


def test_canonicalize_without_the_fallback_leaves_every_residual_unclassified(g: Group) -> None:
    landed = g.edge("touched down", fact="the spacecraft landed on the surface of the moon")
    res = canonicalize_relations(g.ws, _onto(RELATIONS), group_id=g.id, embedding_threshold=1.01)
    assert res["embedding_fallback_promoted"] == 0
    assert g.types() == {landed: "UNCLASSIFIED"}


def test_a_canonicalize_dry_run_reports_and_records_nothing(g: Group) -> None:
    edge = g.edge("employed by")
    res = canonicalize_relations(g.ws, _onto(RELATIONS), group_id=g.id, dry_run=True)
    assert (res["mapped_count"], res["dry_run"], res["mapped_pct"]) == (1, True, 100.0)
    assert g.types() == {edge: None} and g.events(RelationTypesChanged) == []


def test_an_edge_already_of_its_mapped_type_is_not_written_again(g: Group) -> None:
    g.edge("employed by", relation_type="WORKED_FOR")
    g.edge("NASA → ESA", relation_type="UNCLASSIFIED")
    canonicalize_relations(g.ws, _onto(RELATIONS), group_id=g.id)
    assert g.events(RelationTypesChanged) == []


# ---- reprocess relation types -------------------------------------------------------------


def _relations_by_fact(table: dict[str, str]) -> ScriptedExtractor:
    return ScriptedExtractor(relation_types=table)


@pytest.mark.parametrize(
    ("ontology", "extractor", "scope", "error"),
    [
        (RELATIONS, True, "everything", "scope must be one of untyped, off_ontology, all"),
        (None, True, "untyped", "has no ontology with relation types"),
        (ENTITIES, True, "untyped", "has no ontology with relation types"),
        (RELATIONS, False, "untyped", "no extraction provider is configured"),
    ],
)
def test_reprocess_relations_refuses_softly(
    g: Group, ontology: str | None, extractor: bool, scope: str, error: str
) -> None:
    res = reprocess_relation_types(
        g.ws,
        ScriptedExtractor() if extractor else None,
        _onto(ontology) if ontology else None,
        group_id=g.id,
        scope=scope,
    )
    assert res["success"] is False and error in res["error"]


def test_reprocess_relations_writes_each_verdict_and_unclassified_for_none(g: Group) -> None:
    commanded = g.edge("led", fact="Armstrong led Apollo 11.")
    unknown = g.edge("met", fact="Armstrong met Aldrin.")
    already = g.edge("worked", fact="Armstrong worked for NASA.")
    typed = g.edge("flew", fact="Armstrong flew Gemini 8.", relation_type="FLEW")
    extractor = _relations_by_fact(
        {
            "Armstrong led Apollo 11.": "commanded",
            "Armstrong met Aldrin.": "",  # no verdict: an explicit UNCLASSIFIED
            "Armstrong worked for NASA.": "WORKED_FOR",
            "Armstrong flew Gemini 8.": "COMMANDED",  # typed: outside the untyped scope
        }
    )
    res = reprocess_relation_types(g.ws, extractor, _onto(RELATIONS), group_id=g.id)
    assert res["reclassified_count"] == 3 and res["unchanged_count"] == 0
    assert res["breakdown"] == {"COMMANDED": 1, "UNCLASSIFIED": 1, "WORKED_FOR": 1}
    assert g.types() == {
        commanded: "COMMANDED",
        unknown: "UNCLASSIFIED",
        already: "WORKED_FOR",
        typed: "FLEW",
    }


def test_reprocess_relations_off_ontology_takes_the_undeclared_types_too(g: Group) -> None:
    undeclared = g.edge("flew", fact="Armstrong flew Gemini 8.", relation_type="FLEW")
    declared = g.edge("led", fact="Armstrong led Apollo 11.", relation_type="COMMANDED")
    extractor = _relations_by_fact(
        {"Armstrong flew Gemini 8.": "COMMANDED", "Armstrong led Apollo 11.": "COMMANDED"}
    )
    res = reprocess_relation_types(
        g.ws, extractor, _onto(RELATIONS), group_id=g.id, scope="off_ontology"
    )
    assert (res["reclassified_count"], res["unchanged_count"]) == (1, 0)
    assert g.types() == {undeclared: "COMMANDED", declared: "COMMANDED"}


def test_reprocess_relations_all_leaves_an_edge_its_verdict_agrees_with(g: Group) -> None:
    g.edge("led", fact="Armstrong led Apollo 11.", relation_type="COMMANDED")
    extractor = _relations_by_fact({"Armstrong led Apollo 11.": "COMMANDED"})
    res = reprocess_relation_types(g.ws, extractor, _onto(RELATIONS), group_id=g.id, scope="all")
    assert (res["reclassified_count"], res["unchanged_count"]) == (0, 1)
    assert g.events(RelationTypesChanged) == []


def test_a_reprocess_relations_dry_run_plans_and_records_nothing(g: Group) -> None:
    edge = g.edge("led", fact="Armstrong led Apollo 11.")
    extractor = _relations_by_fact({"Armstrong led Apollo 11.": "COMMANDED"})
    res = reprocess_relation_types(g.ws, extractor, _onto(RELATIONS), group_id=g.id, dry_run=True)
    assert res == {
        "would_reclassify_count": 1,
        "plan": [
            {
                "edge_id": edge,
                "fact": "Armstrong led Apollo 11.",
                "old_type": None,
                "new_type": "COMMANDED",
            }
        ],
        "breakdown": {"COMMANDED": 1},
    }
    assert g.types() == {edge: None}


def test_an_extractor_failure_is_a_soft_failure_that_records_nothing(g: Group) -> None:
    g.edge("led", fact="Armstrong led Apollo 11.")

    def fail(fact: str, current: str) -> str:
        raise ExtractionError("the LLM is down")

    res = reprocess_relation_types(
        g.ws, ScriptedExtractor(relation_types=fail), _onto(RELATIONS), group_id=g.id
    )
    assert res == {"success": False, "group_id": g.id, "error": "the LLM is down"}
    assert g.events(RelationTypesChanged) == []


# ---- reprocess entity types ---------------------------------------------------------------


def _entity_labeler(table: dict[str, str], asked: list[str]) -> Callable[[str, str], str]:
    def label(name: str, summary: str) -> str:
        asked.append(name)
        return table.get(name, "")

    return label


def test_reprocess_entities_needs_the_workspace_root(g: Group) -> None:
    with pytest.raises(ConfigError, match="LIMINIS_WORKSPACE_ROOT not set"):
        reprocess_entity_types(g.ws, ScriptedExtractor(), None, workspace_root=None, group_id=g.id)


@pytest.mark.parametrize(
    ("ontology", "extractor", "scope", "error"),
    [
        (ENTITIES, True, "some", "scope must be one of untyped, off_ontology, all"),
        (None, True, "off_ontology", "needs an ontology with at least one entity type"),
        (RELATIONS, True, "all", "needs an ontology with at least one entity type"),
        (ENTITIES, False, "untyped", "no extraction provider is configured"),
    ],
)
def test_reprocess_entities_refuses_softly(
    g: Group, tmp_path: Path, ontology: str | None, extractor: bool, scope: str, error: str
) -> None:
    res = reprocess_entity_types(
        g.ws,
        ScriptedExtractor() if extractor else None,
        _onto(ontology) if ontology else None,
        workspace_root=tmp_path,
        group_id=g.id,
        scope=scope,
    )
    assert res["success"] is False and error in res["error"]


def test_reprocess_entities_types_only_the_untyped_and_labels_the_ancestors(
    g: Group, tmp_path: Path
) -> None:
    neil = g.entity("Neil Armstrong")
    apollo = g.entity("Apollo 11")
    moon = g.entity("Moon")
    typed = g.entity("NASA", labels=["Organization"])
    asked: list[str] = []
    extractor = ScriptedExtractor(
        entity_types=_entity_labeler(
            {"Neil Armstrong": "person", "Apollo 11": "Mission", "NASA": "Agent"}, asked
        )
    )
    res = reprocess_entity_types(
        g.ws, extractor, _onto(ENTITIES), workspace_root=tmp_path, group_id=g.id
    )
    assert sorted(asked) == ["Apollo 11", "Moon", "Neil Armstrong"], "untyped only"
    assert (res["reclassified_count"], res["unchanged_count"]) == (2, 1)
    assert g.labels() == {
        neil: ["Entity", "Agent", "Person"],
        apollo: ["Entity", "Mission"],
        moon: ["Entity"],  # no verdict: unchanged
        typed: ["Entity", "Organization"],
    }


def test_reprocess_entities_off_ontology_takes_undeclared_labels_and_keeps_agreement(
    g: Group, tmp_path: Path
) -> None:
    org = g.entity("NASA", labels=["Organization"])
    person = g.entity("Neil Armstrong", labels=["Agent", "Person"])
    asked: list[str] = []
    extractor = ScriptedExtractor(
        entity_types=_entity_labeler({"NASA": "Agent", "Neil Armstrong": "Person"}, asked)
    )
    res = reprocess_entity_types(
        g.ws,
        extractor,
        _onto(ENTITIES),
        workspace_root=tmp_path,
        group_id=g.id,
        scope="off_ontology",
    )
    assert asked == ["NASA"]
    assert res["reclassified_count"] == 1
    assert g.labels() == {org: ["Entity", "Agent"], person: ["Entity", "Agent", "Person"]}


def test_reprocess_entities_skips_merged_tombstones(g: Group, tmp_path: Path) -> None:
    keep = g.entity("Neil Armstrong")
    alias = g.entity("Armstrong")
    assert merge.merge_entities(
        g.ws, group_id=g.id, canonical_uuid=keep, alias_uuids=[alias]
    ).success
    asked: list[str] = []
    extractor = ScriptedExtractor(entity_types=_entity_labeler({}, asked))
    reprocess_entity_types(
        g.ws, extractor, _onto(ENTITIES), workspace_root=tmp_path, group_id=g.id, scope="all"
    )
    assert asked == ["Neil Armstrong"]


def test_reprocess_entities_restamps_declared_types_with_their_parents(
    g: Group, tmp_path: Path
) -> None:
    flat = g.entity("Neil Armstrong", labels=["Person"])  # declared, but without its parent
    asked: list[str] = []
    extractor = ScriptedExtractor(entity_types=_entity_labeler({"Moon": "Mission"}, asked))
    g.entity("Moon")
    res = reprocess_entity_types(
        g.ws, extractor, _onto(ENTITIES), workspace_root=tmp_path, group_id=g.id
    )
    assert (res["reclassified_count"], res["restamped_count"]) == (1, 1)
    assert g.labels()[flat] == ["Entity", "Agent", "Person"]
    assert [e.cause for e in g.events(EntityTypesChanged)] == ["reprocess", "restamp"]


def test_reprocess_entities_with_nothing_in_scope_records_nothing(g: Group, tmp_path: Path) -> None:
    g.entity("NASA", labels=["Organization"])
    res = reprocess_entity_types(
        g.ws, ScriptedExtractor(), _onto(ENTITIES), workspace_root=tmp_path, group_id=g.id
    )
    assert res == {"success": True, "reclassified_count": 0, "unchanged_count": 0, "group_id": g.id}
    assert g.events(EntityTypesChanged) == []


def test_a_reprocess_entities_dry_run_plans_and_records_nothing(g: Group, tmp_path: Path) -> None:
    neil = g.entity("Neil Armstrong")
    extractor = ScriptedExtractor(entity_types={"Neil Armstrong": "Person"})
    res = reprocess_entity_types(
        g.ws, extractor, _onto(ENTITIES), workspace_root=tmp_path, group_id=g.id, dry_run=True
    )
    assert res == {
        "would_reclassify_count": 1,
        "plan": [
            {
                "entity_id": neil,
                "entity_name": "Neil Armstrong",
                "old_type": "Entity",
                "new_type": "Person",
            }
        ],
    }
    assert g.events(EntityTypesChanged) == []


# ---- a concurrent write is never overwritten with a stale decision -----------------------


def test_a_relation_retyped_while_the_llm_thought_is_left_alone(g: Group) -> None:
    edge = g.edge("led", fact="Armstrong led Apollo 11.")
    src_tgt = ("Source 1", "Target 1")

    def meanwhile(fact: str, current: str) -> str:
        # Someone types the edge by hand while the classification is in flight.
        assertion.assert_relationship(
            g.ws,
            source_name=src_tgt[0],
            target_name=src_tgt[1],
            predicate="led",
            group_id=g.id,
            fact=fact,
            relation_type="FLEW",
        )
        return "COMMANDED"

    res = reprocess_relation_types(
        g.ws, ScriptedExtractor(relation_types=meanwhile), _onto(RELATIONS), group_id=g.id
    )
    assert res["reclassified_count"] == 0
    assert g.types() == {edge: "FLEW"}


def test_an_entity_retyped_while_the_llm_thought_is_left_alone(g: Group, tmp_path: Path) -> None:
    neil = g.entity("Neil Armstrong")

    def meanwhile(name: str, summary: str) -> str:
        g.entity("Neil Armstrong", labels=["Mission"])  # typed by hand meanwhile
        return "Person"

    res = reprocess_entity_types(
        g.ws,
        ScriptedExtractor(entity_types=meanwhile),
        _onto(ENTITIES),
        workspace_root=tmp_path,
        group_id=g.id,
    )
    assert res["reclassified_count"] == 0
    assert g.labels() == {neil: ["Entity", "Mission"]}
