"""Scoring declared structure: what the reads served against what the files declare.

``score_pass`` compares an ``Observed`` (what the service's reads answered after one ingest,
``lcg.eval.declared_reads``) with the gold of the tree at that point. Every score here is
*structural*: no model wrote any of it, so each must be perfect and a miss is a defect in the
engine.

* **link recall** over every declared edge (``PART_OF``, ``SUPERSEDES``, ``LINKS_TO``,
  ``TAGGED``, ``IMPORTS``, and ``MENTIONS`` from a file's prose or a commit) must be 1.0;
  **precision** is reported beside it, each extra edge named;
* **phantoms** none: no node carries the id no file declares, and the link to a file the
  tree does not hold made no node;
* **decoys** none served: the link, the id and the tag inside code made no edge and no tag;
* **read slots** exact: the children of each parent, current truth after each
  supersession, the entities by source of each file, each "what changed in a window"
  question, and (after the withdrawal) the withdrawn file on no read.
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

from lcg.eval.declared_corpus import DeclaredGold, GoldEdge

__all__ = [
    "CurrentAnswer",
    "DeclaredReport",
    "Observed",
    "ObservedDocument",
    "PassScores",
    "SlotRow",
    "WindowAnswer",
    "render_declared",
    "score_pass",
]


class ObservedDocument(msgspec.Struct, frozen=True, kw_only=True):
    """A ``Document`` entity as the reads served it."""

    uuid: str
    path: str
    name: str
    doc_id: str | None = None
    superseded_by: str | None = None


class CurrentAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """Current truth about a superseded document: the ``superseded_by`` its row carries, the
    successor the ``SUPERSEDES`` fact served first for it names, and which document an entity
    search for it served first (paths; ``None``: none)."""

    superseded_by: str | None = None
    successor_served: str | None = None
    #: Of the old document and its successor, the one ``knowledge_find_entities`` served
    #: first for the old one's title (ADR 0211: the successor).
    first_served: str | None = None


class WindowAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """What the reads said changed in a window: commits (by index) and the files they touched."""

    commits: list[int] = []
    files: list[str] = []


class Observed(msgspec.Struct, kw_only=True):
    """What the service's reads answered after one ingest (endpoints as tree paths, tags by
    name, ``commit:<n>`` for the n-th commit; an endpoint no read could name is ``?<uuid>``)."""

    documents: list[ObservedDocument] = []
    tags: list[str] = []
    edges: list[GoldEdge] = []
    #: The name and attributes of every node of the group, for the phantom check.
    node_texts: list[str] = []
    #: Parent path → the children ``knowledge_get_entity_neighbors`` served (``PART_OF``).
    children: dict[str, list[str]] = {}
    #: Superseded path → current truth about it.
    current: dict[str, CurrentAnswer] = {}
    #: File path → the documents ``knowledge_get_entities_by_source`` served for it.
    by_source: dict[str, list[str]] = {}
    windows: list[WindowAnswer] = []
    #: Each read that served the withdrawn file, said as ``read: what``.
    withdrawn_hits: list[str] = []


class SlotRow(msgspec.Struct, frozen=True, kw_only=True):
    """One read slot: what was asked, and what was missing or extra."""

    slot: str
    ask: str
    exact: bool
    missing: list[str] = []
    extra: list[str] = []


class PassScores(msgspec.Struct, frozen=True, kw_only=True):
    """The scores of one ingest pass (``ingest``, then ``withdrawal``)."""

    name: str
    gold_edges: int
    served_edges: int
    link_recall: float
    link_precision: float
    recall_by_relation: dict[str, float]
    missing_edges: list[GoldEdge]
    extra_edges: list[GoldEdge]
    phantoms: list[str]
    decoys_served: list[str]
    slots: list[SlotRow]

    @property
    def slots_exact(self) -> bool:
        """Whether every read slot was exact."""
        return all(s.exact for s in self.slots)

    @property
    def passed(self) -> bool:
        """Whether every structural score of the pass is perfect."""
        return (
            not self.missing_edges
            and not self.phantoms
            and not self.decoys_served
            and self.slots_exact
        )


class DeclaredReport(msgspec.Struct, frozen=True, kw_only=True):
    """The declared-structure lane's report for one seed."""

    kind: str = "declared"
    seed: int
    gold_digest: str
    files: int
    commits: int
    structural_passed: bool
    passes: list[PassScores]
    #: Seconds per phase (the only part that varies run to run).
    timing: dict[str, float] = {}
    scratch: str | None = None


def _order(edge: GoldEdge) -> tuple[str, tuple[str, ...], str]:
    """Edges in a reader's order: by relation, then source with numbers as numbers
    (``commit:2`` before ``commit:10``), then target."""
    parts = tuple(p.zfill(9) if p.isdigit() else p for p in re.split(r"(\d+)", edge.source))
    return (edge.relation, parts, edge.target)


def _ratio(hit: int, total: int) -> float:
    return round(hit / total, 4) if total else 1.0


def _slot(slot: str, ask: str, want: set[str], got: set[str]) -> SlotRow:
    return SlotRow(
        slot=slot,
        ask=ask,
        exact=want == got,
        missing=sorted(want - got),
        extra=sorted(got - want),
    )


_TOKEN: Final = r"(?<![\w-]){}(?![\w-])"


def score_pass(name: str, gold: DeclaredGold, seen: Observed, *, withdrawn: bool) -> PassScores:
    """Score what the reads served after a pass against the gold of the tree at that point
    (``withdrawn``: after the withdrawal commit)."""
    want = set(gold.edges_at(withdrawn=withdrawn))
    decoys = set(gold.decoys)
    got = set(seen.edges)
    by_relation: dict[str, float] = {}
    for rel in sorted({e.relation for e in want}):
        of = {e for e in want if e.relation == rel}
        by_relation[rel] = _ratio(len(of & got), len(of))
    phantom = re.compile(_TOKEN.format(re.escape(gold.phantom_id)))
    phantoms = [
        f"a node carries {gold.phantom_id}: {t[:120]}" for t in seen.node_texts if phantom.search(t)
    ]
    stem = gold.missing_target.rsplit("/", 1)[-1].removesuffix(".md")
    phantoms += [
        f"a document for the missing file {gold.missing_target}: {d.name}"
        for d in seen.documents
        if d.path == gold.missing_target or d.name == stem
    ]
    served_decoys = [f"{e.relation} {e.source} -> {e.target}" for e in sorted(decoys & got)]
    if gold.decoy_tag in seen.tags:
        served_decoys.append(f"a Tag {gold.decoy_tag} (written only in inline code)")
    slots: list[SlotRow] = []
    for parent, kids in gold.children_at(withdrawn=withdrawn).items():
        slots.append(_slot("children", parent, set(kids), set(seen.children.get(parent, []))))
    for new, old in gold.supersessions:
        answer = seen.current.get(old, CurrentAnswer())
        got_truth = {
            f"superseded_by {answer.superseded_by}",
            f"served {answer.successor_served}",
            f"first {answer.first_served}",
        }
        want_truth = {f"superseded_by {new}", f"served {new}", f"first {new}"}
        slots.append(_slot("current", old, want_truth, got_truth))
    mentioned: dict[str, set[str]] = {p: set() for p in gold.paths(withdrawn=withdrawn)}
    for e in want:
        if e.relation == "MENTIONS" and e.source in mentioned:
            mentioned[e.source].add(e.target)
    for path, docs in sorted(mentioned.items()):
        slots.append(_slot("by_source", path, docs, set(seen.by_source.get(path, []))))
    for i, window in enumerate(gold.windows):
        said = seen.windows[i] if i < len(seen.windows) else WindowAnswer()
        ask = f"{window.start} .. {window.end}"
        commits, files = gold.changed_in(window, withdrawn=withdrawn)
        want_w = {f"commit:{c}" for c in commits} | set(files)
        got_w = {f"commit:{c}" for c in said.commits} | set(said.files)
        slots.append(_slot("window", ask, want_w, got_w))
    if withdrawn:
        slots.append(_slot("withdrawn", gold.withdrawn, set(), set(seen.withdrawn_hits)))
    return PassScores(
        name=name,
        gold_edges=len(want),
        served_edges=len(got),
        link_recall=_ratio(len(want & got), len(want)),
        link_precision=_ratio(len(want & got), len(got)),
        recall_by_relation=by_relation,
        missing_edges=sorted(want - got, key=_order),
        extra_edges=sorted(got - want, key=_order),
        phantoms=phantoms,
        decoys_served=served_decoys,
        slots=slots,
    )


def render_declared(report: DeclaredReport) -> str:
    """The short text table of a report: per pass the scores, then every miss named."""
    lines = [
        f"declared structure, seed {report.seed} (gold {report.gold_digest[:12]}): "
        f"{report.files} files, {report.commits} commits",
        f"{'PASS':<11} {'RECALL':>7} {'PRECISION':>9} {'GOLD/SERVED':>11} {'PHANTOMS':>8} "
        f"{'DECOYS':>6} {'SLOTS':>9}",
    ]
    for p in report.passes:
        exact = sum(1 for s in p.slots if s.exact)
        lines.append(
            f"{p.name:<11} {p.link_recall:>7.4f} {p.link_precision:>9.4f} "
            f"{p.gold_edges:>5}/{p.served_edges:<5} {len(p.phantoms):>8} "
            f"{len(p.decoys_served):>6} {exact:>4}/{len(p.slots):<4}"
        )
    for p in report.passes:
        rel = ", ".join(f"{k} {v:.2f}" for k, v in p.recall_by_relation.items())
        lines.append(f"{p.name}: recall by relation: {rel}")
        lines += [f"  missing {e.relation} {e.source} -> {e.target}" for e in p.missing_edges]
        lines += [f"  extra   {e.relation} {e.source} -> {e.target}" for e in p.extra_edges]
        lines += [f"  phantom {x}" for x in p.phantoms]
        lines += [f"  decoy   {x}" for x in p.decoys_served]
        for s in p.slots:
            if not s.exact:
                lines.append(f"  slot    {s.slot} {s.ask}: missing {s.missing} extra {s.extra}")
    verdict = "structural scores perfect" if report.structural_passed else "STRUCTURAL MISS"
    lines.append(verdict)
    return "\n".join(lines) + "\n"
