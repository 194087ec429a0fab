"""The passage a search answers, and the rules it applies around its ranking
(``lcg.query.search``).

* ``PassageRow`` — a hit: the episode, its cosine ``score`` and its ``fused_score``;
* ``Bounds`` — the asking time and the reference-time range a passage must fall in;
* ``over_floor`` — the cosine floor (``min_score``, the reference's meaning, ADR 0173);
  ``FloorReport`` says which floor applied and how many passages it took out of an answer
  (``filtered_by_min_score``, ADR 0198);
* ``is_file_chunk`` — whether a passage is a chunk that ``lcg ingest`` / ``lcg watch`` cut from
  a file: the recency prior (ADR 0094) weighs every other passage, never these, whose
  reference time is a file's last commit or save and says nothing of relevance (ADR 0198).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Final

import msgspec
import numpy as np

from lcg.events import chunk_file
from lcg.projections import EpisodeRow
from lcg.query._when import parse_time

__all__ = ["Bounds", "FloorReport", "PassageRow", "is_file_chunk", "over_floor", "passage_of"]

#: How a file tree's chunk is named: ``<source file>#<12 hex digits of its text's sha256>``,
#: ``~N`` after the N-th chunk of a file with the same text (``lcg.ingest.sources``; a test
#: holds the two to the same shape).
_FILE_CHUNK: Final = re.compile(r"#[0-9a-f]{12}(~[0-9]+)?")


def is_file_chunk(name: str, source_description: str) -> bool:
    """Whether the episode ``name`` (with ``source_description``) is a chunk of a file tree.

    Such a chunk is named after its file and its text's hash, and described as
    ``<source file>:<name>``; a conversation's episodes, a client's own chunk ids and
    ``knowledge_add_episode`` texts are not.
    """
    source = chunk_file(name, source_description)
    if not source or not name.startswith(source + "#"):
        return False
    return _FILE_CHUNK.fullmatch(name, len(source)) is not None


class FloorReport(msgspec.Struct, kw_only=True):
    """What a passage search's cosine floor did: filled in by ``Searcher.search_passages``."""

    #: The floor that applied: the caller's ``min_score``, else the embedder's default.
    min_score: float = 0.0
    #: Passages among the ``num_results`` best (by ``fused_score``, the floor aside) that the
    #: floor left out: how much shorter, or different, the answer is for it.
    filtered_by_min_score: int = 0
    #: Whether the floor is the embedder's default: a passage whose vector is not stored yet
    #: (being computed, or the embedder away) is then judged by its words, as a search
    #: without a query vector judges every passage.
    by_default: bool = False


def over_floor(
    uuid: str,
    qvec: np.ndarray | None,
    cosines: dict[str, float],
    lexical: set[str] | dict[str, float],
    min_score: float,
    unjudged: set[str],
) -> bool:
    """Whether a passage is kept: its cosine (0.0 without a stored vector) reaches
    ``min_score``, the reference's floor. Without a query vector no passage has a cosine: a
    BM25 hit is kept (the floor cannot judge it), others score 0.0 against the floor; so are
    the ``unjudged`` passages, whose vector is not stored yet, under a default floor."""
    if qvec is None or uuid in unjudged:
        return uuid in lexical or min_score <= 0.0
    return cosines.get(uuid, 0.0) >= min_score


class Bounds:
    """The time bounds of a passage search: the asking time and the reference-time range."""

    __slots__ = ("after", "before", "now")

    def __init__(self, as_of: str | None, after: str | None, before: str | None) -> None:
        self.now = parse_time(as_of) if as_of else None
        self.after = parse_time(after) if after else None
        before_t = parse_time(before) if before else None
        if self.now is not None and (before_t is None or self.now < before_t):
            before_t = self.now
        self.before = before_t

    @property
    def active(self) -> bool:
        """Whether any bound is set."""
        return self.after is not None or self.before is not None

    def admits(self, when: datetime | None) -> bool:
        """Whether a passage referenced at ``when`` is inside the bounds (unknown: yes)."""
        if when is None or not self.active:
            return True
        t = when
        if self.after is not None and t < self.after:
            return False
        return not (self.before is not None and t > self.before)


class PassageRow(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A passage hit: an episode with the cosine similarity of its content to the query
    (``score``) and the fused value the hits are ordered by (``fused_score``, descending,
    but for a superseded document's chunks, served after their successor's: ADR 0211)."""

    uuid: str
    name: str
    content: str
    source_description: str
    group_id: str
    created_at: str
    valid_at: str | None
    score: float
    #: The fusion's value (weighted sum, or reciprocal-rank sum under ``rrf``); hits come in
    #: its descending order. An addition: ``score`` stays the reference's cosine (ADR 0173).
    fused_score: float
    #: Present only on a chunk of a document another supersedes: the successor's file
    #: (``<source>/<path>``), whose chunks in the same answer come first (ADR 0211).
    superseded_by: str | None = None


def passage_of(row: EpisodeRow, score: float, fused: float) -> PassageRow:
    """The hit of an episode row, with its cosine and fused value (rounded to 6 places)."""
    return PassageRow(
        uuid=row.uuid,
        name=row.name,
        content=row.content,
        source_description=row.source_description,
        group_id=row.group_id,
        created_at=row.created_at,
        valid_at=row.valid_at,
        score=round(score, 6),
        fused_score=round(fused, 6),
    )
