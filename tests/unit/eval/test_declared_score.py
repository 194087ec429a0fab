"""The declared-structure scorer on hand-made answers: perfect, then each kind of miss."""

from __future__ import annotations

import msgspec

from lcg.eval.declared_corpus import DeclaredGold, GoldEdge, GoldWindow, generate_declared
from lcg.eval.declared_score import (
    CurrentAnswer,
    DeclaredReport,
    Observed,
    ObservedDocument,
    WindowAnswer,
    render_declared,
    score_pass,
)


def _perfect(gold: DeclaredGold, *, withdrawn: bool) -> Observed:
    """What a perfect engine's reads would answer, built from the gold."""
    edges = gold.edges_at(withdrawn=withdrawn)
    paths = gold.paths(withdrawn=withdrawn)
    by_source: dict[str, list[str]] = {p: [] for p in paths}
    for e in edges:
        if e.relation == "MENTIONS" and e.source in by_source:
            by_source[e.source].append(e.target)
    return Observed(
        documents=[
            ObservedDocument(uuid=f"u{i}", path=p, name=gold.titles[p], doc_id=gold.ids.get(p))
            for i, p in enumerate(paths)
        ],
        tags=sorted({e.target for e in edges if e.relation == "TAGGED"}),
        edges=list(edges),
        node_texts=[gold.titles[p] for p in paths],
        children={p: list(k) for p, k in gold.children_at(withdrawn=withdrawn).items()},
        current={
            old: CurrentAnswer(superseded_by=new, successor_served=new, first_served=new)
            for new, old in gold.supersessions
        },
        by_source=by_source,
        windows=[_said(gold, w, withdrawn=withdrawn) for w in gold.windows],
    )


def _said(gold: DeclaredGold, window: GoldWindow, *, withdrawn: bool) -> WindowAnswer:
    commits, files = gold.changed_in(window, withdrawn=withdrawn)
    return WindowAnswer(commits=commits, files=files)


def test_a_window_before_the_withdrawal_holds_no_withdrawal() -> None:
    gold = generate_declared(7).gold
    last = gold.windows[-1]
    before, after = gold.changed_in(last, withdrawn=False), gold.changed_in(last, withdrawn=True)
    assert len(gold.commits) - 1 not in before[0] and len(gold.commits) - 1 in after[0]
    # The perfect answer of one pass is a miss in the other.
    seen = _perfect(gold, withdrawn=False)
    assert not score_pass("p", gold, seen, withdrawn=True).slots_exact


def test_a_perfect_answer_scores_perfect_on_both_passes() -> None:
    gold = generate_declared(7).gold
    for withdrawn in (False, True):
        scores = score_pass("p", gold, _perfect(gold, withdrawn=withdrawn), withdrawn=withdrawn)
        assert scores.link_recall == 1.0 and scores.link_precision == 1.0
        assert scores.passed, render_declared(_report(scores))
        assert any(s.slot == "withdrawn" for s in scores.slots) is withdrawn


def test_a_missing_edge_lowers_recall_and_fails() -> None:
    gold = generate_declared(7).gold
    seen = _perfect(gold, withdrawn=False)
    dropped = next(e for e in seen.edges if e.relation == "SUPERSEDES")
    seen.edges.remove(dropped)
    scores = score_pass("p", gold, seen, withdrawn=False)
    assert scores.link_recall < 1.0
    assert scores.recall_by_relation["SUPERSEDES"] == 0.5
    assert scores.missing_edges == [dropped]
    assert not scores.passed
    assert f"missing SUPERSEDES {dropped.source} -> {dropped.target}" in render_declared(
        _report(scores)
    )


def test_an_extra_edge_is_named_and_lowers_precision_only() -> None:
    gold = generate_declared(7).gold
    seen = _perfect(gold, withdrawn=False)
    extra = GoldEdge(relation="LINKS_TO", source=gold.paths(withdrawn=False)[0], target="x.md")
    seen.edges.append(extra)
    scores = score_pass("p", gold, seen, withdrawn=False)
    assert scores.link_recall == 1.0 and scores.link_precision < 1.0
    assert scores.extra_edges == [extra]
    assert scores.passed  # precision is reported, not judged


def test_a_phantom_node_is_caught() -> None:
    gold = generate_declared(7).gold
    seen = _perfect(gold, withdrawn=False)
    seen.node_texts.append(f'{gold.phantom_id} {{"origin": "declared"}}')
    scores = score_pass("p", gold, seen, withdrawn=False)
    assert len(scores.phantoms) == 1 and gold.phantom_id in scores.phantoms[0]
    assert not scores.passed
    # An id that only starts like the phantom is another id, no phantom.
    seen = _perfect(gold, withdrawn=False)
    seen.node_texts.append(f"{gold.phantom_id}0")
    assert score_pass("p", gold, seen, withdrawn=False).phantoms == []


def test_a_document_for_the_missing_file_is_a_phantom() -> None:
    gold = generate_declared(7).gold
    seen = _perfect(gold, withdrawn=False)
    seen.documents.append(ObservedDocument(uuid="m", path=gold.missing_target, name="gone"))
    assert not score_pass("p", gold, seen, withdrawn=False).passed


def test_a_decoy_served_fails() -> None:
    gold = generate_declared(7).gold
    seen = _perfect(gold, withdrawn=False)
    seen.edges.append(gold.decoys[0])
    seen.tags.append(gold.decoy_tag)
    scores = score_pass("p", gold, seen, withdrawn=False)
    assert len(scores.decoys_served) == 2 and not scores.passed


def test_each_slot_miss_fails() -> None:
    gold = generate_declared(7).gold
    parent = next(iter(gold.children))
    new, old = gold.supersessions[0]
    cases = {
        "children": lambda s: s.children.__setitem__(parent, s.children[parent][1:]),
        "current": lambda s: s.current.__setitem__(old, CurrentAnswer(successor_served=new)),
        # ADR 0211: the old document served before its successor is a miss.
        "current_order": lambda s: s.current.__setitem__(
            old, CurrentAnswer(superseded_by=new, successor_served=new, first_served=old)
        ),
        "by_source": lambda s: s.by_source.__setitem__(gold.withdrawn, ["notes/x.md"]),
        "window": lambda s: s.windows.__setitem__(0, WindowAnswer(commits=[0])),
        "withdrawn": lambda s: s.withdrawn_hits.append("knowledge_search_passages: x"),
    }
    for slot, spoil in cases.items():
        seen = _perfect(gold, withdrawn=slot == "withdrawn")
        spoil(seen)
        scores = score_pass("p", gold, seen, withdrawn=slot == "withdrawn")
        missed = [s.slot for s in scores.slots if not s.exact]
        assert missed == [slot.removesuffix("_order")], (slot, missed)
        assert not scores.passed


def _report(*passes: object) -> DeclaredReport:
    return DeclaredReport(
        seed=7,
        gold_digest="0" * 64,
        files=1,
        commits=1,
        structural_passed=False,
        passes=list(passes),  # type: ignore[arg-type]
    )


def test_the_report_round_trips_as_json() -> None:
    gold = generate_declared(7).gold
    report = _report(score_pass("p", gold, _perfect(gold, withdrawn=True), withdrawn=True))
    raw = msgspec.json.encode(report)
    assert msgspec.json.decode(raw, type=DeclaredReport) == report
