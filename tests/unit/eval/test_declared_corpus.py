"""The declared-structure corpus: byte-identical per seed, its gold from the generator's data."""

from __future__ import annotations

import re
from pathlib import Path

from lcg.eval.declared_corpus import generate_declared


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_same_seed_same_bytes_same_digest(tmp_path: Path) -> None:
    generate_declared(7).write(tmp_path / "a")
    generate_declared(7).write(tmp_path / "b")
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
    assert generate_declared(7).digest == generate_declared(7).digest
    assert generate_declared(7).gold == generate_declared(7).gold


def test_another_seed_another_corpus() -> None:
    a, b = generate_declared(7), generate_declared(11)
    assert a.digest != b.digest
    assert [f.text for f in a.files] != [f.text for f in b.files]


def test_the_shape_the_method_asks_for() -> None:
    corpus = generate_declared(7)
    gold = corpus.gold
    kinds = [f.kind for f in corpus.files]
    assert (kinds.count("epic"), kinds.count("feature"), kinds.count("story")) == (3, 5, 12)
    assert kinds.count("note") == 6 and kinds.count("code") == 4
    epics = {f.path for f in corpus.files if f.kind == "epic"}
    stories = {f.path for f in corpus.files if f.kind == "story"}
    under_epic = {c for p, kids in gold.children.items() if p in epics for c in kids}
    assert len(under_epic & stories) == 2  # two stories straight under an epic
    assert len(gold.supersessions) == 2
    relations = {e.relation for e in gold.edges}
    assert relations == {"LINKS_TO", "PART_OF", "SUPERSEDES", "TAGGED", "IMPORTS", "MENTIONS"}
    # One dated commit per file, in date order, then the withdrawal.
    assert [c.files for c in gold.commits[:-1]] == [[f.path] for f in corpus.files]
    assert gold.commits[-1].removes and gold.commits[-1].files == [gold.withdrawn]
    assert [c.date for c in gold.commits] == sorted(c.date for c in gold.commits)
    assert all(w.commits for w in gold.windows)


def test_the_decoys_are_written_and_are_no_gold() -> None:
    corpus = generate_declared(7)
    gold = corpus.gold
    text = "\n".join(f.text for f in corpus.files)
    assert gold.phantom_id in text
    assert gold.phantom_id not in gold.ids.values()
    assert gold.missing_target.rsplit("/", 1)[-1] in text
    assert gold.missing_target not in gold.titles
    assert "```" in text and f"`{gold.decoy_tag}`" in text
    assert not set(gold.decoys) & set(gold.edges)


def test_no_path_spells_an_id_and_no_path_holds_another() -> None:
    corpus = generate_declared(7)
    ids = re.compile("|".join(re.escape(i) for i in corpus.gold.ids.values()), re.IGNORECASE)
    paths = [f.path for f in corpus.files]
    assert not [p for p in paths if ids.search(p)]
    assert not [(a, b) for a in paths for b in paths if a != b and a in b]


def test_the_withdrawal_takes_its_edges_along() -> None:
    gold = generate_declared(7).gold
    before, after = gold.edges_at(withdrawn=False), gold.edges_at(withdrawn=True)
    gone = [e for e in before if e not in after]
    # It was linked to, mentioned, had a parent and tags: all of it goes.
    assert {e.relation for e in gone} >= {"LINKS_TO", "MENTIONS", "PART_OF", "TAGGED"}
    assert all(gold.withdrawn in (e.source, e.target) for e in gone)
    assert gold.withdrawn not in gold.paths(withdrawn=True)
    assert all(gold.withdrawn not in kids for kids in gold.children_at(withdrawn=True).values())
