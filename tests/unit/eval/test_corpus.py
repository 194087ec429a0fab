"""The seeded corpus: byte-identical per seed, gold from data, every planted feature present."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lcg.eval.corpus import generate
from lcg.eval.gold import gold_digest
from lcg.extract.ontology import parse_ontology
from lcg.ingest.resolution import fuzzy_score, name_key


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_same_seed_same_bytes_same_digest(tmp_path: Path) -> None:
    generate(7, "small").write(tmp_path / "a")
    generate(7, "small").write(tmp_path / "b")
    a, b = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    assert a == b
    assert generate(7, "small").digest == generate(7, "small").digest


def test_other_seed_or_size_other_corpus() -> None:
    digests = {generate(s, z).digest for s in (7, 11) for z in ("small", "full")}
    assert len(digests) == 4


@pytest.mark.parametrize(("size", "docs"), [("small", 12), ("full", 50)])
def test_sizes_and_planted_features(size: str, docs: int) -> None:
    c = generate(13, size)  # type: ignore[arg-type]
    g = c.gold
    assert len(c.documents) == docs
    assert {d.kind for d in c.documents} == {"note", "message", "record"}
    # decoys: about one per three planted facts
    assert abs(len(g.decoys) - len(g.facts) / 3) <= 2
    # one supersession, stated by the last-dated document
    ended = [f for f in g.facts if f.ended_at]
    assert len(ended) == 1
    last = max(g.documents, key=lambda d: d.date)
    assert ended[0].ending_doc == last.doc_id and ended[0].superseded_by in last.facts
    assert g.document(ended[0].doc).date < last.date
    # one withdrawn document, stating a fact no other document states
    withdrawn = g.withdrawn()
    assert withdrawn is not None and withdrawn.facts
    # the phantom is in no document
    assert all(g.phantom not in d.text for d in c.documents)
    assert g.phantom not in {e.name for e in g.entities}


def test_planted_sentences_are_verbatim_and_gold_is_data() -> None:
    c = generate(7, "full")
    g = c.gold
    for gdoc in g.documents:
        text = c.document(gdoc.doc_id).text
        for key in gdoc.facts:
            assert g.fact(key).sentence in text
        for d in (x for x in g.decoys if x.doc == gdoc.doc_id):
            assert d.sentence in text
        for m in gdoc.mentions:
            assert m.surface in text
        if gdoc.kind == "record":
            record = json.loads(text)
            statements = {e["statement"] for e in record["entries"]}
            assert statements == {g.fact(k).sentence for k in gdoc.facts}
    # the digest is over the gold alone, canonical
    assert c.digest == gold_digest(g)


def test_aliases_cross_documents_and_resolve_by_the_engine_rules() -> None:
    c = generate(7, "full")
    g = c.gold
    aliased = 0
    for e in g.entities:
        written = {m.surface for d in g.documents for m in d.mentions if m.entity == e.key}
        if len(written) > 1:
            aliased += 1
        for alias in e.aliases:
            assert name_key(alias) == name_key(e.name) or fuzzy_score(alias, e.name) is not None
    assert aliased >= 3


def test_ontology_parses_and_declares_the_gold_types() -> None:
    c = generate(7, "small")
    onto = parse_ontology(c.ontology)
    assert onto is not None
    assert {e.entity_type for e in c.gold.entities} <= set(onto.entity_type_names)
    assert {f.relation for f in c.gold.facts} <= set(onto.relation_type_names)
