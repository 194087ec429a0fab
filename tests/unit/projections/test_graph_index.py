"""The graph projection's in-memory locator: it always equals a fresh scan, even on rollback."""

from __future__ import annotations

from pathlib import Path

import pytest

from event_samples import G, H, added, edge, ent, history, stamp
from lcg.errors import ProjectionError
from lcg.events.model import CrossGroupEdgeAdded, EntityAsserted, Event, GroupPurged
from lcg.projections.graph import GraphProjection
from lcg.projections.graph import _conn as _graph_conn
from lcg.projections.graph import _purge as _graph_purge
from lcg.projections.graph._index import GraphIndex


def fresh(graph: GraphProjection) -> object:
    with graph.reader() as conn:
        return GraphIndex.scan(conn).snapshot()


def other_group() -> list[Event]:
    return stamp(
        [
            EntityAsserted(group_id=H, entity=ent("h1", "Hugo"), created=True),
            CrossGroupEdgeAdded(group_id=H, edge=edge("hx", "e2", "e4")),
            CrossGroupEdgeAdded(group_id=H, edge=edge("hy", "h1", "e1")),
            added("hp", group=H),
        ]
    )


@pytest.mark.parametrize("per_row", [True, False])
def test_locator_matches_a_scan_through_every_event_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, per_row: bool
) -> None:
    # Both statement forms (one per row by primary key, or one UNWIND over a scan) are used.
    monkeypatch.setattr(_graph_conn, "_PER_ROW_BASE", 10_000 if per_row else -1)
    graph = GraphProjection(tmp_path / "db")
    graph.apply(H, "genH", other_group())
    events = stamp([*history(), GroupPurged(group_id=G), *history()])
    snapshots = []
    for i in range(0, len(events), 3):
        graph.apply(G, "gen1", events[i : i + 3])
        assert graph._index.snapshot() == fresh(graph)
        snapshots.append(graph.digest(G))
    entities, _, rels, unbound = graph._index.snapshot()
    # The foreign edges were unbound by the purge and bound again when e1, e2, e4 came back.
    assert {"hx", "hy"} <= rels.keys() and not unbound
    assert entities["h1"] == H
    digest = graph.digest(G)
    graph.close()
    reopened = GraphProjection(tmp_path / "db")
    assert reopened._index.snapshot() == fresh(reopened)
    reopened.close()
    reference = GraphProjection(tmp_path / "ref")
    reference.apply(H, "genH", other_group())
    reference.apply(G, "gen1", events)
    assert reference.digest(G) == digest
    reference.close()


def test_a_rolled_back_transaction_leaves_the_locator_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = GraphProjection(tmp_path / "db")
    graph.apply(H, "genH", other_group())
    before = graph._index.snapshot()
    digest = graph.digest(H)
    import lcg.projections.graph.projection as graph_module

    # Every data statement has run when the position statement fails.
    monkeypatch.setattr(graph_module, "_SET_POSITION", "MATCH (p:Nope) RETURN p")
    with pytest.raises(ProjectionError):
        graph.apply(G, "gen1", stamp(history()))
    assert graph._index.snapshot() == before == fresh(graph)
    monkeypatch.setattr(_graph_purge, "_PURGE", (*_graph_purge._PURGE, "MATCH (p:Nope) RETURN p"))
    with pytest.raises(ProjectionError):
        graph.purge_group(H)
    assert graph._index.snapshot() == before == fresh(graph)
    monkeypatch.undo()
    graph.apply(G, "gen1", stamp(history()))
    assert graph._index.snapshot() == fresh(graph)
    assert graph.digest(H) == digest
    # hx and hy are relationships now: e1, e2 and e4 exist.
    assert before[3].keys() == {"hx", "hy"} and graph.counts(H).unbound_edges == 0
    graph.close()


def test_load_group_updates_the_locator(tmp_path: Path) -> None:
    graph = GraphProjection(tmp_path / "db")
    graph.apply(H, "genH", other_group())
    events = stamp([*history(), GroupPurged(group_id=G), *history()])
    graph.load_group(G, "gen1", iter([events[:7], events[7:]]))
    assert graph._index.snapshot() == fresh(graph)
    graph.purge_group(G)
    assert graph._index.snapshot() == fresh(graph)
    _, _, rels, unbound = graph._index.snapshot()
    assert not rels and set(unbound) == {"hx", "hy"}
    graph.close()
