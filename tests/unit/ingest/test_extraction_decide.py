"""How one extraction becomes one ``EpisodeExtracted`` event (``ingest/extraction``: prepare,
then decide under the group's lock; docs/adr/0032, 0033, 0034).

Each test hands the scripted extractor (TEST DOUBLE) one answer for one stored episode of a
real workspace (hash embedder: TEST DOUBLE) and reads the event the decision appended.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from lcg.events.model import EpisodeExtracted
from lcg.extract.extractor import ExtractedEdge, ExtractedEntity, ExtractionOutput
from lcg.extract.scripted import ScriptedExtractor
from lcg.ingest import assertion, episodes, parse_timestamp, resolve_source
from lcg.ingest.declared import (
    DeclaredDocument,
    DeclaredEdge,
    DeclaredStructure,
    declare_structure,
)
from lcg.ingest.extraction import EpisodeExtraction, ExtractionService
from lcg.ingest.resolution import SUMMARY_CAP
from lcg.projections.graph import records as gr
from lcg.workspace import Workspace
from lcg.workspace.ontology_files import OntologyLoader

REF = parse_timestamp("2024-05-01T12:00:00Z", field="reference_time")


class Run(NamedTuple):
    event: EpisodeExtracted
    result: EpisodeExtraction


def ent(name: str, etype: str = "", summary: str = "") -> ExtractedEntity:
    return ExtractedEntity(name=name, entity_type=etype, summary=summary)


def edge(
    src: str,
    tgt: str,
    fact: str,
    rtype: str | None = None,
    *,
    valid_at: str | None = None,
    invalid_at: str | None = None,
) -> ExtractedEdge:
    return ExtractedEdge(
        source_name=src,
        target_name=tgt,
        fact=fact,
        relation_type=rtype,
        valid_at=valid_at,
        invalid_at=invalid_at,
    )


class Harness:
    """One group of the module's workspace, and the extraction of episodes into it."""

    def __init__(self, ws: Workspace, group_id: str, root: Path) -> None:
        self.ws, self.group, self.root = ws, group_id, root
        self.episodes = 0

    def entity(self, name: str, *, group_id: str | None = None, **kw: Any) -> str:
        """Assert an entity of the group (or of ``group_id``); its uuid."""
        made = assertion.assert_entity(self.ws, name=name, group_id=group_id or self.group, **kw)
        return made.entity_uuid

    def ontology(self, text: str) -> None:
        """The workspace ontology the next extractions use."""
        (self.root / ".lcg").mkdir(parents=True, exist_ok=True)
        (self.root / ".lcg" / "ontology.yaml").write_text(text)

    def run(
        self,
        entities: Sequence[ExtractedEntity],
        edges: Sequence[ExtractedEdge] = (),
        **output: Any,
    ) -> Run:
        """Store an episode, extract it with this answer, return the event it appended."""
        answer = ExtractionOutput(entities=list(entities), edges=list(edges), **output)
        svc = ExtractionService(
            ScriptedExtractor(default=answer), OntologyLoader(self.root), concurrency=1
        )
        self.episodes += 1
        try:
            added = episodes.add_episode(
                self.ws,
                episode_body=f"episode {self.episodes}",
                group_id=self.group,
                reference_time=REF,
            )
            result = svc.extract_episode(self.ws, added.episode_uuid)
        finally:
            svc.close()
        assert result.status == "extracted", result
        last = list(self.ws.store.reader(self.group).events())[-1]
        assert isinstance(last, EpisodeExtracted) and last.episode_uuid == added.episode_uuid
        return Run(last, result)


@pytest.fixture
def h(shared_ws: Workspace, group: str, tmp_path: Path) -> Harness:
    return Harness(shared_ws, group, tmp_path)


def _names(r: Run) -> list[str]:
    return [e.name for e in r.event.entities_created]


# ---- entities ---------------------------------------------------------------------------


def test_an_empty_answer_still_marks_the_episode_extracted(h: Harness) -> None:
    r = h.run([])
    ev = r.event
    assert not (ev.entities_created or ev.entities_updated or ev.edges_created)
    assert not (ev.edges_restated or ev.edges_dropped or ev.mentions)
    assert r.result.counters.nodes_extracted == 0
    again = ExtractionService(ScriptedExtractor(default=ExtractionOutput()))
    assert again.extract_episode(h.ws, ev.episode_uuid).status == "already_extracted"


def test_a_blank_named_entity_is_dropped_and_not_counted(h: Harness) -> None:
    r = h.run([ent("   "), ent("\x00"), ent("Neil Armstrong")])
    assert _names(r) == ["Neil Armstrong"]
    assert r.result.counters.nodes_extracted == 1


def test_a_new_entity_takes_its_type_as_a_label_and_the_episode_time(h: Harness) -> None:
    r = h.run([ent("Neil Armstrong", "person"), ent("Moon"), ent("NASA", "Entity")])
    labels = {e.name: e.labels for e in r.event.entities_created}
    assert labels == {
        "Neil Armstrong": ["Entity", "Person"],  # PascalCase
        "Moon": ["Entity"],  # untyped
        "NASA": ["Entity"],  # "Entity" is no type
    }
    assert {e.created_at for e in r.event.entities_created} == {REF}
    assert all(e.attributes == "{}" for e in r.event.entities_created)


def test_a_new_entitys_summary_is_capped(h: Harness) -> None:
    long = " ".join(f"Sentence number {i} about the Moon." for i in range(60))
    r = h.run([ent("Moon", "", long)])
    summary = r.event.entities_created[0].summary
    assert len(summary) <= SUMMARY_CAP and summary.endswith(".") and long.startswith(summary)


def test_names_said_twice_in_one_episode_are_one_entity(h: Harness) -> None:
    r = h.run(
        [
            ent("Buzz Aldrin", "", "An astronaut."),
            ent("buzz  aldrin", "Person", "He walked on the Moon."),  # exact key
            ent("Buzz Aldrinn", "Pilot", "An astronaut."),  # fuzzy; says nothing new
        ],
    )
    (only,) = r.event.entities_created
    assert only.name == "Buzz Aldrin", "the first spelling is kept"
    assert only.labels == ["Entity", "Person"], "the first non-empty type is kept"
    assert only.summary == "An astronaut. He walked on the Moon."
    assert r.event.mentions == [only.uuid]
    assert r.result.counters.nodes_extracted == 3, "every extracted name is counted"


def test_a_known_name_resolves_to_the_existing_entity(h: Harness) -> None:
    known = h.entity("Neil Armstrong", summary="An astronaut.")
    r = h.run([ent("NEIL ARMSTRONG", "Person", "An astronaut."), ent("Moon")])
    assert _names(r) == ["Moon"]
    assert r.event.mentions[0] == known
    assert r.event.entities_updated == [], "a summary that adds nothing is no update"
    assert r.result.counters.entities_matched == 1


def test_a_matched_entity_gains_only_the_new_sentences_of_its_summary(h: Harness) -> None:
    known = h.entity("Neil Armstrong", summary="An astronaut.", labels=["Pilot"])
    r = h.run([ent("Neil Armstrong", "Person", "An astronaut. He flew Gemini 8.")])
    (update,) = r.event.entities_updated
    assert (update.uuid, update.summary) == (known, "An astronaut. He flew Gemini 8.")
    assert r.event.entities_created == []


def test_two_batch_names_resolving_to_one_entity_make_one_update(h: Harness) -> None:
    known = h.entity("International Space Station Alpha", summary="A station.")
    r = h.run(
        [
            ent("International Space Station Alpha", "", "It orbits Earth."),
            ent("Space Station Alpha", "", "It was crewed in 2000."),  # by name vector
        ],
    )
    assert r.event.entities_created == []
    assert r.event.mentions == [known], "mentioned once"
    (update,) = r.event.entities_updated
    assert update.summary == "A station. It orbits Earth. It was crewed in 2000."


def test_an_entity_of_another_group_is_never_matched(h: Harness) -> None:
    other = h.entity("Neil Armstrong", group_id=h.group + "-other")
    r = h.run([ent("Neil Armstrong")])
    (created,) = r.event.entities_created
    assert created.uuid != other and r.event.mentions == [created.uuid]


# ---- edges: endpoints -------------------------------------------------------------------


def test_an_edge_between_batch_entities_is_created_with_the_reference_shape(h: Harness) -> None:
    r = h.run(
        [ent("Neil Armstrong"), ent("Apollo 11")],
        [edge("neil armstrong", "Apollo-11", "Armstrong commanded Apollo 11.", "commanded")],
    )
    by_name = {e.name: e.uuid for e in r.event.entities_created}
    (made,) = r.event.edges_created
    assert made.name == "Neil Armstrong \u2192 Apollo 11", "the batch entities' names"
    assert (made.source_uuid, made.target_uuid) == (by_name["Neil Armstrong"], by_name["Apollo 11"])
    assert made.relation_type == "COMMANDED"
    assert (made.valid_at, made.invalid_at, made.created_at) == (REF, None, REF)
    assert made.episodes == [r.event.episode_uuid]
    assert r.result.counters.edges_extracted == 1


def test_an_untyped_edge_is_typed_from_its_facts_first_words(h: Harness) -> None:
    r = h.run(
        [ent("Neil Armstrong"), ent("Apollo 11")],
        [edge("Neil Armstrong", "Apollo 11", "Armstrong flew on Apollo 11 in 1969.")],
    )
    assert r.event.edges_created[0].relation_type == "ARMSTRONG_FLEW_ON_APOLLO"


def test_an_endpoint_the_batch_lacks_is_looked_up_in_the_group(h: Harness) -> None:
    nasa = h.entity("NASA")
    r = h.run([ent("Neil Armstrong")], [edge("Neil Armstrong", "nasa", "Worked at NASA.")])
    (made,) = r.event.edges_created
    assert made.target_uuid == nasa
    assert made.name == "Neil Armstrong \u2192 nasa", "a group endpoint keeps the extracted name"
    assert nasa not in r.event.mentions, "an endpoint is not a mention"


@pytest.mark.parametrize(
    ("src", "tgt", "side"),
    [
        ("Ghost", "Neil Armstrong", "source"),
        ("Neil Armstrong", "Ghost", "target"),
        ("Ghost", "Phantom", "both"),
    ],
)
def test_an_endpoint_found_nowhere_drops_the_edge_and_says_which(
    h: Harness, src: str, tgt: str, side: str
) -> None:
    r = h.run([ent("Neil Armstrong")], [edge(src, tgt, "They met.", "MET")])
    assert r.event.edges_created == []
    (dropped,) = r.event.edges_dropped
    assert (dropped.reason, dropped.unresolved_endpoint) == ("unresolvable", side)
    assert (dropped.source_name, dropped.target_name, dropped.relation_type) == (src, tgt, "MET")
    c = r.result.counters
    assert (c.edges_dropped_unresolvable, c.dropped_edges) == (1, [dropped])


def test_an_endpoint_in_another_group_is_found_nowhere(h: Harness) -> None:
    h.entity("NASA", group_id=h.group + "-other")
    r = h.run([ent("Neil Armstrong")], [edge("Neil Armstrong", "NASA", "Worked.")])
    assert [d.unresolved_endpoint for d in r.event.edges_dropped] == ["target"]


def test_an_unknown_endpoint_close_to_a_batch_entity_by_vector_is_salvaged(h: Harness) -> None:
    r = h.run(
        [ent("International Space Station Alpha"), ent("Neil Armstrong")],
        [edge("Neil Armstrong", "Space Station Alpha", "He visited the station.", "VISITED")],
    )
    station = next(e.uuid for e in r.event.entities_created if "Station" in e.name)
    (made,) = r.event.edges_created
    assert made.target_uuid == station
    assert made.name == "Neil Armstrong \u2192 International Space Station Alpha"


# ---- edges: self-loops and duplicates ---------------------------------------------------


def test_an_edge_between_one_name_twice_is_a_self_loop(h: Harness) -> None:
    r = h.run(
        [ent("Neil Armstrong")],
        [edge("Neil Armstrong", " NEIL armstrong", "He is himself.", "is")],
    )
    (loop,) = r.event.edges_dropped
    assert (loop.reason, loop.unresolved_endpoint) == ("self_loop", None)
    assert loop.relation_type == "is", "the extractor's own type is kept on a loop"
    assert r.result.counters.edges_dropped_unresolvable == 0, "a loop is not unresolvable"


def test_two_names_of_one_batch_entity_make_a_self_loop(h: Harness) -> None:
    r = h.run(
        [ent("Buzz Aldrin")],
        [edge("Buzz Aldrin", "Buzz Aldrinn", "Aldrin is Aldrin.", "SAME_AS")],
    )
    assert [d.reason for d in r.event.edges_dropped] == ["self_loop"]
    assert r.event.edges_created == []


def test_two_names_of_one_group_entity_make_a_self_loop(h: Harness) -> None:
    h.entity("Apollo 11")
    r = h.run([], [edge("Apollo-11", "apollo 11", "It is itself.", "IS")])
    assert [d.reason for d in r.event.edges_dropped] == ["self_loop"]
    assert r.event.edges_dropped[0].relation_type == "IS"


def test_an_edge_said_twice_in_one_episode_is_kept_once(h: Harness) -> None:
    r = h.run(
        [ent("Neil Armstrong"), ent("NASA")],
        [
            edge("Neil Armstrong", "NASA", "Armstrong worked for NASA.", "WORKED_FOR"),
            edge("Neil Armstrong", "NASA", "He was employed by NASA.", "WORKED_FOR"),  # same type
            edge("Neil Armstrong", "NASA", "Armstrong worked for NASA", "EMPLOYED_BY"),  # same fact
            edge("NASA", "Neil Armstrong", "NASA employed Armstrong.", "WORKED_FOR"),  # reversed
            edge("Neil Armstrong", "NASA", "Armstrong left NASA in 1971.", "LEFT"),  # new
        ],
    )
    facts = [e.fact for e in r.event.edges_created]
    assert facts == [
        "Armstrong worked for NASA.",
        "NASA employed Armstrong.",
        "Armstrong left NASA in 1971.",
    ]
    assert [d.reason for d in r.event.edges_dropped] == ["duplicate_in_episode"] * 2


# ---- edges: restatement of the group's current edges -----------------------------------


def _known_edge(h: Workspace, rtype: str = "WORKED_FOR") -> str:
    for name in ("Neil Armstrong", "NASA"):
        h.entity(name)
    return assertion.assert_relationship(
        h.ws,
        source_name="Neil Armstrong",
        target_name="NASA",
        predicate="works for",
        group_id=h.group,
        fact="Neil Armstrong worked for NASA.",
        relation_type=rtype,
    ).edge_uuid


def test_an_edge_restating_a_current_one_adds_the_episode_to_it(h: Harness) -> None:
    known = _known_edge(h)
    r = h.run(
        [ent("Neil Armstrong"), ent("NASA")],
        [edge("Neil Armstrong", "NASA", "Armstrong was an employee of NASA.", "WORKED_FOR")],
    )
    assert r.event.edges_created == []
    assert [(x.uuid, x.episode_uuid) for x in r.event.edges_restated] == [
        (known, r.event.episode_uuid)
    ]
    assert r.event.edges_invalidated == []
    c = r.result.counters
    assert (c.edges_extracted, c.edges_restated) == (0, 1)


def test_a_reversed_edge_restates_nothing(h: Harness) -> None:
    _known_edge(h)
    r = h.run(
        [ent("Neil Armstrong"), ent("NASA")],
        [edge("NASA", "Neil Armstrong", "NASA worked for Neil Armstrong.", "WORKED_FOR")],
    )
    assert r.event.edges_restated == [] and len(r.event.edges_created) == 1


def test_another_specific_type_with_another_fact_is_a_new_edge(h: Harness) -> None:
    _known_edge(h)
    r = h.run(
        [ent("Neil Armstrong"), ent("NASA")],
        [edge("Neil Armstrong", "NASA", "Armstrong left NASA in 1971.", "LEFT")],
    )
    assert r.event.edges_restated == [] and len(r.event.edges_created) == 1


def test_a_restatement_that_states_an_end_closes_the_current_edge(h: Harness) -> None:
    known = _known_edge(h)
    r = h.run(
        [ent("Neil Armstrong"), ent("NASA")],
        [
            edge(
                "Neil Armstrong",
                "NASA",
                "Armstrong worked for NASA until 1971.",
                "WORKED_FOR",
                invalid_at="1971-08-01T00:00:00Z",
            ),
            # Said again in the same episode: one restatement, one invalidation.
            edge("Neil Armstrong", "NASA", "He worked for NASA.", "WORKED_FOR"),
        ],
    )
    assert [x.uuid for x in r.event.edges_restated] == [known]
    (closed,) = r.event.edges_invalidated
    assert (closed.uuid, closed.reason) == (known, "ended")
    assert closed.invalid_at == parse_timestamp("1971-08-01T00:00:00Z", field="x")


def test_a_restatement_that_states_an_end_leaves_a_declared_edge_current(
    h: Harness, tmp_path: Path
) -> None:
    # A link a file declares (ADR 0203) is current while the file declares it: a model's
    # answer that it ended restates it (the episode is added) but never closes it.
    root = tmp_path / "notes"
    root.mkdir()
    resolve_source(h.ws, h.group, str(root), "folder", create=True)
    structure = DeclaredStructure(
        documents=[
            DeclaredDocument(path="a.md", name="Neil Armstrong"),
            DeclaredDocument(path="b.md", name="NASA"),
        ],
        edges=[
            DeclaredEdge(
                relation_type="LINKS_TO",
                source="a.md",
                target="b.md",
                fact="Neil Armstrong links to NASA.",
            )
        ],
    )
    declare_structure(h.ws, h.group, str(root), structure)
    r = h.run(
        [ent("Neil Armstrong"), ent("NASA")],
        [
            edge(
                "Neil Armstrong",
                "NASA",
                "Neil Armstrong links to NASA until 1971.",
                "LINKS_TO",
                invalid_at="1971-08-01T00:00:00Z",
            )
        ],
    )
    assert len(r.event.edges_restated) == 1 and r.event.edges_created == []
    assert r.event.edges_invalidated == []


def test_a_generic_type_restates_only_a_near_identical_fact(h: Harness) -> None:
    known = _known_edge(h, rtype="RELATES_TO")
    r = h.run(
        [ent("Neil Armstrong"), ent("NASA")],
        [
            edge("Neil Armstrong", "NASA", "Armstrong trained at NASA.", "RELATES_TO"),
            edge("Neil Armstrong", "NASA", "neil armstrong worked for NASA", "OTHER"),
        ],
    )
    assert [e.fact for e in r.event.edges_created] == ["Armstrong trained at NASA."]
    assert [x.uuid for x in r.event.edges_restated] == [known]


def test_an_edge_to_a_new_entity_is_never_a_restatement(h: Harness) -> None:
    _known_edge(h)
    r = h.run(
        [ent("Neil Armstrong"), ent("ESA")],
        [edge("Neil Armstrong", "ESA", "Neil Armstrong worked for NASA.", "WORKED_FOR")],
    )
    assert r.event.edges_restated == [] and len(r.event.edges_created) == 1


# ---- edges: time fields -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("valid_at", "invalid_at", "want_valid", "want_invalid"),
    [
        ("1969-07-20T20:17:00Z", None, "1969-07-20T20:17:00Z", None),
        (
            "1969-07-20 20:17:00",
            "1969-07-24T16:50:35+01:00",
            "1969-07-20T20:17:00Z",
            "1969-07-24T15:50:35Z",
        ),
        ("July 1969", "soon", None, None),  # not timestamps: the episode's time, no end
        ("", "", None, None),
    ],
)
def test_edge_times_are_the_llms_when_they_parse_else_the_episodes(
    h: Harness,
    valid_at: str,
    invalid_at: str | None,
    want_valid: str | None,
    want_invalid: str | None,
) -> None:
    r = h.run(
        [ent("Apollo 11"), ent("Moon")],
        [
            edge(
                "Apollo 11",
                "Moon",
                "It landed.",
                "LANDED_ON",
                valid_at=valid_at,
                invalid_at=invalid_at,
            )
        ],
    )
    (made,) = r.event.edges_created
    expected_valid = parse_timestamp(want_valid, field="x") if want_valid else REF
    expected_invalid = parse_timestamp(want_invalid, field="x") if want_invalid else None
    assert (made.valid_at, made.invalid_at) == (expected_valid, expected_invalid)


# ---- what the extractor reported --------------------------------------------------------


def test_the_extractors_model_and_malformed_counts_are_recorded(h: Harness) -> None:
    r = h.run(
        [ent("Moon")],
        entities_dropped_malformed=2,
        edges_dropped_malformed=3,
        model="some-model-v1",
    )
    ev = r.event
    assert (ev.model, ev.entities_dropped_malformed, ev.edges_dropped_malformed) == (
        "some-model-v1",
        2,
        3,
    )
    c = r.result.counters
    assert (c.entities_dropped_malformed, c.edges_dropped_malformed) == (2, 3)
    plain = h.run([ent("Mars")])
    assert plain.event.model == "scripted-test-double", "else the extractor's model id"


def test_mentions_follow_the_batch_order(h: Harness) -> None:
    known = h.entity("NASA")
    r = h.run([ent("Moon"), ent("NASA"), ent("Mars")])
    created = {e.name: e.uuid for e in r.event.entities_created}
    assert r.event.mentions == [created["Moon"], known, created["Mars"]]


# ---- the ontology -----------------------------------------------------------------------

STRICT = """\
mode: strict
entity_types:
  - {name: Agent}
  - {name: Person, parent: Agent}
  - {name: Mission}
relation_types:
  - {name: COMMANDED, aliases: [LED]}
"""


def test_a_strict_ontology_labels_declared_types_with_their_parents(h: Harness) -> None:
    h.ontology(STRICT)
    r = h.run([ent("Neil Armstrong", "person")])
    assert r.event.entities_created[0].labels == ["Entity", "Agent", "Person"]
    assert r.result.counters.entities_reclassified_unclassified == 0


def test_a_strict_ontology_makes_an_undeclared_type_unclassified_and_keeps_it(h: Harness) -> None:
    h.ontology(STRICT)
    r = h.run([ent("Moon", "Planet"), ent("Mars")])
    moon, mars = r.event.entities_created
    assert moon.labels == ["Entity", "Unclassified"]
    assert moon.attributes == '{"original_entity_type":"Planet"}'
    assert mars.labels == ["Entity"], "untyped stays untyped"
    assert r.event.entities_reclassified_unclassified == 1


def test_a_strict_ontology_maps_relation_aliases_and_unclassifies_the_rest(h: Harness) -> None:
    h.ontology(STRICT)
    r = h.run(
        [ent("Neil Armstrong", "Person"), ent("Apollo 11", "Mission")],
        [
            edge("Neil Armstrong", "Apollo 11", "Armstrong led Apollo 11.", "led"),
            edge("Apollo 11", "Neil Armstrong", "Apollo 11 carried Armstrong.", "carried"),
            edge("Neil Armstrong", "Ghost", "Armstrong met a ghost.", "met"),  # dropped
        ],
    )
    led, carried = r.event.edges_created
    assert (led.relation_type, led.attributes) == ("COMMANDED", "{}")
    assert carried.relation_type == "UNCLASSIFIED"
    assert carried.attributes == '{"original_relation_type":"carried"}'
    assert r.event.edges_dropped[0].relation_type == "UNCLASSIFIED"
    assert r.event.edges_reclassified_unclassified == 1, "a dropped edge is not counted"


def test_an_open_ontology_keeps_undeclared_types(h: Harness) -> None:
    h.ontology(STRICT.replace("mode: strict", "mode: open"))
    r = h.run(
        [ent("Moon", "Planet"), ent("Neil Armstrong", "Person")],
        [edge("Neil Armstrong", "Moon", "He walked on it.", "walked on")],
    )
    labels = {e.name: e.labels for e in r.event.entities_created}
    assert labels == {"Moon": ["Entity", "Planet"], "Neil Armstrong": ["Entity", "Agent", "Person"]}
    assert r.event.edges_created[0].relation_type == "WALKED_ON"
    assert r.event.entities_reclassified_unclassified == 0


def test_a_type_made_unclassified_on_a_second_mention_is_counted(h: Harness) -> None:
    h.ontology(STRICT)
    r = h.run([ent("Moon"), ent("moon", "Planet")])
    (moon,) = r.event.entities_created
    assert moon.labels == ["Entity", "Unclassified"]
    assert moon.attributes == '{"original_entity_type":"Planet"}'
    assert r.event.entities_reclassified_unclassified == 1
    assert r.result.counters.entities_reclassified_unclassified == 1


def test_a_name_resolves_whatever_type_either_side_has_and_keeps_the_labels(h: Harness) -> None:
    # No type check in resolution (as the reference, which only logs the conflict): the
    # name decides, and a match never relabels (docs/adr/0034).
    planet = h.entity("Mercury", labels=["Planet"])
    r = h.run([ent("Mercury", "Mission", "A crewed programme.")])
    assert r.event.entities_created == [] and r.event.mentions == [planet]
    with h.ws.reading():
        found = gr.entity_record(h.ws.graph, planet)
    assert found is not None and found[1].labels == ["Entity", "Planet"]
