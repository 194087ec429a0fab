"""The demo's Apollo corpus as linked Markdown (``lcg.cli._demo_corpus``, ADR 0209): where a
link is restored and where it never is, the files as the declared pass reads them, and a
rewrite that changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcg.cli._demo_corpus import (
    Article,
    _title_patterns,
    link_prose,
    read_articles,
    write_corpus,
)
from lcg.cli.demo import EXAMPLE_CORPUS
from lcg.errors import ConfigError
from lcg.ingest.declared import declare_file, resolve_tree


def _link(prose: str, own: str, *titles: str) -> str:
    return link_prose(prose, own, _title_patterns([own, *titles]))


def test_the_first_whole_word_mention_is_linked_once() -> None:
    prose = "Apollo 11 flew. Neil Armstrong walked. Armstrong and Neil Armstrong again."
    assert _link(prose, "Apollo 11", "Neil Armstrong") == (
        "Apollo 11 flew. [[Neil Armstrong]] walked. Armstrong and Neil Armstrong again."
    )


def test_an_article_never_links_to_itself() -> None:
    assert _link("Apollo 11 was a flight.", "Apollo 11", "Moon") == "Apollo 11 was a flight."


def test_never_inside_a_longer_word_or_number() -> None:
    prose = "Apollo 11 and Moonlight and the Moon's far side, then Apollo 1."
    assert _link(prose, "X", "Apollo 1", "Moon") == (
        "Apollo 11 and Moonlight and the [[Moon]]'s far side, then [[Apollo 1]]."
    )


def test_the_longest_title_claims_its_words_first() -> None:
    prose = "The Apollo 8 Genesis reading was read on Apollo 8."
    assert _link(prose, "X", "Apollo 8", "Apollo 8 Genesis reading") == (
        "The [[Apollo 8 Genesis reading]] was read on [[Apollo 8]]."
    )
    # A shorter title inside the only mention of a longer one is never linked there.
    assert _link("The Apollo 8 Genesis reading.", "X", "Apollo 8", "Apollo 8 Genesis reading") == (
        "The [[Apollo 8 Genesis reading]]."
    )


def test_the_exact_title_only() -> None:
    assert _link("nasa and Nasa", "X", "NASA") == "nasa and Nasa"


def test_a_title_that_wiki_syntax_would_cut_is_never_a_link() -> None:
    prose = "C# and A|B and [x] are words."
    assert _link(prose, "X", "C#", "A|B", "[x]") == prose


def test_the_files_read_back_as_the_articles_and_their_links(tmp_path: Path) -> None:
    articles = [
        Article(title="Apollo 11", revision_id=10814753, prose="Flown by Neil Armstrong."),
        Article(title='Neil "Neil" Armstrong: pilot', revision_id=2, prose="He flew Apollo 11."),
        Article(title="Neil Armstrong", revision_id=3, prose="Commander of Apollo 11."),
        Article(title=".hidden/odd", revision_id=4, prose="A title with a slash."),
    ]
    written = write_corpus(articles, tmp_path / "apollo")
    assert written.written == 4 and written.links["Apollo 11"] == 1
    assert written.files[".hidden/odd"] == "hidden_odd.md"  # never a dot file, never a folder
    files = [
        declare_file(p.name, p.read_text(encoding="utf-8"))
        for p in sorted((tmp_path / "apollo").glob("*.md"))
    ]
    assert {(f.title, f.doc_id) for f in files} == {
        ("Apollo 11", "10814753"),
        ('Neil "Neil" Armstrong: pilot', "2"),
        ("Neil Armstrong", "3"),
        (".hidden/odd", "4"),
    }
    facts = {e.fact for e in resolve_tree(files, []).edges}
    assert facts == {
        "Apollo 11 links to Neil Armstrong",
        "Neil Armstrong links to Apollo 11",
        'Neil "Neil" Armstrong: pilot links to Apollo 11',
    }


def test_a_rewrite_changes_nothing_and_a_smaller_corpus_removes_the_rest(tmp_path: Path) -> None:
    articles = read_articles(EXAMPLE_CORPUS, 10)
    folder = tmp_path / "apollo"
    first = write_corpus(articles, folder)
    times = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    again = write_corpus(articles, folder)
    assert (again.written, again.unchanged, again.removed) == (0, 10, 0)
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == times
    (folder / "notes.txt").write_text("not the demo's")
    fewer = write_corpus(articles[:4], folder)
    assert fewer.removed == 6  # the demo's files only: other files of the folder stay
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [*(first.files[a.title] for a in articles[:4]), "notes.txt", ".lcg-demo-corpus"]
    )


def test_the_shipped_corpus_links_apollo_11_to_neil_armstrong() -> None:
    articles = {a.title: a for a in read_articles(EXAMPLE_CORPUS)}
    patterns = _title_patterns(list(articles))
    body = link_prose(articles["Apollo 11"].prose, "Apollo 11", patterns)
    assert "[[Neil Armstrong]]" in body and "[[Apollo 11]]" not in body
    # Only brackets are added: the words of the prose are unchanged.
    assert body.replace("[[", "").replace("]]", "") == articles["Apollo 11"].prose


def test_a_folder_the_demo_did_not_write_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "apollo"
    folder.mkdir()
    (folder / "mine.md").write_text("my own note")
    with pytest.raises(ConfigError, match="lcg demo did not write"):
        write_corpus(read_articles(EXAMPLE_CORPUS, 2), folder)
    assert [p.name for p in folder.iterdir()] == ["mine.md"]
