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
   tokenizer leaves behind (``s``, ``t``, ``ll``, ...);
5. each remaining token is reduced to its Snowball English stem (PyStemmer), so ``rivers``
   and ``river`` are one term and ``cooking`` finds ``cooked`` (ADR 0090). Stopwords are
   matched before stemming, on the surface form.

``ANALYZER_VERSION`` names this definition; a text snapshot made under another version is
rebuilt by replay, since its terms would not match the queries' (``lcg.projections.text``).
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from typing import Final, cast

import Stemmer

__all__ = [
    "ANALYZER_VERSION",
    "MAX_TOKEN_CHARS",
    "STOPWORDS",
    "analyze",
    "query_terms",
    "stem",
    "term_counts",
    "words",
]

#: The analyzer's identity, stored in every text snapshot: change it whenever the terms a
#: text becomes change, so older snapshots are replayed instead of silently mismatching
#: (it also names what an episode's document holds: content, then its extraction keys).
ANALYZER_VERSION: Final = "words-nfkc-casefold/stop-v1/snowball-english/episode-keys"

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


# PyStemmer's Stemmer objects are not thread-safe (and keep a per-object cache of stems):
# one per thread. Queries analyze outside the projection's lock.
_LOCAL: Final = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    st: Stemmer.Stemmer | None = getattr(_LOCAL, "stemmer", None)
    if st is None:
        st = _LOCAL.stemmer = Stemmer.Stemmer("english", 100_000)
    return st


def stem(tokens: list[str]) -> list[str]:
    """Step 5: the Snowball English stem of each token, in order."""
    return list(_stemmer().stemWords(tokens)) if tokens else []


#: Word -> its term: the stem, or ``""`` for a word that is not indexed (a stopword or a
#: token longer than ``MAX_TOKEN_CHARS``). Shared by all threads (dict reads and writes are
#: atomic). Steps 4 and 5 become one ``map`` of ``dict.get`` in C, and the stemmer only sees
#: words it has not seen; emptied at ``_TERM_CACHE_MAX`` words, so it stays bounded.
_TERMS: dict[str, str] = {}
_TERM_CACHE_MAX: Final = 500_000


def _learn(new: list[str]) -> None:
    """Put the terms of the words ``new`` into ``_TERMS``."""
    if len(_TERMS) > _TERM_CACHE_MAX:
        _TERMS.clear()
    kept = [w for w in new if w not in STOPWORDS and len(w) <= MAX_TOKEN_CHARS]
    _TERMS.update(dict.fromkeys(new, ""))
    _TERMS.update(zip(kept, stem(kept), strict=True))


def _terms(tokens: list[str]) -> list[str]:
    """Steps 4-5 for each token: its term, or ``""`` when it is not indexed."""
    found = list(map(_TERMS.get, tokens))
    if None not in found:
        return cast("list[str]", found)
    _learn(list({t for t, f in zip(tokens, found, strict=True) if f is None}))
    found = list(map(_TERMS.get, tokens))
    if None not in found:
        return cast("list[str]", found)
    # Another thread emptied the cache meanwhile: compute these directly.
    return [
        "" if t in STOPWORDS or len(t) > MAX_TOKEN_CHARS else _stemmer().stemWord(t) for t in tokens
    ]


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
    return [t for t in _terms(words(text)) if t]


def term_counts(text: str) -> dict[str, int]:
    """Each distinct term of ``text`` with its frequency (``analyze``, counted)."""
    # Every step in C: the words, their terms from the cache, the counting.
    counts = Counter(_terms(words(text)))
    counts.pop("", None)
    return dict(counts)


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query, sorted (a repeated word counts once)."""
    return sorted(set(analyze(text)))
