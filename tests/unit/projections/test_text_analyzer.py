"""The BM25 analyzer: normalization, case folding, word tokens, stopwords, long tokens, stems."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from lcg.projections._analyzer import (
    MAX_TOKEN_CHARS,
    STOPWORDS,
    analyze,
    query_terms,
    stem,
    term_counts,
    words,
)


def test_lowercase_word_tokens_without_stopwords() -> None:
    assert analyze("The Quick, brown FOX -- jumped over the lazy_dog!") == [
        "quick",
        "brown",
        "fox",
        "jump",
        "lazy_dog",
    ]


def test_contractions_split_and_tails_dropped() -> None:
    assert analyze("I'm sure they'll say it's Bob's car, don't you?") == [
        "sure",
        "say",
        "bob",
        "car",
        "don",
    ]
    assert {"s", "t", "ll", "m", "re", "ve", "d"} <= STOPWORDS


def test_unicode_scripts_casefold_and_nfkc() -> None:
    # Steps 1-3 (before stopwords and stems).
    assert words("Straße STRASSE") == ["strasse", "strasse"]
    # Decomposed e + combining acute and the composed é index alike.
    assert words("Cafe\u0301") == words("Café") == ["café"]
    assert words("ｆｕｌｌ－ｗｉｄｔｈ") == ["full", "width"]
    assert words("東京 Москва Αθήνα") == ["東京", "москва", "αθήνα"]
    assert words("version 2.0 costs $30") == ["version", "2", "0", "costs", "30"]


def test_long_tokens_are_dropped() -> None:
    ok = "x" * MAX_TOKEN_CHARS
    assert analyze(f"{ok} {ok}y short") == [ok, "short"]


def test_english_words_are_reduced_to_their_snowball_stems() -> None:
    # Issue 14: "rivers" must find "river"; inflections of one word are one term.
    assert analyze("rivers River") == ["river", "river"]
    assert query_terms("cooking cooked cooks") == ["cook"]
    assert analyze("preferences running studies") == ["prefer", "run", "studi"]
    # Stopwords are matched on the surface form, before stemming ("does" is one, "doe" is
    # not; "having" is one, "have" stems to itself).
    assert analyze("does doe having") == ["doe"]
    # Reference outputs of the Snowball English stemmer (snowballstem.org's vocabulary).
    assert stem(["consign", "consigned", "consigning", "consignment"]) == ["consign"] * 4
    assert stem(["generously", "knightly", "skies", "dying"]) == [
        "generous",
        "knight",
        "sky",
        "die",
    ]


def test_counts_and_query_terms() -> None:
    assert term_counts("cat dog cat the cat") == {"cat": 3, "dog": 1}
    assert term_counts("") == {}
    assert query_terms("Dog cat DOG the") == ["cat", "dog"]
    assert query_terms("the of and") == []


def _slow_words(text: str) -> list[str]:
    """Steps 1-3 spelled out, with no ASCII shortcut."""
    return re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold())


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_fast_path_splits_like_the_regex(text: str) -> None:
    assert words(text) == _slow_words(text)


@given(st.text())
def test_words_and_counts_agree_with_the_definition(text: str) -> None:
    assert words(text) == _slow_words(text)
    expected: dict[str, int] = {}
    for t in _slow_words(text):
        if t not in STOPWORDS and len(t) <= MAX_TOKEN_CHARS:
            root = stem([t])[0]
            expected[root] = expected.get(root, 0) + 1
    assert dict(term_counts(text)) == expected
    assert query_terms(text) == sorted(expected)
    assert sorted(analyze(text)) == sorted(t for t, c in expected.items() for _ in range(c))
