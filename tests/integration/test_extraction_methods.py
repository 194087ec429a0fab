"""The extraction and curation methods over a real socket (real Kuzu, stream, server), with the
scripted extractor (TEST DOUBLE) and the hash embedder (TEST DOUBLE).

The methods are registered on a real ``ServiceApp`` here (``app.registry.add``), as the
service's method table will once they are wired into ``lcg.rpc.methods``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import _service_fixtures as sf
from lcg.config import Config
from lcg.errors import ConfigError
from lcg.extract.extractor import ExtractedEdge, ExtractedEntity, ExtractionOutput
from lcg.extract.scripted import ScriptedExtractor
from lcg.ingest import curation, episodes
from lcg.ingest.curation import corrections
from lcg.ingest.extraction import ExtractionService
from lcg.rpc.app import ServiceApp
from lcg.rpc.server import Server, serve
from lcg.workspace.ontology_files import OntologyLoader

G = "liminis"
ONTOLOGY = """\
mode: open
entity_types:
  - {name: Agent}
  - {name: Person, parent: Agent}
  - {name: Mission}
relation_types:
  - {name: COMMANDED, aliases: [LED]}
  - {name: WORKED_FOR, keywords: [employ]}
  - {name: FLEW_ON, description: a person flew on a mission}
"""

T1 = "Neil Armstrong led Apollo 11 for NASA."
T2 = "N. Armstrong and NASA worked with ESA."


def _e(name: str, etype: str = "", summary: str = "") -> ExtractedEntity:
    return ExtractedEntity(name=name, entity_type=etype, summary=summary)


def _r(src: str, tgt: str, fact: str, rtype: str) -> ExtractedEdge:
    return ExtractedEdge(source_name=src, target_name=tgt, fact=fact, relation_type=rtype)


TABLE = {
    T1: ExtractionOutput(
        entities=[
            _e("Neil Armstrong", "Person", "An astronaut."),
            _e("Apollo 11", "Mission"),
            _e("NASA", "Organization"),
            _e("Moon", ""),
        ],
        edges=[
            _r("Neil Armstrong", "Apollo 11", "Neil Armstrong led Apollo 11.", "LED"),
            _r("Neil Armstrong", "NASA", "Armstrong was employed by NASA.", "EMPLOYED_BY"),
            _r("Apollo 11", "Moon", "Apollo 11 went to the Moon.", "WENT_TO"),
        ],
    ),
    T2: ExtractionOutput(
        entities=[_e("N. Armstrong", "Person"), _e("NASA", "Organization"), _e("ESA", "")],
        edges=[
            _r("NASA", "ESA", "NASA partnered with ESA.", "PARTNERED"),
            _r("N. Armstrong", "NASA", "N. Armstrong trained at NASA.", "TRAINED_AT"),
        ],
    ),
}


class Svc:
    """A real ServiceApp with the extraction methods, behind the real socket server."""

    def __init__(self, root: Path) -> None:
        (root / ".lcg").mkdir(parents=True, exist_ok=True)
        (root / ".lcg" / "ontology.yaml").write_text(ONTOLOGY)
        self.root = root
        self.config = Config.from_env(
            root, env={**sf.HASH_ENV, "LIMINIS_WORKSPACE_ROOT": str(root)}
        )
        self.app = ServiceApp(self.config)
        self.extractor = ScriptedExtractor(
            TABLE,
            entity_types={"Moon": "Mission", "ESA": ""},
            relation_types={"Apollo 11 went to the Moon.": "FLEW_ON"},
        )
        self.app.extraction = ExtractionService(  # type: ignore[attr-defined]
            self.extractor, OntologyLoader(root), concurrency=4
        )
        bound = threading.Event()
        self.errors: list[BaseException] = []
        self.server: Server | None = None

        def started(server: Server) -> None:
            self.server = server
            bound.set()

        def run() -> None:
            try:
                asyncio.run(serve(self.app, self.config.socket_path, 5000, started=started))
            except BaseException as exc:  # noqa: BLE001 - reported by the fixture
                self.errors.append(exc)
                bound.set()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert bound.wait(60) and not self.errors, self.errors
        self.conn = sf.RawConnection(self.config.socket_path)
        with sf.Client(self.config.socket_path, timeout=60) as c:
            c.wait_ready(60)

    def ok(self, method: str, params: dict[str, Any]) -> Any:
        return self.conn.result(method, params)

    def streamed(self, method: str, params: dict[str, Any]) -> tuple[list[dict[str, Any]], Any]:
        """(progress frames, result) of a call made with ``_progress_token``."""
        self.conn.send_line(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 99,
                    "method": method,
                    "params": {**params, "_progress_token": "t"},
                }
            ).encode()
        )
        frames: list[dict[str, Any]] = []
        while True:
            msg = self.conn.read_message()
            if msg.get("type") == "progress":
                frames.append(msg)
                continue
            assert "error" not in msg, msg
            return frames, msg["result"]

    def events(self, group: str = G) -> list[dict[str, Any]]:
        return sf.stream_events(self.config.wal_dir).get(group, [])

    def close(self) -> None:
        try:
            self.conn.request("knowledge_close", {})
        except ConnectionError:
            pass
        self.conn.close()
        self.thread.join(60)
        assert not self.thread.is_alive()


def _story() -> list[Callable[[Svc], None]]:
    """The numbered tests ``test_<n>_…``, in story order: each continues from the one before."""
    numbered = {
        int(name.split("_")[1]): fn
        for name, fn in globals().items()
        if name.startswith("test_") and name.split("_")[1].isdigit()
    }
    return [numbered[n] for n in sorted(numbered)]


@pytest.fixture
def svc(request: pytest.FixtureRequest) -> Iterator[Svc]:
    """A fresh service where the story stands before this test: ``test_<n>_…`` gets steps 1 to
    n-1 replayed (their checks too), so each test runs alone and in any order."""
    step = int(request.node.name.split("_")[1])
    with sf.temp_workspace("lcg-ext-") as root:
        s = Svc(root)
        try:
            for earlier in _story()[: step - 1]:
                earlier(s)
            yield s
        finally:
            s.close()


def _types(svc: Svc) -> dict[str, str | None]:
    edges = svc.ok("knowledge_get_edges_by_group", {"group_ids": [G]})
    rows = edges if isinstance(edges, list) else edges.get("edges", edges.get("facts", []))
    return {e["fact"]: e["relation_type"] for e in rows}


def test_1_lite_chunks_then_extract_pending_streams(svc: Svc) -> None:
    # Stored without extraction (lite-mode ingestion, in process on the service's workspace).
    for i, text in enumerate([T1, T2]):
        r = episodes.process_chunk(
            svc.app.ws, chunk_text=text, chunk_id=f"c{i}", source_file="a.md", group_id=G
        )
        assert r.extraction.status == "pending"
    status = json.dumps(svc.ok("knowledge_status", {}))
    assert '"pending_episodes": 2' in status or '"pending_episodes":2' in status, status
    frames, res = svc.streamed("knowledge_extract_pending", {})
    assert res["success"] is True and res["extracted"] == 2 and res["remaining"] == 0
    assert res["nodes_extracted"] == 7 and res["edges_extracted"] == 5
    assert frames[0] == {"type": "progress", "phase": "extracting", "processed": 0, "total": 2}
    assert frames[-1]["processed"] == 2
    again = svc.ok("knowledge_extract_pending", {"group_id": G})
    assert again["attempted"] == 0
    kinds = [e["type"] for e in svc.events()]
    assert kinds.count("EpisodeExtracted") == 2


def test_2_backfill_and_canonicalize_validation_is_hard(svc: Svc) -> None:
    for method in ("knowledge_backfill_relation_types", "knowledge_canonicalize_relations"):
        for bad in ({}, {"group_id": ""}, {"group_id": None}):
            err = svc.conn.error(method, bad)
            assert "group_id is required and must be a non-empty string" in err["message"]
    err = svc.conn.error(
        "knowledge_canonicalize_relations", {"group_id": G, "embedding_threshold": "x"}
    )
    assert "embedding_threshold" in err["message"]
    backfill = svc.ok("knowledge_backfill_relation_types", {"group_id": G})
    assert backfill == {"group_id": G, "total_edges": 5, "backfilled": 0, "dry_run": False}


def test_3_canonicalize_dry_run_then_apply(svc: Svc) -> None:
    before = len(svc.events())
    dry = svc.ok("knowledge_canonicalize_relations", {"group_id": G, "dry_run": True})
    assert len(svc.events()) == before, "a dry run appends nothing"
    assert dry["total_edges"] == 5 and dry["dry_run"] is True
    assert (dry["mapped_count"], dry["noise_count"], dry["residual_count"]) == (2, 1, 2)
    assert dry["mapped_pct"] == 40.0 and dry["noise_pct"] == 20.0
    frames, res = svc.streamed("knowledge_canonicalize_relations", {"group_id": G})
    assert {f["phase"] for f in frames} >= {"lexical", "writing"}
    assert frames[-1]["total_mutations"] == 4
    assert res["mapped_count"] == 2 and res["dry_run"] is False
    types = _types(svc)
    assert types["Neil Armstrong led Apollo 11."] == "COMMANDED"
    assert types["Armstrong was employed by NASA."] == "WORKED_FOR"
    assert types["Apollo 11 went to the Moon."] == "UNCLASSIFIED"
    assert types["NASA partnered with ESA."] == "PARTNERED", "noise with a type is kept"
    changed = [e for e in svc.events() if e["type"] == "RelationTypesChanged"]
    assert len(changed) == 1 and changed[0]["cause"] == "canonicalize"


def test_4_reprocess_relation_types(svc: Svc) -> None:
    soft = svc.ok("knowledge_reprocess_relation_types", {"scope": "bogus"})
    assert soft["success"] is False and "scope" in soft["error"]
    dry = svc.ok("knowledge_reprocess_relation_types", {"scope": "off_ontology", "dry_run": True})
    assert dry["would_reclassify_count"] == 2
    assert dry["breakdown"] == {"FLEW_ON": 1, "UNCLASSIFIED": 1}
    assert {p["new_type"] for p in dry["plan"]} == {"FLEW_ON", "UNCLASSIFIED"}
    res = svc.ok("knowledge_reprocess_relation_types", {"scope": "off_ontology"})
    assert res == {
        "success": True,
        "reclassified_count": 2,
        "unchanged_count": 1,
        "group_id": G,
        "breakdown": {"FLEW_ON": 1, "UNCLASSIFIED": 1},
    }
    assert _types(svc)["Apollo 11 went to the Moon."] == "FLEW_ON"


def test_5_reprocess_entity_types_and_restamp(svc: Svc) -> None:
    svc.ok("knowledge_assert_entity", {"name": "Buzz Aldrin", "labels": ["Person"]})
    dry = svc.ok("knowledge_reprocess_entity_types", {"dry_run": True})
    assert dry["would_reclassify_count"] == 1
    assert dry["plan"][0]["entity_name"] == "Moon" and dry["plan"][0]["new_type"] == "Mission"
    frames, res = svc.streamed("knowledge_reprocess_entity_types", {})
    assert res["success"] is True and res["reclassified_count"] == 1
    assert res["unchanged_count"] == 1  # ESA: the classifier abstained
    assert res["restamped_count"] == 1  # Buzz Aldrin: Person gains its parent Agent
    assert [f["phase"] for f in frames][-1] == "restamping"
    nodes = svc.ok("knowledge_get_nodes_by_group", {"group_ids": [G]})
    rows = nodes if isinstance(nodes, list) else nodes.get("nodes", [])
    labels = {n["name"]: n["labels"] for n in rows}
    assert labels["Moon"] == ["Entity", "Mission"]
    assert labels["Buzz Aldrin"] == ["Entity", "Agent", "Person"]
    assert labels["Neil Armstrong"] == ["Entity", "Agent", "Person"]
    soft = svc.ok("knowledge_reprocess_entity_types", {"scope": "everything"})
    assert soft["success"] is False


def test_6_backfill_summary_embeddings_changes_nothing(svc: Svc) -> None:
    before = len(svc.events())
    frames, res = svc.streamed("knowledge_backfill_summary_embeddings", {"group_id": G})
    assert res["candidates"] == 1 and res["embedded"] == 0  # only Neil has a summary
    assert frames and len(svc.events()) == before
    err = svc.conn.error("knowledge_backfill_summary_embeddings", {})
    assert "group_id is required" in err["message"]


CORRECTIONS = """\
# curated by hand
corrections:
  - id: merge-neil   # keep this comment
    type: same_as
    canonical: Neil Armstrong
    aliases: ["N. Armstrong"]
  - id: old
    type: retract
    edge_uuid: does-not-matter
    applied_at: "2024-01-01T00:00:00Z"
  - {id: drop-edge, type: retract, edge_uuid: EDGE}
"""


def test_7_corrections_validate_and_apply(svc: Svc) -> None:
    path = svc.root / ".liminis" / "knowledge-corrections.yaml"
    none = svc.ok("knowledge_validate_corrections", {})
    assert none["valid"] is True and none["message"] == "No corrections file found"
    path.parent.mkdir(exist_ok=True)
    path.write_text("corrections:\n  - {type: same_as}\n  - {id: x, type: rename}\n")
    bad = svc.ok("knowledge_validate_corrections", {})
    assert bad["valid"] is False and len(bad["issues"]) >= 3
    edges = svc.ok("knowledge_get_edges_by_group", {"group_ids": [G]})
    rows = edges if isinstance(edges, list) else edges.get("edges", edges.get("facts", []))
    target = next(e for e in rows if e["fact"] == "NASA partnered with ESA.")
    path.write_text(CORRECTIONS.replace("EDGE", target["uuid"]))
    ok = svc.ok("knowledge_validate_corrections", {})
    assert ok["issues"] == [] or ok["issues"] == [
        "correction old: edge_uuid 'does-not-matter' does not exist"
    ]
    assert ok["total_corrections"] == 3 and ok["unapplied_corrections"] == 2
    dry = svc.ok("knowledge_apply_corrections", {"dry_run": True})
    assert [d["action"] for d in dry["details"]] == ["dry_run:same_as", "dry_run:retract"]
    assert "applied_at" not in path.read_text().split("id: old")[0]
    res = svc.ok("knowledge_apply_corrections", {})
    assert res["success"] is True, res
    assert res["applied"] == 2 and res["skipped"] == 1
    text = path.read_text()
    assert "# curated by hand" in text and "# keep this comment" in text
    import yaml

    entries = yaml.safe_load(text)["corrections"]
    assert all(e.get("applied_at") for e in entries)
    applied = [e for e in svc.events() if e["type"] == "CorrectionsApplied"]
    assert [a["correction_ids"] for a in applied] == [["merge-neil"], ["drop-edge"]]
    assert applied[0]["merges"][0]["aliases"][0]["labels"][-1] == "Merged"
    again = svc.ok("knowledge_apply_corrections", {})
    assert again["applied"] == 0 and again["skipped"] == 3


def test_canonicalize_needs_relation_types(tmp_path: Path) -> None:
    from lcg.workspace import Workspace

    config = Config.from_env(tmp_path, env=sf.HASH_ENV)
    with Workspace.open(config) as ws:
        with pytest.raises(ConfigError, match="no ontology with relation types"):
            curation.canonicalize_relations(ws, None, group_id=G)
        # Without LIMINIS_WORKSPACE_ROOT: the reference's error, not a soft result.
        with pytest.raises(ConfigError, match=curation.NO_ROOT_MESSAGE):
            curation.validate_corrections(ws, None)
        with pytest.raises(ConfigError, match=curation.NO_ROOT_MESSAGE):
            curation.apply_corrections(ws, None)


def test_stamp_applied_handles_block_and_flow_entries(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "corrections:\n"
        "- id: 'a'\n"
        "  type: retract\n"
        "  applied_at:\n"
        "  edge_uuid: e1\n"
        "- {id: b, type: retract, edge_uuid: e2}  # flow\n"
        "- id: c\n"
        "  type: retract\n"
    )
    corrections._stamp_applied(path, ["a", "b"], "2025-01-01T00:00:00Z")
    import yaml

    entries = yaml.safe_load(path.read_text())["corrections"]
    assert [e.get("applied_at") for e in entries] == [
        "2025-01-01T00:00:00Z",
        "2025-01-01T00:00:00Z",
        None,
    ]
    assert "# flow" in path.read_text()
    with pytest.raises(ValueError, match="not found"):
        corrections._stamp_applied(path, ["zzz"], "2025-01-01T00:00:00Z")


def test_canonicalize_embedding_fallback_and_backfill_of_untyped_edges(tmp_path: Path) -> None:
    from lcg.events.model import RelationTypesChanged
    from lcg.extract.ontology import parse_ontology
    from lcg.ingest import assertion
    from lcg.projections.graph import records as gr
    from lcg.workspace import Workspace

    onto = parse_ontology(
        "relation_types:\n"
        "  - {name: LANDED_ON, description: the spacecraft landed on the surface of the moon}\n"
    )
    config = Config.from_env(tmp_path, env=sf.HASH_ENV)
    with Workspace.open(config) as ws:
        svc = ExtractionService(ScriptedExtractor(TABLE))
        svc.process_chunk(ws, chunk_text=T1, chunk_id="c1", source_file="a.md", group_id=G)
        assertion.assert_relationship(
            ws,
            source_name="Neil Armstrong",
            target_name="Moon",
            predicate="the spacecraft landed on the surface of the moon",
            group_id=G,
            fact="the spacecraft landed on the surface of the moon",
        )
        assertion.assert_relationship(
            ws,
            source_name="Moon",
            target_name="NASA",
            predicate="Moon → NASA",
            group_id=G,
            fact="Moon rocks went to NASA labs",
        )
        frames: list[curation.CurationFrame] = []
        res = curation.canonicalize_relations(
            ws, onto, group_id=G, dry_run=True, progress=frames.append
        )
        assert res["total_edges"] == 5 and res["embedding_fallback_promoted"] >= 1
        assert [f.phase for f in frames][:2] == ["lexical", "embedding_fallback"]
        dry = curation.backfill_relation_types(ws, group_id=G, dry_run=True)
        assert dry == {"group_id": G, "total_edges": 5, "backfilled": 2, "dry_run": True}
        done = curation.backfill_relation_types(ws, group_id=G)
        assert done["backfilled"] == 2
        with ws.reading():
            types = {e.fact: e.relation_type for e in gr.all_edges(ws.graph, G)}
        assert types["Moon rocks went to NASA labs"] == "MOON_ROCKS_WENT_TO"
        assert types["the spacecraft landed on the surface of the moon"] == (
            "THE_SPACECRAFT_LANDED_ON_THE_SURFACE_OF_THE_MOON"
        )
        assert curation.backfill_relation_types(ws, group_id=G)["backfilled"] == 0
        changed = [e for e in ws.store.reader(G).events() if isinstance(e, RelationTypesChanged)]
        assert [c.cause for c in changed] == ["backfill"]


def test_validate_reports_alias_cycles_and_bad_references(tmp_path: Path) -> None:
    from lcg.workspace import Workspace

    (tmp_path / ".liminis").mkdir()
    (tmp_path / ".liminis" / "knowledge-corrections.yaml").write_text(
        "corrections:\n"
        "  - {id: a, type: same_as, canonical: Alpha, aliases: [Beta]}\n"
        "  - {id: b, type: same_as, canonical: beta, aliases: [Gamma]}\n"
        "  - {id: c, type: same_as, canonical: Gamma, aliases: [ALPHA]}\n"
        "  - {id: a, type: retract, edge_uuid: nope}\n"
        "  - {id: d, type: same_as, canonical_uuid: missing, aliases: [x]}\n"
        "  - {id: e, type: same_as, canonical: Self, aliases: [self]}\n"
    )
    config = Config.from_env(tmp_path, env=sf.HASH_ENV)
    with Workspace.open(config) as ws:
        res = curation.validate_corrections(ws, tmp_path)
    assert res.valid is False and res.total_corrections == 6
    joined = "\n".join(res.issues)
    assert "alias cycle: alpha → beta → gamma → alpha" in joined
    assert "correction a: duplicate id" in joined
    assert "edge_uuid 'nope' does not exist" in joined
    assert "canonical_uuid 'missing' does not exist" in joined
    assert "'Self' is its own alias" in joined
    assert any("matches no entity" in w for w in res.warnings)
