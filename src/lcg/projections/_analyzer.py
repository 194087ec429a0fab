"""The text analyzer of the BM25 projection: how a text becomes the terms it is indexed under.

The same function analyzes documents and queries, so a query matches exactly the terms its
words would have been indexed under. Steps, in order:

1. Unicode NFKC normalization, so composed and decomposed forms (and full-width letters,
   ligatures) index alike;
2. Unicode case folding (``str.casefold``), a stronger lowercase (``ß`` → ``ss``);
3. word tokens: maximal runs of Unicode word characters (regex ``\\w+``: letters, digits,
   underscore, in every script). Everything else separates tokens, so ``don't`` gives ``don``
   and ``t``, and ``e-mail`` gives ``e`` and ``mail``;
4. tokens longer than ``MAX_TOKEN_CHARS`` are dropped (hashes, base64 blobs), as are tokens in
   ``STOPWORDS``: a small list of English function words, plus the contraction tails the
   tokenizer leaves behind (``s``, ``t``, ``ll``, ...).

There is no stemming: on the LongMemEval dev questions, Porter stemming moves bm25s' session
recall@10 from 0.760 to 0.768 only, which does not pay for an in-house stemmer (ADR 0012).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Final

__all__ = ["MAX_TOKEN_CHARS", "STOPWORDS", "analyze", "query_terms", "term_counts", "words"]

#: Longer tokens are dropped: they are identifiers or encoded blobs, not words.
MAX_TOKEN_CHARS: Final = 40

#: English function words (and contraction tails) that carry no topic; not indexed.
STOPWORDS: Final[frozenset[str]] = frozenset(
    """
    a about above after again against all am an and any are as at
    be because been before being below between both but by
    can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself
    no nor not now of off on once only or other our ours ourselves out over own
    same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very
    was we were what when where which while who whom why will with would
    you your yours yourself yourselves
    s t d ll m re ve
    """.split()
)

_TOKEN: Final = re.compile(r"\w+")
# For ASCII text the same split, 3-4x faster: every byte that is not [A-Za-z0-9_] becomes a
# space (ASCII is NFKC-stable, its casefold is lower(), and \w on ASCII is [A-Za-z0-9_]).
_ASCII_SPLIT: Final = bytes(
    c if c < 128 and (chr(c).isalnum() or chr(c) == "_") else 32 for c in range(256)
)


def words(text: str) -> list[str]:
    """Steps 1-3: the normalized, case-folded word tokens of ``text``, stopwords included."""
    if text.isascii():
        return text.lower().encode("ascii").translate(_ASCII_SPLIT).decode("ascii").split()
    # is_normalized is a fast scan for the common, already normalized, case.
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    return _TOKEN.findall(text.casefold())


def analyze(text: str) -> list[str]:
    """The terms of ``text`` in order, repeats kept (the analyzer described above)."""
    stop = STOPWORDS
    limit = MAX_TOKEN_CHARS
    return [t for t in words(text) if t not in stop and len(t) <= limit]


def term_counts(text: str) -> dict[str, int]:
    """Each distinct term of ``text`` with its frequency (``analyze``, counted)."""
    # Counted in C; stopwords and long tokens removed after (from a plain dict: Counter's
    # __delitem__ is Python code).
    counts = dict(Counter(words(text)))
    for term in STOPWORDS.intersection(counts):
        del counts[term]
    for term in [t for t in counts if len(t) > MAX_TOKEN_CHARS]:
        del counts[term]
    return counts


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query, sorted (a repeated word counts once)."""
    return sorted(set(analyze(text)))
