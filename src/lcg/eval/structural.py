"""Structural scores: properties of the engine's own deterministic writes and reads.

No model decides these, so each must be perfect with every model; a miss is a defect in the
engine. Where a check depends on what the model said (which names it extracted, whether it
stated an ending), the expectation is built from the model's captured answer, not the gold.

Checks: ``aliases_resolved`` (every gold entity the model named is one node),
``mentions_present`` (every name the model extracted for an episode is among its MENTIONS),
``no_phantom`` (no node named the phantom, and no node named by no answer),
``superseded_not_current`` (an ending the model stated leaves the ended edge not current,
the successor current), ``withdrawn_served_nowhere`` (the withdrawn document's episode is on
no read), ``read_slots_exact`` (by-source and neighbour reads equal what was written) and
``verify_clean`` (``verify_workspace``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import msgspec

from lcg.eval.backends import Capture
from lcg.eval.corpus import Corpus
from lcg.eval.gold import Gold
from lcg.eval.scoring import GoldIndex
from lcg.ingest import name_key
from lcg.projections import EdgeRow, EntityRow, graph_records
from lcg.query import Searcher, graph_reads
from lcg.workspace import Workspace, verify_workspace

__all__ = ["Check", "StructuralScores", "score_structural"]

_MERGED = "Merged"


class Check(msgspec.Struct, frozen=True, kw_only=True):
    """One structural check: its score (1.0 is a pass) and what missed."""

    name: str
    ok: bool
    score: float
    checked: int
    misses: list[str] = []
    note: str = ""


class StructuralScores(msgspec.Struct, frozen=True, kw_only=True):
    """Every structural check; ``passed`` only when each is perfect."""

    passed: bool
    checks: list[Check]


def _check(name: str, checked: int, misses: list[str], note: str = "") -> Check:
    score = 1.0 if checked == 0 else round((checked - len(misses)) / checked, 4)
    return Check(
        name=name, ok=not misses, score=score, checked=checked, misses=misses[:20], note=note
    )


def _mentions(ws: Workspace, episode: str) -> list[tuple[str, str]]:
    rows = ws.graph.query(
        "MATCH (p:Episodic {uuid: $u})-[:MENTIONS]->(e:Entity) RETURN e.uuid, e.name",
        {"u": episode},
    )
    return [(r[0], r[1] or "") for r in rows]


@dataclass(frozen=True, slots=True)
class _Scene:
    """What every check reads: the scored group, its gold, the model's answers and nodes."""

    ws: Workspace
    group: str
    gold: Gold
    index: GoldIndex
    episodes: Mapping[str, str]
    captures: Mapping[str, Capture]
    #: The group's live (not merged-away) entity nodes, and each one's gold identity.
    nodes: list[EntityRow]
    ident: dict[str, str]


def score_structural(
    ws: Workspace,
    group: str,
    corpus: Corpus,
    episodes: Mapping[str, str],
    captures: Mapping[str, Capture],
) -> StructuralScores:
    """Run every structural check on the scored workspace (the caller holds nothing)."""
    index = GoldIndex(corpus.gold)
    with ws.reading():
        nodes = [
            n for n in graph_reads.nodes_by_group(ws.graph, [group]) if _MERGED not in n.labels
        ]
        scene = _Scene(
            ws=ws,
            group=group,
            gold=corpus.gold,
            index=index,
            episodes=episodes,
            captures=captures,
            nodes=nodes,
            ident={n.uuid: index.identity(n.name) for n in nodes},
        )
        named, emitted_keys = _named(scene)
        checks = [
            _aliases_resolved(scene, emitted_keys),
            _mentions_present(scene),
            _no_phantom(scene, named, emitted_keys),
            _superseded_not_current(scene),
            _withdrawn_served_nowhere(scene),
            _read_slots_exact(scene),
        ]
    report = verify_workspace(ws, [group])
    bad = [f"{g.group_id}: {', '.join(g.differing)}" for g in report.groups if not g.equal]
    checks.append(_check("verify_clean", 1, bad))
    return StructuralScores(passed=all(c.ok for c in checks), checks=checks)


def _named(scene: _Scene) -> tuple[set[str], set[str]]:
    """The name keys the model named anywhere, and the gold entities among them."""
    named: set[str] = set()
    emitted_keys: set[str] = set()
    for answer in scene.captures.values():
        if answer.output is None:
            continue
        for e in answer.output.entities:
            named.add(name_key(e.name))
            key = scene.index.key_of(e.name)
            if key is not None:
                emitted_keys.add(key)
    return named, emitted_keys


def _aliases_resolved(scene: _Scene, emitted_keys: set[str]) -> Check:
    """One node per gold entity the model named anywhere."""
    misses = []
    for key in sorted(emitted_keys):
        count = sum(1 for v in scene.ident.values() if v == key)
        if count != 1:
            misses.append(f"{scene.gold.entity(key).name}: {count} nodes")
    return _check("aliases_resolved", len(emitted_keys), misses)


def _mentions_present(scene: _Scene) -> Check:
    """Every extracted name of a live episode among its MENTIONS."""
    index = scene.index
    misses = []
    checked = 0
    for gdoc in scene.gold.documents:
        cap = scene.captures.get(gdoc.doc_id)
        uuid = scene.episodes.get(gdoc.doc_id)
        if gdoc.withdrawn or cap is None or cap.output is None or uuid is None:
            continue
        present = {index.identity(name) for _u, name in _mentions(scene.ws, uuid)}
        for ident_ in dict.fromkeys(index.identity(e.name) for e in cap.output.entities):
            checked += 1
            if ident_ not in present:
                misses.append(f"{gdoc.doc_id}: {ident_}")
    return _check("mentions_present", checked, misses)


def _no_phantom(scene: _Scene, named: set[str], emitted_keys: set[str]) -> Check:
    """No node named the phantom, and no node no answer named."""
    index, nodes = scene.index, scene.nodes
    phantom = index.identity(scene.gold.phantom)
    misses = [n.name for n in nodes if index.identity(n.name) == phantom]
    misses += [
        f"unnamed by the model: {n.name}"
        for n in nodes
        if name_key(n.name) not in named and index.key_of(n.name) not in emitted_keys
    ]
    return _check("no_phantom", len(nodes) + 1, misses)


def _superseded_not_current(scene: _Scene) -> Check:
    """An ending the model stated ends the edge, and leaves the successor current."""
    gold, index = scene.gold, scene.index
    # The current edges by (relation, source identity, target identity), the first of each.
    current: dict[tuple[str, str | None, str | None], EdgeRow] = {}
    for row in graph_reads.edges_by_group(scene.ws.graph, [scene.group]):
        if row.invalid_at is None:
            source, target = row.source_node_uuid, row.target_node_uuid
            trip = (row.relation_type or "", scene.ident.get(source), scene.ident.get(target))
            current.setdefault(trip, row)
    misses = []
    checked = 0
    note = ""
    for f in gold.facts:
        if not f.ended_at or not f.ending_doc:
            continue
        cap = scene.captures.get(f.ending_doc)
        said = (
            cap is not None
            and cap.output is not None
            and any(
                e.invalid_at
                and index.triple(e.relation_type, e.source_name, e.target_name)
                == (f.relation, f.source, f.target)
                for e in cap.output.edges
            )
        )
        if not said:
            note = "the model stated no ending; nothing to check"
            continue
        checked += 1
        still = current.get((f.relation, f.source, f.target))
        if still is not None:
            misses.append(f"still current: {still.fact}")
        succ = gold.fact(f.superseded_by) if f.superseded_by else None
        if succ is not None and (succ.relation, succ.source, succ.target) not in current:
            misses.append(f"successor not current: {succ.sentence}")
    return _check("superseded_not_current", checked, misses, note)


def _withdrawn_served_nowhere(scene: _Scene) -> Check:
    """The withdrawn document's episode is on no read."""
    withdrawn = scene.gold.withdrawn()
    if withdrawn is None:
        return _check("withdrawn_served_nowhere", 0, [])
    ws, group = scene.ws, scene.group
    uuid = scene.episodes.get(withdrawn.doc_id, "")
    misses = []
    if graph_records.episodes_by_source(ws.graph, withdrawn.path, [group]):
        misses.append("episodes_by_source serves it")
    if graph_reads.entities_by_source(ws.graph, withdrawn.path, 100, [group]):
        misses.append("entities_by_source serves it")
    if uuid and _mentions(ws, uuid):
        misses.append("its MENTIONS remain")
    searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
    served = False
    for key in withdrawn.facts:
        sentence = scene.gold.fact(key).sentence
        for mode in ("hybrid", "bm25"):
            rows = searcher.search_passages(sentence, [group], 10, 0.0, mode=mode)
            served = served or any(r.uuid == uuid for r in rows)
    if served:
        misses.append("search_passages serves it")
    return _check("withdrawn_served_nowhere", 4, misses)


def _read_slots_exact(scene: _Scene) -> Check:
    """What the by-source and neighbour reads return equals what the answers wrote."""
    ws, group, index = scene.ws, scene.group, scene.index
    misses = []
    checked = 0
    for gdoc in scene.gold.documents:
        got_cap = scene.captures.get(gdoc.doc_id)
        if gdoc.withdrawn or got_cap is None or got_cap.output is None:
            continue
        want = {index.identity(x.name) for x in got_cap.output.entities}
        got = {
            index.identity(r.name)
            for r in graph_reads.entities_by_source(ws.graph, gdoc.path, 1000, [group])
        }
        checked += 1
        if want != got:
            misses.append(f"by_source {gdoc.doc_id}: want {sorted(want)} got {sorted(got)}")
    hops = _hops(scene)
    for n in scene.nodes:
        key = scene.ident[n.uuid]
        far, _edges = graph_reads.entity_neighbors(ws.graph, n.uuid, 1000, [group])
        got = {index.identity(x.name) for x in far}
        checked += 1
        want = hops.get(key, set())
        if got != want:
            misses.append(f"neighbors {key}: want {sorted(want)} got {sorted(got)}")
    return _check("read_slots_exact", checked, misses)


def _hops(scene: _Scene) -> dict[str, set[str]]:
    """Each gold identity's neighbours, as the answers' edges join them."""
    hops: dict[str, set[str]] = {}
    for answered in scene.captures.values():
        if answered.output is None:
            continue
        for edge in answered.output.edges:
            a, b = scene.index.identity(edge.source_name), scene.index.identity(edge.target_name)
            if a != b:
                hops.setdefault(a, set()).add(b)
                hops.setdefault(b, set()).add(a)
    return hops
