"""Entity resolution: when does an extracted name denote an entity we already have?

The rules, tried in order (thresholds and their reasons: docs/adr/0032-entity-resolution.md):

1. **exact** – the normalised names are equal (NFKC, control characters stripped, trimmed,
   inner whitespace collapsed, then the lookup key's NFC and case folding: ``name_key``);
2. **fuzzy** – ``token_sort_ratio`` of the punctuation-free keys is at least
   ``FUZZY_THRESHOLD``, both keys are at least ``FUZZY_MIN_CHARS`` long, and the *guards*
   hold: the numbers in both names are the same, short tokens (≤ ``SHORT_TOKEN_CHARS``) are
   the same, and every token of the name with fewer tokens has a counterpart scoring at least
   ``TOKEN_FLOOR`` (so ``Apollo 11``/``Apollo 12`` and ``John Smith``/``Jane Smith`` stay
   apart while ``Buzz Aldrin``/``Buzz Aldrinn`` merge);
3. **vector** – cosine of the name embeddings at least ``VECTOR_THRESHOLD`` (the reference's
   0.85), confirmed by ``token_set_ratio`` at least ``VECTOR_NAME_FLOOR`` and the same guards.

Edge restatement and bounded summaries (docs/adr/0033, 0034) live here too, as pure
functions; ``GroupLookup`` gathers candidates from the projections (the caller holds
``ws.reading()``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Final, Literal

import msgspec
import numpy as np
from rapidfuzz import fuzz

from lcg.events import fold, lookup_key
from lcg.ingest._common import normalize_name
from lcg.ingest.declared import is_declared
from lcg.projections import MERGED_LABEL
from lcg.projections import graph_records as gr
from lcg.query import graph_reads
from lcg.workspace import Workspace

__all__ = [
    "FACT_RESTATE_THRESHOLD",
    "FUZZY_MIN_CHARS",
    "FUZZY_THRESHOLD",
    "SALVAGE_THRESHOLD",
    "SHORT_TOKEN_CHARS",
    "SUMMARY_CAP",
    "TOKEN_FLOOR",
    "VECTOR_NAME_FLOOR",
    "VECTOR_THRESHOLD",
    "ActiveEdge",
    "Candidate",
    "GroupLookup",
    "Match",
    "MatchRule",
    "best_match",
    "cap_summary",
    "fact_key",
    "fuzzy_key",
    "fuzzy_score",
    "guards_hold",
    "match_rule",
    "merge_summary",
    "name_key",
    "restates",
    "split_sentences",
]

#: Minimum ``token_sort_ratio`` (0–100) for a fuzzy name match.
FUZZY_THRESHOLD: Final = 90.0
#: Names shorter than this (normalised, without punctuation) only ever match exactly.
FUZZY_MIN_CHARS: Final = 5
#: Tokens this short (or shorter) must appear in both names, exactly.
SHORT_TOKEN_CHARS: Final = 3
#: Each token of the shorter name needs a counterpart at least this similar (``ratio``).
TOKEN_FLOOR: Final = 80.0
#: Minimum cosine of the name embeddings for a vector candidate (the reference's dedup 0.85).
VECTOR_THRESHOLD: Final = 0.85
#: Minimum ``token_set_ratio`` confirming a vector candidate.
VECTOR_NAME_FLOOR: Final = 60.0
#: Minimum cosine to rewrite an unknown edge endpoint to a batch entity (the reference's 0.85).
SALVAGE_THRESHOLD: Final = 0.85
#: Minimum ``token_sort_ratio`` of two facts that restate each other.
FACT_RESTATE_THRESHOLD: Final = 95.0
#: Entity summaries are kept at or under this many characters, cut on a sentence boundary.
SUMMARY_CAP: Final = 500

MatchRule = Literal["exact", "fuzzy", "vector"]

_SPACES = re.compile(r"[\t\n\r\v\f]")
_PUNCT = re.compile(r"[^\w\s]+")
_DIGITS = re.compile(r"\d+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def name_key(name: str) -> str:
    """The exact-match key of a name (NFKC, no control chars, trimmed, collapsed, ``fold``)."""
    # Tabs and newlines separate words; ``normalize_name`` would strip them as control chars.
    return fold(normalize_name(_SPACES.sub(" ", name)))


def fuzzy_key(name: str) -> str:
    """``name_key`` with punctuation as spaces: ``"Armstrong, Neil"`` → ``"armstrong neil"``."""
    return " ".join(_PUNCT.sub(" ", name_key(name)).split())


def guards_hold(a: str, b: str) -> bool:
    """Whether two fuzzy keys may denote the same thing: same numbers, same short tokens,
    and every token of the name with fewer tokens (of each, when both have as many) has a
    close counterpart in the other."""
    if Counter(_DIGITS.findall(a)) != Counter(_DIGITS.findall(b)):
        return False
    ta, tb = a.split(), b.split()
    short_a = Counter(t for t in ta if len(t) <= SHORT_TOKEN_CHARS)
    short_b = Counter(t for t in tb if len(t) <= SHORT_TOKEN_CHARS)
    if short_a != short_b:
        return False

    def covered(fewer: list[str], more: list[str]) -> bool:
        return all(any(fuzz.ratio(t, u) >= TOKEN_FLOOR for u in more) for t in fewer)

    # With as many tokens on each side, neither name is "the one with fewer": both are
    # checked, or the order the names arrived in would decide (Hanna Anna / Hanna Anne).
    if len(ta) == len(tb):
        return covered(ta, tb) and covered(tb, ta)
    return covered(ta, tb) if len(ta) < len(tb) else covered(tb, ta)


def fuzzy_score(a: str, b: str) -> float | None:
    """The fuzzy score of two names when rule 2 accepts them, else ``None``."""
    ka, kb = fuzzy_key(a), fuzzy_key(b)
    if not ka or not kb:
        return None
    if ka == kb:
        return 100.0
    if min(len(ka), len(kb)) < FUZZY_MIN_CHARS:
        return None
    score = float(fuzz.token_sort_ratio(ka, kb))
    if score < FUZZY_THRESHOLD or not guards_hold(ka, kb):
        return None
    return score


def match_rule(incoming: str, existing: str, cosine: float | None = None) -> MatchRule | None:
    """The first rule under which ``incoming`` names the entity called ``existing``."""
    if name_key(incoming) and name_key(incoming) == name_key(existing):
        return "exact"
    if fuzzy_score(incoming, existing) is not None:
        return "fuzzy"
    if cosine is not None and cosine >= VECTOR_THRESHOLD:
        ka, kb = fuzzy_key(incoming), fuzzy_key(existing)
        if ka and kb and fuzz.token_set_ratio(ka, kb) >= VECTOR_NAME_FLOOR and guards_hold(ka, kb):
            return "vector"
    return None


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """An existing entity an extracted name may resolve to."""

    uuid: str
    name: str
    summary: str = ""
    labels: list[str] = []
    created_at: str = ""
    #: Cosine of the name embeddings when the candidate came from the vector index.
    cosine: float | None = None


class Match(msgspec.Struct, frozen=True, kw_only=True):
    """The entity an extracted name resolved to, and by which rule."""

    candidate: Candidate
    rule: MatchRule
    score: float


_RANK: Final[dict[str, int]] = {"exact": 0, "fuzzy": 1, "vector": 2}


def best_match(incoming: str, candidates: Iterable[Candidate]) -> Match | None:
    """The best candidate: exact (oldest, then smallest uuid) > fuzzy (highest score) >
    vector (highest cosine); ties by smaller uuid."""
    best: tuple[tuple[int, float, str, str], Match] | None = None
    for cand in candidates:
        rule = match_rule(incoming, cand.name, cand.cosine)
        if rule is None:
            continue
        if rule == "exact":
            score = 100.0
            key = (0, 0.0, cand.created_at, cand.uuid)
        elif rule == "fuzzy":
            score = fuzzy_score(incoming, cand.name) or 0.0
            key = (1, -score, "", cand.uuid)
        else:
            score = float(cand.cosine or 0.0)
            key = (2, -score, "", cand.uuid)
        if best is None or key < best[0]:
            best = (key, Match(candidate=cand, rule=rule, score=score))
    return None if best is None else best[1]


# ---- summaries ------------------------------------------------------------------------


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (split after ``.``, ``!`` or ``?`` followed by space)."""
    return [s.strip() for s in _SENTENCE_END.split(" ".join(text.split())) if s.strip()]


def _sentence_key(sentence: str) -> str:
    return fuzzy_key(sentence)


def cap_summary(text: str, cap: int = SUMMARY_CAP) -> str:
    """``text`` cut to at most ``cap`` characters on a sentence boundary (else a word one)."""
    text = " ".join(text.split())
    if len(text) <= cap:
        return text
    out = ""
    for sentence in split_sentences(text):
        joined = f"{out} {sentence}" if out else sentence
        if len(joined) > cap:
            break
        out = joined
    if out:
        return out
    # One over-long first sentence: cut at the last word that fits and mark the cut.
    cut = text[: cap - 1].rsplit(" ", 1)[0].rstrip(" ,;:")
    return cut + "…"


def _says_again(new: str, old: str) -> bool:
    """Whether sentence key ``new`` adds nothing to ``old``: equal, near-identical
    (``token_sort_ratio`` ≥ 90), or every word of it is already in ``old``."""
    if new == old or fuzz.token_sort_ratio(new, old) >= 90:
        return True
    return set(new.split()) <= set(old.split())


def merge_summary(existing: str, incoming: str, cap: int = SUMMARY_CAP) -> str:
    """The summary of a matched entity: the existing one, plus each new sentence of
    ``incoming`` that adds information (not already said, nor nearly), within ``cap``."""
    base = " ".join(existing.split())
    if not base:
        return cap_summary(incoming, cap)
    if len(base) > cap:
        base = cap_summary(base, cap)
    known = [_sentence_key(s) for s in split_sentences(base)]
    out = base
    for sentence in split_sentences(incoming):
        key = _sentence_key(sentence)
        if not key or any(_says_again(key, k) for k in known):
            continue
        joined = f"{out} {sentence}"
        if len(joined) > cap:
            break
        out = joined
        known.append(key)
    return out


# ---- edge restatement -----------------------------------------------------------------


def fact_key(fact: str) -> str:
    """The key two facts are compared by (``fuzzy_key``)."""
    return fuzzy_key(fact)


class ActiveEdge(msgspec.Struct, frozen=True, kw_only=True):
    """A current edge between two entities, as restatement compares it."""

    uuid: str
    relation_type: str | None
    fact: str
    created_at: str = ""
    #: Written by the declared pass (ADR 0203): restated, never ended, by extraction.
    declared: bool = False


_GENERIC_TYPES: Final = frozenset({"", "UNCLASSIFIED", "RELATES_TO", "RELATED_TO"})


def restates(relation_type: str | None, fact: str, edge: ActiveEdge) -> bool:
    """Whether a new edge (same endpoints) says again what ``edge`` says: the same specific
    relation type, or a near-identical fact."""
    rt = relation_type or ""
    if rt not in _GENERIC_TYPES and rt == (edge.relation_type or ""):
        return True
    a, b = fact_key(fact), fact_key(edge.fact)
    if not a or not b:
        return False
    return a == b or fuzz.token_sort_ratio(a, b) >= FACT_RESTATE_THRESHOLD


# ---- candidates from the projections ----------------------------------------------------

#: How many BM25 and vector hits are considered per name.
CANDIDATE_POOL: Final = 10


class GroupLookup:
    """Resolves names against one group's existing entities (caller holds ``ws.reading()``).

    Candidates are the graph's exact-key matches (``lookup_key``), the BM25 hits on the name, and
    the vector hits on the name embedding; Merged tombstones are replaced by the entity they
    were merged into. ``prefetch`` gathers the candidates of many names with two graph
    queries in all (the BM25 and vector searches are in memory); results are memoised.
    """

    def __init__(
        self, ws: Workspace, group_id: str, vector_of: Callable[[str], np.ndarray | None]
    ) -> None:
        self._ws = ws
        self._group = group_id
        self._vector_of = vector_of
        self._memo: dict[tuple[str, bool], Match | None] = {}
        self._records_memo: dict[str, Candidate | None] = {}

    def _records(self, uuids: Sequence[str]) -> dict[str, Candidate]:
        """Candidates for ``uuids`` of this group (one graph query for the unknown ones)."""
        todo = [u for u in dict.fromkeys(uuids) if u not in self._records_memo]
        if todo:
            for u in todo:
                self._records_memo[u] = None
            for r in graph_reads.entities_by_uuids(self._ws.graph, todo):
                if r.group_id == self._group:
                    self._records_memo[r.uuid] = Candidate(
                        uuid=r.uuid,
                        name=r.name,
                        summary=r.summary,
                        labels=r.labels,
                        created_at=r.created_at,
                    )
        out: dict[str, Candidate] = {}
        for u in uuids:
            cand = self._records_memo.get(u)
            if cand is not None:
                out[u] = cand
        return out

    def _by_key(self, names: Sequence[str]) -> list[str]:
        keys = sorted({k for k in map(lookup_key, names) if k})
        if not keys:
            return []
        return gr.entity_uuids_by_keys(self._ws.graph, self._group, keys)

    def _live(self, cand: Candidate) -> Candidate | None:
        """The candidate itself, or for a tombstone the entity it was merged into."""
        seen = {cand.uuid}
        while MERGED_LABEL in cand.labels:
            found = gr.entity_record(self._ws.graph, cand.uuid)
            target = gr.merged_into(found[1]) if found else None
            if target is None or target in seen:
                return None
            seen.add(target)
            nxt = self._records([target]).get(target)
            if nxt is None:
                return None
            cand = nxt
        return cand

    def prefetch(self, names: Sequence[str], *, use_vectors: bool = True) -> None:
        """Resolve every name of ``names`` (results memoised for ``resolve``)."""
        todo = [n for n in dict.fromkeys(names) if (name_key(n), use_vectors) not in self._memo]
        if not todo:
            return
        exact = self._by_key(todo)
        hits: dict[str, list[str]] = {}
        cosines: dict[str, dict[str, float]] = {}
        for n in todo:
            near = [u for u, _ in self._ws.text.search(self._group, "entity", n, CANDIDATE_POOL)]
            cos: dict[str, float] = {}
            vec = self._vector_of(n) if use_vectors else None
            if vec is not None:
                for u, score in self._ws.vectors.search(
                    self._group, "entity.name", vec, CANDIDATE_POOL
                ):
                    cos[u] = float(score)
                    near.append(u)
            hits[n] = near
            cosines[n] = cos
        records = self._records([*exact, *(u for f in hits.values() for u in f)])
        exact_by_key: dict[str, list[str]] = {}
        for u in exact:
            cand = records.get(u)
            if cand is not None:
                exact_by_key.setdefault(name_key(cand.name), []).append(u)
        for n in todo:
            uuids = [*exact_by_key.get(name_key(n), []), *hits[n]]
            found: list[Candidate] = []
            for u in dict.fromkeys(uuids):
                cand = records.get(u)
                live = self._live(cand) if cand is not None else None
                if cand is None or live is None:
                    continue
                if live.uuid != u:
                    # A tombstone is matched by its own name and stands for its survivor.
                    live = msgspec.structs.replace(live, name=cand.name, created_at=cand.created_at)
                found.append(msgspec.structs.replace(live, cosine=cosines[n].get(u)))
            self._memo[(name_key(n), use_vectors)] = best_match(n, found)

    def resolve(self, name: str, *, use_vectors: bool = True) -> Match | None:
        """The existing entity ``name`` denotes, or ``None`` (memoised)."""
        key = (name_key(name), use_vectors)
        if key not in self._memo:
            self.prefetch([name], use_vectors=use_vectors)
        return self._memo[key]

    def active_edges_among(
        self, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[ActiveEdge]]:
        """Current edges of the group for each ``(source, target)`` pair, oldest first."""
        wanted = set(pairs)
        out: dict[tuple[str, str], list[ActiveEdge]] = {p: [] for p in wanted}
        if not wanted:
            return out
        current = gr.active_edges_among(
            self._ws.graph,
            self._group,
            sorted({p[0] for p in wanted}),
            sorted({p[1] for p in wanted}),
        )
        for edge in current:
            key = (edge.source_uuid, edge.target_uuid)
            if key in out:
                out[key].append(
                    ActiveEdge(
                        uuid=edge.uuid,
                        relation_type=edge.relation_type or None,
                        fact=edge.fact,
                        created_at=edge.created_at,
                        declared=is_declared(edge.attributes),
                    )
                )
        return out
