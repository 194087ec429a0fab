"""``StructureDeclared`` in the graph (ADR 0203): a removed entity goes with its MENTIONS; an
edge of its own group naming it is written back unbound, one of another group loses both hops
(as a purge leaves it); the locator always equals a fresh scan, and one event at a time or
the whole stream at once gives the same digest."""

from __future__ import annotations

from pathlib import Path

import pytest

from event_samples import G, H, added, edge, ent, stamp
from lcg.events.model import (
    CrossGroupEdgeAdded,
    EntityAsserted,
    Event,
    MentionRecord,
    RelationshipAsserted,
    StructureDeclared,
)
from lcg.projections.graph import GraphProjection
from lcg.projections.graph import _conn as _graph_conn
from lcg.projections.graph._index import GraphIndex


def fresh(graph: GraphProjection) -> object:
    with graph.reader() as conn:
        return GraphIndex.scan(conn).snapshot()


def _declared(**kw: object) -> StructureDeclared:
    return StructureDeclared(group_id=G, root="/a/notes", label="notes", **kw)  # type: ignore[arg-type]


def story() -> list[Event]:
    return stamp(
        [
            added("ep1"),
            _declared(
                entities_upserted=[ent("d1", "Plan"), ent("d2", "Log")],
                edges_upserted=[edge("l1", "d1", "d2", name="LINKS_TO")],
                mentions_added=[
                    MentionRecord(episode_uuid="ep1", entity_uuid="d1"),
                    MentionRecord(episode_uuid="ep1", entity_uuid="d2"),
                ],
            ),
            EntityAsserted(group_id=G, entity=ent("e1", "Ada"), created=True),
            RelationshipAsserted(group_id=G, edge=edge("r1", "e1", "d2"), created=True),
            _declared(
                entities_removed=["d2"],
                edges_removed=["l1"],
                mentions_removed=[MentionRecord(episode_uuid="ep1", entity_uuid="d1")],
            ),
        ]
    )


@pytest.mark.parametrize("per_row", [True, False])
def test_removals_keep_the_locator_a_scan_and_leave_other_edges_unbound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, per_row: bool
) -> None:
    monkeypatch.setattr(_graph_conn, "_PER_ROW_BASE", 10_000 if per_row else -1)
    graph = GraphProjection(tmp_path / "db")
    graph.apply(
        H, "genH", stamp([EntityAsserted(group_id=H, entity=ent("h1", "Hugo"), created=True)])
    )
    events = story()
    for i, event in enumerate(events):
        graph.apply(G, "gen1", [event])
        if i == 1:  # another group's edge to a declared document, bound
            graph.apply(
                H, "genH", stamp([CrossGroupEdgeAdded(group_id=H, edge=edge("hx", "h1", "d2"))], 1)
            )
        assert graph._index.snapshot() == fresh(graph)
    entities, _, rels, unbound = graph._index.snapshot()
    assert "d2" not in entities and "d1" in entities
    assert set(unbound) == {"r1", "hx"} and "l1" not in rels and "l1" not in unbound
    with graph.reader() as conn:
        mentions = conn.execute("MATCH (p:Episodic)-[:MENTIONS]->(n:Entity) RETURN n.uuid")
        assert mentions.get_all() == []  # type: ignore[union-attr]
        hops = conn.execute("MATCH (e:RelatesToNode_)-[h:RELATES_TO]-() RETURN count(h)")
        assert hops.get_all() == [[0]]  # type: ignore[union-attr]
    digest = graph.digest(G)
    graph.close()
    at_once = GraphProjection(tmp_path / "at-once")
    at_once.apply(G, "gen1", events)
    assert at_once.digest(G) == digest
    at_once.close()
