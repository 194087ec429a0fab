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

import msgspec

from lcg.eval.backends import Capture
from lcg.eval.corpus import Corpus
from lcg.eval.scoring import GoldIndex
from lcg.ingest import name_key
from lcg.projections import Searcher, graph_reads, graph_records
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


def score_structural(
    ws: Workspace,
    group: str,
    corpus: Corpus,
    episodes: Mapping[str, str],
    captures: Mapping[str, Capture],
) -> StructuralScores:
    """Run every structural check on the scored workspace (the caller holds nothing)."""
    gold = corpus.gold
    index = GoldIndex(gold)
    withdrawn = gold.withdrawn()
    checks: list[Check] = []
    with ws.reading():
        nodes = [
            n for n in graph_reads.nodes_by_group(ws.graph, [group]) if _MERGED not in n.labels
        ]
        ident = {n.uuid: index.identity(n.name) for n in nodes}
        # aliases: one node per gold entity the model named anywhere
        named: set[str] = set()
        emitted_keys: set[str] = set()
        for answer in captures.values():
            if answer.output is None:
                continue
            for e in answer.output.entities:
                named.add(name_key(e.name))
                key = index.key_of(e.name)
                if key is not None:
                    emitted_keys.add(key)
        misses = []
        for key in sorted(emitted_keys):
            count = sum(1 for v in ident.values() if v == key)
            if count != 1:
                misses.append(f"{gold.entity(key).name}: {count} nodes")
        checks.append(_check("aliases_resolved", len(emitted_keys), misses))
        # mentions: every extracted name of a live episode among its MENTIONS
        misses = []
        checked = 0
        for gdoc in gold.documents:
            cap = captures.get(gdoc.doc_id)
            uuid = episodes.get(gdoc.doc_id)
            if gdoc.withdrawn or cap is None or cap.output is None or uuid is None:
                continue
            present = {index.identity(name) for _u, name in _mentions(ws, uuid)}
            for ident_ in dict.fromkeys(index.identity(e.name) for e in cap.output.entities):
                checked += 1
                if ident_ not in present:
                    misses.append(f"{gdoc.doc_id}: {ident_}")
        checks.append(_check("mentions_present", checked, misses))
        # phantom: no node named the phantom, and no node no answer named
        misses = [n.name for n in nodes if index.identity(n.name) == index.identity(gold.phantom)]
        misses += [
            f"unnamed by the model: {n.name}"
            for n in nodes
            if name_key(n.name) not in named and index.key_of(n.name) not in emitted_keys
        ]
        checks.append(_check("no_phantom", len(nodes) + 1, misses))
        # supersession: an ending the model stated ends the edge
        edges = graph_reads.edges_by_group(ws.graph, [group])
        misses = []
        checked = 0
        note = ""
        for f in gold.facts:
            if not f.ended_at or not f.ending_doc:
                continue
            cap = captures.get(f.ending_doc)
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
            for row in edges:
                trip = (
                    row.relation_type or "",
                    ident.get(row.source_node_uuid),
                    ident.get(row.target_node_uuid),
                )
                if trip == (f.relation, f.source, f.target) and row.invalid_at is None:
                    misses.append(f"still current: {row.fact}")
                    break
            succ = gold.fact(f.superseded_by) if f.superseded_by else None
            if succ is not None and not any(
                (
                    r.relation_type or "",
                    ident.get(r.source_node_uuid),
                    ident.get(r.target_node_uuid),
                )
                == (succ.relation, succ.source, succ.target)
                and r.invalid_at is None
                for r in edges
            ):
                misses.append(f"successor not current: {succ.sentence}")
        checks.append(_check("superseded_not_current", checked, misses, note))
        # withdrawal: the episode is on no read
        misses = []
        checked = 0
        if withdrawn is not None:
            uuid = episodes.get(withdrawn.doc_id, "")
            searcher = Searcher(ws.graph, ws.text, ws.vectors, ws.text_embedder)
            checked = 4
            if graph_records.episodes_by_source(ws.graph, withdrawn.path, [group]):
                misses.append("episodes_by_source serves it")
            if graph_reads.entities_by_source(ws.graph, withdrawn.path, 100, [group]):
                misses.append("entities_by_source serves it")
            if uuid and _mentions(ws, uuid):
                misses.append("its MENTIONS remain")
            served = False
            for key in withdrawn.facts:
                sentence = gold.fact(key).sentence
                for mode in ("hybrid", "bm25"):
                    rows = searcher.search_passages(sentence, [group], 10, 0.0, mode=mode)
                    served = served or any(r.uuid == uuid for r in rows)
            if served:
                misses.append("search_passages serves it")
        checks.append(_check("withdrawn_served_nowhere", checked, misses))
        # read slots: what reads return equals what the answers wrote
        misses = []
        checked = 0
        for gdoc in gold.documents:
            got_cap = captures.get(gdoc.doc_id)
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
        hops: dict[str, set[str]] = {}
        for answered in captures.values():
            if answered.output is None:
                continue
            for edge in answered.output.edges:
                a, b = index.identity(edge.source_name), index.identity(edge.target_name)
                if a != b:
                    hops.setdefault(a, set()).add(b)
                    hops.setdefault(b, set()).add(a)
        for n in nodes:
            key = ident[n.uuid]
            far, _edges = graph_reads.entity_neighbors(ws.graph, n.uuid, 1000, [group])
            got = {index.identity(x.name) for x in far}
            checked += 1
            if got != hops.get(key, set()):
                misses.append(
                    f"neighbors {key}: want {sorted(hops.get(key, set()))} got {sorted(got)}"
                )
        checks.append(_check("read_slots_exact", checked, misses))
    report = verify_workspace(ws, [group])
    bad = [f"{g.group_id}: {', '.join(g.differing)}" for g in report.groups if not g.equal]
    checks.append(_check("verify_clean", 1, bad))
    return StructuralScores(passed=all(c.ok for c in checks), checks=checks)
