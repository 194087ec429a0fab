"""A synthetic event stream of realistic shape, for replay benchmarks.

``write_stream(root, group, total)`` writes about ``total`` events to ``root`` (a WAL root):
per 1,000,000 events, 100k entities and 300k relationships created by assertion, 50k episodes
added and extracted (each extraction mentions 4 entities, revises 2 summaries and restates one
edge), then 350k entity summary revisions and 150k fact revisions, interleaved the way a live
workspace mixes them. Seeded: the same arguments give the same bytes (but for ``ts``/``gen``).

Run as a script to write one: ``python bench/synth_stream.py DIR [EVENTS]``.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from pathlib import Path

from lcg import telemetry
from lcg.events.model import (
    EdgeRecord,
    EdgeRestated,
    EntityAsserted,
    EntityRecord,
    EntitySummaryUpdate,
    EpisodeAdded,
    EpisodeExtracted,
    Event,
    RelationshipAsserted,
)
from lcg.events.store import WalStore

__all__ = ["events", "write_stream"]

_WORDS = (
    "orbit lunar module crew launch rocket engine mission command service capsule flight "
    "pilot landing surface sample station tracking telemetry booster stage guidance computer "
    "navigation docking hatch suit oxygen thermal shield reentry splashdown recovery carrier "
    "astronaut commander geologist crater basalt regolith antenna relay network control"
).split()
_TS = "2024-03-01T12:00:00.000000Z"


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def events(group: str, total: int, seed: int = 7) -> Iterator[Event]:
    """Yield about ``total`` events of the shape described above."""
    rng = random.Random(seed)
    scale = total / 1_000_000
    n_entities = max(10, int(100_000 * scale))
    n_edges = int(300_000 * scale)
    n_episodes = int(50_000 * scale)
    n_summary_rev = int(350_000 * scale)
    n_fact_rev = int(150_000 * scale)
    entity_names = [f"{_sentence(rng, 2)} {i}" for i in range(n_entities)]
    edges: list[EdgeRecord] = []
    # Creation: entities first (edges need endpoints), then edges and episodes interleaved.
    for i, name in enumerate(entity_names):
        yield EntityAsserted(
            group_id=group,
            entity=EntityRecord(
                uuid=f"en-{i:08d}",
                name=name,
                labels=["Entity", rng.choice(["Person", "Mission", "Spacecraft", "Place"])],
                summary=_sentence(rng, 12),
                created_at=_TS,
            ),
            created=True,
        )
    plan = ["edge"] * n_edges + ["episode"] * n_episodes
    rng.shuffle(plan)
    ep = 0
    for kind in plan:
        if kind == "edge":
            s, t = rng.randrange(n_entities), rng.randrange(n_entities)
            if s == t:
                t = (t + 1) % n_entities
            edge = EdgeRecord(
                uuid=f"ed-{len(edges):08d}",
                name=rng.choice(["FLEW_ON", "COMMANDED", "PART_OF", "LOCATED_IN", "BUILT"]),
                source_uuid=f"en-{s:08d}",
                target_uuid=f"en-{t:08d}",
                fact=_sentence(rng, 10),
                created_at=_TS,
            )
            edges.append(edge)
            yield RelationshipAsserted(group_id=group, edge=edge, created=True)
        else:
            uuid = f"ep-{ep:08d}"
            ep += 1
            yield EpisodeAdded(
                group_id=group,
                uuid=uuid,
                name=f"chunk-{ep}",
                source_description=f"notes/{ep % 500}.md:chunk-{ep}",
                content=_sentence(rng, 60),
                created_at=_TS,
                valid_at=_TS,
            )
            mentions = [f"en-{rng.randrange(n_entities):08d}" for _ in range(4)]
            yield EpisodeExtracted(
                group_id=group,
                episode_uuid=uuid,
                entities_updated=[
                    EntitySummaryUpdate(uuid=m, summary=_sentence(rng, 14)) for m in mentions[:2]
                ],
                edges_restated=(
                    [EdgeRestated(uuid=edges[rng.randrange(len(edges))].uuid, episode_uuid=uuid)]
                    if edges
                    else []
                ),
                mentions=list(dict.fromkeys(mentions)),
                model="synthetic",
            )
    revisions = ["summary"] * n_summary_rev + ["fact"] * n_fact_rev
    rng.shuffle(revisions)
    for kind in revisions:
        if kind == "summary" or not edges:
            i = rng.randrange(n_entities)
            yield EntityAsserted(
                group_id=group,
                entity=EntityRecord(
                    uuid=f"en-{i:08d}",
                    name=entity_names[i],
                    labels=["Entity"],
                    summary=_sentence(rng, 12),
                    created_at=_TS,
                ),
                created=False,
            )
        else:
            j = rng.randrange(len(edges))
            edges[j] = EdgeRecord(
                uuid=edges[j].uuid,
                name=edges[j].name,
                source_uuid=edges[j].source_uuid,
                target_uuid=edges[j].target_uuid,
                fact=_sentence(rng, 10),
                created_at=_TS,
            )
            yield RelationshipAsserted(group_id=group, edge=edges[j], created=False)


def write_stream(root: Path, group: str, total: int, seed: int = 7) -> int:
    """Write the synthetic stream of ``group`` under the WAL root ``root``; returns its length."""
    telemetry.set_sink(None, enabled=False)  # one wal_rotated line per segment is noise here
    store = WalStore(root, fsync="off")
    n = 0
    chunk: list[Event] = []
    try:
        for event in events(group, total, seed):
            chunk.append(event)
            if len(chunk) == 2000:
                store.append(group, chunk)
                n += len(chunk)
                chunk = []
        if chunk:
            store.append(group, chunk)
            n += len(chunk)
        store.writer(group).sync()
    finally:
        store.close()
    return n


if __name__ == "__main__":
    target = Path(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    print(write_stream(target, "synthetic", count))
