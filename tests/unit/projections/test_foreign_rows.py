"""Groups are isolated by construction (issue 27 item 5, ADR 0196).

The graph keys rows by uuid alone, so an event of group b naming a row group a holds used to
replace or delete a's row (a copied or hostile stream; ``Alice`` became ``Mallory``), and a
stream holding another group's lines took the whole workspace down at open. Now each event's
rows must be its group's own: otherwise the group stops before that event, every projection
alike, degraded with the owner and the uuid named, and the other group is never touched.
An edge's endpoint or a mention naming another group's entity is a reference, not a write.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from event_samples import G, added, edge, ent, history, stamp
from lcg.config import Config
from lcg.errors import DegradedError, ProjectionError
from lcg.events.codec import seal
from lcg.events.model import EntityAsserted, EpisodeExtracted, Event, RelationshipAsserted
from lcg.extract.embedders import HashEmbedder
from lcg.ingest import deletion
from lcg.projections.graph import GraphProjection
from lcg.workspace import Workspace
from lcg.workspace.verify import verify_workspace

GEN = "gen1"


@pytest.fixture
def graph(tmp_path: Path) -> Iterator[GraphProjection]:
    g = GraphProjection(tmp_path / "db")
    yield g
    g.close()


def _regrouped(events: list[Event], group: str) -> list[Event]:
    return [msgspec.structs.replace(e, group_id=group) for e in events]


# ---- the graph ------------------------------------------------------------------------------


def test_no_event_of_another_group_changes_a_row_it_does_not_own(graph: GraphProjection) -> None:
    graph.apply(G, GEN, stamp(history()))
    before = graph.digest(G)
    accepted: list[str] = []
    for seq, event in enumerate(_regrouped(history(), "b")):
        try:
            graph.apply("b", GEN, stamp([event], seq))
            accepted.append(type(event).__name__)
        except ProjectionError as refused:  # a ForeignRowError
            assert f"group 'b': event seq {seq} " in str(refused)
            assert f"which group {G!r} holds" in str(refused)
        assert graph.digest(G) == before, type(event).__name__
    # Only ep3, which g1 deleted, was b's to add (and then to delete); a source row is keyed
    # by its group, so b's source events write b's own rows (ADR 0200).
    sources = ["SourceRegistered"] * 3 + ["SourceRemoved"]
    assert accepted == ["EpisodeAdded", "EpisodesDeleted", *sources]
    graph.purge_group("b")
    assert graph.digest(G) == before


def test_the_bulk_path_refuses_the_same_rows(graph: GraphProjection) -> None:
    graph.apply(G, GEN, stamp(history()))
    before = graph.digest(G)
    with pytest.raises(ProjectionError, match=r"writes episode ep1, which group 'g1' holds"):
        graph.load_group("b", GEN, [stamp(_regrouped(history(), "b"))])
    assert graph.digest(G) == before
    assert not graph.holds_rows("b") and graph.position("b").empty


def test_an_edge_or_a_mention_naming_another_groups_entity_is_a_reference(
    graph: GraphProjection,
) -> None:
    graph.apply(G, GEN, stamp([added("ep1"), *_entities(G, "e1", "e2")]))
    before = graph.digest(G)
    graph.apply(
        "b",
        GEN,
        stamp(
            [
                added("bep", group="b"),
                RelationshipAsserted(group_id="b", edge=edge("rb", "e1", "e2"), created=True),
                EpisodeExtracted(group_id="b", episode_uuid="bep", mentions=["e1"]),
            ]
        ),
    )
    assert graph.counts("b").edges == 1 and graph.counts("b").unbound_edges == 0
    assert graph.digest(G) == before
    graph.purge_group("b")
    assert graph.digest(G) == before


def _entities(group: str, *uuids: str) -> list[Event]:
    return [EntityAsserted(group_id=group, entity=ent(u, f"name {u}"), created=True) for u in uuids]


# ---- the projector: a workspace with a's stream and a hostile b -----------------------------


def _cfg(root: Path) -> Config:
    return Config.from_env(root, env={"LCG_EMBEDDER": "hash", "LCG_TELEMETRY": "off"})


def _a_events() -> list[Event]:
    return [
        added("ep1", group="a", content="Alice rowed across the harbour"),
        *_entities("a", "alice", "harbour"),
        RelationshipAsserted(
            group_id="a",
            edge=edge("keeps", "alice", "harbour", fact="Alice keeps it"),
            created=True,
        ),
    ]


def _b_events() -> list[Event]:
    """b's own episode, then a's events as b's (a hostile rewrite), then b's own again."""
    return [
        added("bep", group="b", content="the lighthouse keeper wrote a letter"),
        *_regrouped(_a_events(), "b"),
        added("bep2", group="b", content="a storm came over"),
    ]


def _assert_b_stopped_at_1(ws: Workspace) -> None:
    reason = ws.projector.degraded_reason("b")
    assert reason is not None
    assert "group 'b': event seq 1 (EpisodeAdded) writes episode ep1, which group 'a' holds" in (
        reason
    )
    assert "lcg replay --group b --force-clear --accept-loss" in reason
    # Every projection stopped before it: b's own first episode, nothing of a's.
    assert {p.seq for p in ws.projector.positions("b").values()} == {0}
    assert ws.text.search("b", "episode", "lighthouse", 5)
    assert ws.text.search("b", "episode", "harbour", 5) == []
    assert ws.text.search("b", "entity", "alice", 5) == []


def test_a_hostile_stream_stops_its_group_alone_live_and_at_open(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    with Workspace.open(cfg, HashEmbedder()) as ws:
        ws.commit("a", _a_events())
        a_before = ws.digests("a")
        ws.commit("b", _b_events())  # durable; b stops at seq 1 as it is applied
        _assert_b_stopped_at_1(ws)
        assert ws.projector.degraded_reason("a") is None
        assert ws.digests("a") == a_before
        with pytest.raises(DegradedError, match="writes to group 'b' are refused"):
            ws.commit("b", [added("more", group="b")])
        ws.commit("a", [added("ep9", group="a")])  # a takes writes
        a_before = ws.digests("a")
    # Kept across restarts, for a workspace only looked at too.
    with Workspace.open(cfg, HashEmbedder(), inspect=True) as looking:
        assert "which group 'a' holds" in (looking.projector.degraded_reason("b") or "")
        report = verify_workspace(looking)
    verdicts = {v.group_id: v for v in report.groups}
    assert verdicts["a"].equal and not verdicts["a"].problems and not verdicts["a"].behind
    assert verdicts["b"].equal and not verdicts["b"].behind
    assert any("which group 'a' holds" in p for p in verdicts["b"].problems)

    # From nothing (the projections rebuilt from both streams): b's bulk load fails, and
    # the event-by-event replay stops every projection at the same place.
    for name in ("db", "text", "vectors"):
        shutil.rmtree(tmp_path / ".lcg" / name)
    (tmp_path / ".lcg" / "damaged-groups.json").unlink()
    with Workspace.open(cfg, HashEmbedder()) as ws:
        _assert_b_stopped_at_1(ws)
        assert ws.digests("a") == a_before

        # A replay does not pass it; accepting the loss skips what reaches a's rows.
        stopped = ws.projector.rebuild("b", force_clear=True)
        assert not stopped.success and stopped.skipped_seqs == [(1, 5)]
        _assert_b_stopped_at_1(ws)
        result = ws.projector.rebuild("b", force_clear=True, accept_loss=True)
        assert result.success and result.loss_accepted and result.failed_lines == 4
        assert ws.projector.degraded_reason("b") is None
        assert ws.text.search("b", "episode", "storm", 5)
        assert ws.text.search("b", "entity", "alice", 5) == []
        assert ws.graph.counts("b").episodes == 2 and ws.graph.counts("b").entities == 0
        assert {p.seq for p in ws.projector.positions("b").values()} == {5}
        assert ws.digests("a") == a_before
        # b can be purged now, and a is still whole.
        deletion.delete_by_group(ws, ["b"], confirm=True, dry_run=False)
        assert not ws.graph.holds_rows("b")
        assert ws.digests("a") == a_before
        assert ws.text.search("a", "entity", "alice", 5)


def test_a_stream_holding_another_groups_lines_is_refused_alone_at_open(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    with Workspace.open(cfg, HashEmbedder()) as ws:
        ws.commit("a", _a_events())
        a_before = ws.digests("a")
    # ``cp -r`` of a's stream: its lines still say group a.
    shutil.copytree(cfg.wal_dir / "a", cfg.wal_dir / "b")
    with Workspace.open(cfg, HashEmbedder()) as ws:  # opened (it raised for everyone)
        reason = ws.projector.degraded_reason("b") or ""
        assert "group 'b': event seq 0 (EpisodeAdded) names group 'a'" in reason
        assert all(p.empty for p in ws.projector.positions("b").values())
        assert ws.projector.degraded_reason("a") is None
        assert ws.digests("a") == a_before
        ws.commit("a", [added("ep9", group="a")])  # a takes writes
        a_before = ws.digests("a")
        result = ws.projector.rebuild("b", force_clear=True, accept_loss=True)
        assert result.success and result.failed_lines == 4
        assert ws.projector.degraded_reason("b") is None
        # Every position moved past the skipped lines, so a later write does not meet them.
        assert {p.seq for p in ws.projector.positions("b").values()} == {3}
        ws.commit("b", [added("own", group="b")])
        assert ws.projector.degraded_reason("b") is None
        assert ws.graph.counts("b").episodes == 1
        assert ws.digests("a") == a_before


def test_a_rewritten_line_names_the_first_foreign_row(tmp_path: Path) -> None:
    """What a hostile publisher writes: the line's group changed and its checksum redone."""
    cfg = _cfg(tmp_path)
    with Workspace.open(cfg, HashEmbedder()) as ws:
        ws.commit("a", _a_events())
    shutil.copytree(cfg.wal_dir / "a", cfg.wal_dir / "b")
    for segment in (cfg.wal_dir / "b").glob("*.jsonl"):
        lines = []
        for line in segment.read_bytes().splitlines():
            raw = json.loads(line)
            raw.pop("crc32")
            raw["group_id"] = "b"
            lines.append(seal(msgspec.json.encode(raw)))
        segment.write_bytes(b"".join(lines))
    with Workspace.open(cfg, HashEmbedder()) as ws:
        reason = ws.projector.degraded_reason("b") or ""
        assert "event seq 0 (EpisodeAdded) writes episode ep1, which group 'a' holds" in reason
        assert ws.projector.degraded_reason("a") is None
