"""The ontology: parsing, normalisation, hierarchy, the content hash, per-group loading."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pytest

from lcg.errors import CorruptFileError
from lcg.events.groups import encode_group
from lcg.extract.ontology import (
    NO_ONTOLOGY_HASH,
    drift_summary,
    hash_record,
    load_ontology_file,
    parse_ontology,
    pascal_case,
    screaming_snake,
)
from lcg.workspace.ontology_files import (
    OntologyLoader,
    hash_file_path,
    read_hash_file,
    write_hash_file,
)

APOLLO = Path(__file__).resolve().parents[3] / "examples/apollo/ontology.yaml"


@pytest.mark.parametrize(
    ("raw", "snake", "pascal"),
    [
        ("worked for", "WORKED_FOR", "WorkedFor"),
        ("workedFor", "WORKED_FOR", "WorkedFor"),
        ("worked-for", "WORKED_FOR", "WorkedFor"),
        ("WORKED_FOR", "WORKED_FOR", "WorkedFor"),
        ("  part of   mission ", "PART_OF_MISSION", "PartOfMission"),
        ("HTTPServer", "HTTP_SERVER", "HttpServer"),
        ("Apollo11 mission", "APOLLO11_MISSION", "Apollo11Mission"),
        ("PERSON", "PERSON", "Person"),
        ("person", "PERSON", "Person"),
        ("SoftwareProject", "SOFTWARE_PROJECT", "SoftwareProject"),
        ("is-a/kind of", "IS_A_KIND_OF", "IsAKindOf"),
        ("", "", ""),
        ("---", "", ""),
    ],
)
def test_case_normalisation(raw: str, snake: str, pascal: str) -> None:
    assert screaming_snake(raw) == snake
    assert pascal_case(raw) == pascal


def test_apollo_fixture_loads_strict_with_all_types() -> None:
    onto = load_ontology_file(APOLLO)
    assert onto is not None
    assert onto.mode == "strict" and onto.strict
    assert onto.entity_type_names == [
        "Product", "Organization", "Person", "Location", "Project", "Event",
        "System", "Concept", "Technology", "Award", "Document", "Facility",
    ]  # fmt: skip
    assert len(onto.relation_types) == 25
    assert onto.relation_type_names[:3] == ["PART_OF", "LAUNCHED", "FLEW_ON"]
    launched = onto.relation_type("launched")
    assert launched is not None
    assert "LAUNCHED_BY" in launched.aliases and "launch" in launched.keywords
    assert len(onto.hash) == 64 and onto.hash == load_ontology_file(APOLLO).hash  # type: ignore[union-attr]
    assert onto.source == str(APOLLO)


def test_apollo_strict_normalisation() -> None:
    onto = load_ontology_file(APOLLO)
    assert onto is not None
    assert onto.normalize_entity_type("person") == ("Person", None)
    assert onto.normalize_entity_type("PRODUCT") == ("Product", None)
    assert onto.normalize_entity_type("Spaceship") == ("Unclassified", "Spaceship")
    assert onto.normalize_entity_type("") == ("", None)
    assert onto.normalize_entity_type("Entity") == ("", None)
    assert onto.normalize_entity_type(None) == ("", None)
    assert onto.normalize_relation_type("launched by") == ("LAUNCHED", None)
    assert onto.normalize_relation_type("partOf") == ("PART_OF", None)
    assert onto.normalize_relation_type("crew member of") == ("CREWED", None)
    assert onto.normalize_relation_type("ORBITS") == ("UNCLASSIFIED", "ORBITS")
    assert onto.lookup_alias("graduated-from") == "ATTENDED"
    assert onto.lookup_alias("ORBITS") is None
    assert onto.match_keyword("was born in") == "BORN_IN"
    assert onto.match_keyword("MANUFACTURED_UNDER_CONTRACT") == "BUILT_BY"
    assert onto.match_keyword("ORBITS") is None
    assert onto.match_keyword("") is None
    assert onto.labels_for("Person") == ["Entity", "Person"]
    assert onto.labels_for("") == ["Entity"]


def test_open_mode_keeps_types_but_normalises_them() -> None:
    onto = parse_ontology(
        "entity_types: [{name: person}]\n"
        "relation_types: [{name: works for, aliases: [employed by]}]\n"
    )
    assert onto is not None and onto.mode == "open"
    assert onto.normalize_entity_type("spaceship") == ("Spaceship", None)
    assert onto.normalize_relation_type("employed by") == ("EMPLOYED_BY", None)
    assert onto.lookup_alias("employed by") == "WORKS_FOR"


def test_strict_with_only_relation_types_leaves_entity_types_alone() -> None:
    onto = parse_ontology("mode: strict\nrelation_types: [{name: KNOWS}]\n")
    assert onto is not None
    assert onto.normalize_entity_type("Spaceship") == ("Spaceship", None)
    assert onto.normalize_relation_type("likes") == ("UNCLASSIFIED", "likes")


def test_names_aliases_and_keywords_are_normalised_and_deduplicated() -> None:
    onto = parse_ontology(
        """
mode: STRICT
entity_types:
  - name: software project
    description: "  code  "
  - name: SoftwareProject
  - name: Entity
  - person
relation_types:
  - name: depends on
    aliases: [requires, dependsOn, requires, depends-on]
    keywords: [" Needs ", NEEDS]
    source_type: software project
"""
    )
    assert onto is not None and onto.mode == "strict"
    assert onto.entity_type_names == ["SoftwareProject", "Person"]
    assert onto.entity_types[0].description == "code"
    (rel,) = onto.relation_types
    assert rel.name == "DEPENDS_ON" and rel.aliases == ("REQUIRES",)
    assert rel.keywords == ("needs",) and rel.source_type == "SoftwareProject"


def test_hierarchy_ancestors_undeclared_parents_and_cycles() -> None:
    onto = parse_ontology(
        """
entity_types:
  - {name: Astronaut, parent: Person}
  - {name: Person, parent: Agent}
  - {name: Agent}
  - {name: Rocket, parent: Vehicle}
  - {name: Alpha, parent: Beta}
  - {name: Beta, parent: Alpha}
  - {name: Selfish, parent: Selfish}
  - {name: Thing, parent: Entity}
"""
    )
    assert onto is not None
    assert onto.ancestors["Astronaut"] == ("Agent", "Person")
    assert onto.labels_for("Astronaut") == ["Entity", "Agent", "Person", "Astronaut"]
    assert onto.entity_type("Rocket").parent is None  # type: ignore[union-attr]
    # The cycle is broken at the type declared first; the other keeps its parent.
    assert onto.entity_type("Alpha").parent is None  # type: ignore[union-attr]
    assert onto.ancestors["Beta"] == ("Alpha",)
    assert onto.entity_type("Selfish").parent is None  # type: ignore[union-attr]
    assert onto.entity_type("Thing").parent is None  # type: ignore[union-attr]
    assert onto.has_parents


def _reference_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_hash_follows_the_documented_formula() -> None:
    onto = parse_ontology(
        """
mode: strict
entity_types:
  - {name: Person, description: A human}
  - {name: Astronaut, parent: Person}
relation_types:
  - {name: FLEW_ON, description: flew, source_type: Person, target_type: Vehicle,
     aliases: [FLEW, FLEW_IN], keywords: [flew, aboard]}
  - {name: KNOWS}
"""
    )
    assert onto is not None
    ent = "\0\0".join(sorted(["Person\0A human", "Astronaut\0"]))
    rel = "\0\0".join(
        sorted(["FLEW_ON\0Person\0Vehicle\0flew\0FLEW,FLEW_IN\0aboard,flew", "KNOWS\0\0\0\0\0"])
    )
    expected = _reference_hash(
        f"mode:strict\nentity_types:{ent}\nrelation_types:{rel}\nparent_edges:Astronaut\0Person"
    )
    assert onto.hash == expected


def test_hash_without_parents_has_no_parent_section_and_ignores_order() -> None:
    a = parse_ontology("entity_types: [{name: A}, {name: B, description: b}]\n")
    b = parse_ontology("entity_types: [{name: B, description: b}, {name: A}]\n")
    assert a is not None and b is not None
    expected = _reference_hash("mode:open\nentity_types:A\0" + "\0\0" + "B\0b\nrelation_types:")
    assert a.hash == b.hash == expected


def test_hash_changes_with_mode_description_alias_and_parent() -> None:
    base = "entity_types: [{name: A}, {name: B}]\nrelation_types: [{name: R, aliases: [S]}]\n"
    variants = [
        base,
        "mode: strict\n" + base,
        base.replace("{name: A}", "{name: A, description: x}"),
        base.replace("[S]", "[T]"),
        base.replace("{name: B}", "{name: B, parent: A}"),
    ]
    hashes = set()
    for v in variants:
        onto = parse_ontology(v)
        assert onto is not None
        hashes.add(onto.hash)
    assert len(hashes) == len(variants)


@pytest.mark.parametrize("text", ["", "   \n", "# only a comment\n", "mode: strict\n"])
def test_empty_or_typeless_documents_are_no_ontology(text: str) -> None:
    assert parse_ontology(text) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("mode: loose\nentity_types: [A]\n", "mode must be open or strict"),
        ("- a\n- b\n", "top level must be a mapping"),
        ("entity_types: [{description: x}]\n", "needs a name"),
        ("entity_types: [A\n", "invalid YAML"),
    ],
)
def test_bad_documents_raise_value_error(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_ontology(text, source="x.yaml")


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_loader_group_file_wins_and_falls_back_to_workspace(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _write(tmp_path / ".lcg" / "ontology.yaml", "entity_types: [Workspace]\n")
    _write(tmp_path / ".lcg" / "ontology" / "alpha.yaml", "entity_types: [Alpha]\n")
    _write(tmp_path / ".lcg" / "ontology" / f"{encode_group('team/b')}.yaml", "entity_types: [B]\n")
    _write(tmp_path / ".lcg" / "ontology" / "broken.yaml", "entity_types: [A\n")
    loader = OntologyLoader(tmp_path)
    assert loader.for_group("alpha").entity_type_names == ["Alpha"]  # type: ignore[union-attr]
    assert loader.for_group("team/b").entity_type_names == ["B"]  # type: ignore[union-attr]
    assert loader.for_group("other").entity_type_names == ["Workspace"]  # type: ignore[union-attr]
    with caplog.at_level(logging.WARNING, logger="lcg.extract.ontology"):
        broken = loader.for_group("broken")
    assert broken is not None and broken.entity_type_names == ["Workspace"]
    assert "invalid YAML" in caplog.text
    assert loader.hash_for("alpha") == loader.for_group("alpha").hash  # type: ignore[union-attr]


def test_loader_loads_once_until_restart(tmp_path: Path) -> None:
    path = _write(tmp_path / ".lcg" / "ontology.yaml", "entity_types: [First]\n")
    loader = OntologyLoader(tmp_path)
    first = loader.for_group("g")
    path.write_text("entity_types: [Second]\n", encoding="utf-8")
    assert loader.for_group("g") is first
    assert OntologyLoader(tmp_path).for_group("g").entity_type_names == ["Second"]  # type: ignore[union-attr]


def test_loader_legacy_fallback_and_none(tmp_path: Path) -> None:
    assert OntologyLoader(None).for_group("g") is None
    assert OntologyLoader(None).hash_for("g") == NO_ONTOLOGY_HASH
    assert OntologyLoader(tmp_path).hash_for("g") == NO_ONTOLOGY_HASH
    _write(tmp_path / ".graphiti" / "ontology.yaml", "entity_types: [Legacy]\n")
    assert OntologyLoader(tmp_path).workspace().entity_type_names == ["Legacy"]  # type: ignore[union-attr]
    _write(tmp_path / ".lcg" / "ontology.yaml", "")
    # An empty .lcg file exists, so it is the workspace file, and it means "no ontology".
    assert OntologyLoader(tmp_path).workspace() is None


def test_hash_file_round_trip_and_corruption(tmp_path: Path) -> None:
    assert read_hash_file(tmp_path) is None
    onto = load_ontology_file(APOLLO)
    write_hash_file(tmp_path, onto)
    rec = read_hash_file(tmp_path)
    assert rec is not None and onto is not None
    assert rec.hash == onto.hash and rec.mode == "strict"
    assert rec.entity_types == onto.entity_type_names
    assert rec.relation_types == onto.relation_type_names
    write_hash_file(tmp_path, None)
    assert read_hash_file(tmp_path).hash == NO_ONTOLOGY_HASH  # type: ignore[union-attr]
    hash_file_path(tmp_path).write_text("{not json")
    with pytest.raises(CorruptFileError, match="ontology-hash.json is corrupt.*delete it"):
        read_hash_file(tmp_path)


def test_drift_summaries() -> None:
    a = parse_ontology("entity_types: [Person, Place]\nrelation_types: [KNOWS]\n")
    b = parse_ontology("mode: strict\nentity_types: [Person, Rocket]\nrelation_types: [KNOWS]\n")
    c = parse_ontology("entity_types: [{name: Person, description: x}, Place]\n"
                       "relation_types: [KNOWS]\n")  # fmt: skip
    assert a is not None and b is not None and c is not None
    # No record: drift only when an ontology meets a graph that already has episodes.
    assert drift_summary(None, None, has_episodes=True) is None
    assert drift_summary(None, a, has_episodes=False) is None
    assert drift_summary(None, a, has_episodes=True) == (
        "ontology added: open, 2 entity types, 1 relation types"
    )
    assert drift_summary(hash_record(a), a, has_episodes=True) is None
    assert drift_summary(hash_record(None), None, has_episodes=True) is None
    assert drift_summary(hash_record(None), a, has_episodes=True) == (
        "ontology added: open, 2 entity types, 1 relation types"
    )
    assert drift_summary(hash_record(a), None, has_episodes=True) == (
        "ontology removed (was open, 2 entity types, 1 relation types)"
    )
    assert drift_summary(hash_record(a), b, has_episodes=True) == (
        "ontology changed: mode open → strict; entity types +Rocket -Place"
    )
    assert drift_summary(hash_record(a), c, has_episodes=False) == (
        "ontology changed: descriptions, parents, aliases or keywords changed"
    )


def test_a_cleared_parent_is_logged_as_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    # The reference's "Ontology" page: "an undeclared parent is cleared with a warning; cycles
    # are detected and broken". ``parent: Entity`` names the root: nothing is cleared.
    text = """
entity_types:
  - {name: Rfc, parent: Document}
  - {name: Alpha, parent: Beta}
  - {name: Beta, parent: Alpha}
  - {name: Thing, parent: Entity}
"""
    with caplog.at_level(logging.WARNING, logger="lcg.extract.ontology"):
        onto = parse_ontology(text, source="onto.yaml")
    assert onto is not None and onto.entity_type("Rfc").parent is None  # type: ignore[union-attr]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings
    assert "onto.yaml: entity type Rfc: parent Document is not a declared" in warnings[0]
    assert "Alpha" in warnings[1] and "cycle" in warnings[1]


def test_the_workspace_file_is_read_when_the_loader_is_made(tmp_path: Path) -> None:
    # "loaded once at startup": a file added afterwards is neither found nor loaded.
    loader = OntologyLoader(tmp_path)
    _write(tmp_path / ".lcg" / "ontology.yaml", "entity_types: [Late]\n")
    assert (loader.workspace_found(), loader.workspace()) == (False, None)
    fresh = OntologyLoader(tmp_path)
    assert fresh.workspace_found() and fresh.workspace() is not None
