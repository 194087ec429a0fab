"""The gold of a seeded corpus: what every document states, derived from the generator's data.

Nothing here reads prose. The generator builds these records first and writes the documents
from them, so the gold cannot drift from the corpus; ``gold_digest`` is the SHA-256 of the
canonical JSON of the whole ``Gold`` and names the corpus a report was scored against.
"""

from __future__ import annotations

import hashlib
from typing import Literal

import msgspec

__all__ = [
    "DocKind",
    "Gold",
    "GoldDecoy",
    "GoldDocument",
    "GoldEntity",
    "GoldFact",
    "GoldMention",
    "gold_digest",
]

DocKind = Literal["note", "message", "record"]


class GoldEntity(msgspec.Struct, frozen=True, kw_only=True):
    """One thing of the fictional world: its key, canonical name, type and alias forms."""

    key: str
    name: str
    entity_type: str
    aliases: list[str] = []


class GoldMention(msgspec.Struct, frozen=True, kw_only=True):
    """An entity as one document writes it (``surface`` may be an alias)."""

    entity: str
    surface: str


class GoldFact(msgspec.Struct, frozen=True, kw_only=True):
    """A planted fact: endpoints, relation, the exact sentence, and its life in time.

    ``ended_at`` is set on a fact a later document supersedes (``superseded_by`` names the
    successor fact); ``ending_sentence`` is that later document's sentence saying it ended.
    """

    key: str
    source: str
    target: str
    relation: str
    sentence: str
    doc: str
    ended_at: str | None = None
    superseded_by: str | None = None
    ending_doc: str | None = None
    ending_sentence: str | None = None


class GoldDecoy(msgspec.Struct, frozen=True, kw_only=True):
    """A sentence that reads like a fact and states none (an open question, an option)."""

    key: str
    doc: str
    sentence: str
    source: str
    target: str
    relation: str


class GoldDocument(msgspec.Struct, frozen=True, kw_only=True):
    """One document: where it lives, its kind and date, what it mentions and states."""

    doc_id: str
    path: str
    kind: DocKind
    date: str
    mentions: list[GoldMention]
    facts: list[str]
    decoys: list[str] = []
    endings: list[str] = []
    withdrawn: bool = False


class Gold(msgspec.Struct, frozen=True, kw_only=True):
    """The whole gold of one seed and size."""

    seed: int
    size: str
    generator_version: int
    entities: list[GoldEntity]
    facts: list[GoldFact]
    decoys: list[GoldDecoy]
    documents: list[GoldDocument]
    phantom: str

    def entity(self, key: str) -> GoldEntity:
        """The entity called ``key`` (``KeyError`` if none)."""
        for e in self.entities:
            if e.key == key:
                return e
        raise KeyError(key)

    def fact(self, key: str) -> GoldFact:
        """The fact called ``key`` (``KeyError`` if none)."""
        for f in self.facts:
            if f.key == key:
                return f
        raise KeyError(key)

    def document(self, doc_id: str) -> GoldDocument:
        """The document called ``doc_id`` (``KeyError`` if none)."""
        for d in self.documents:
            if d.doc_id == doc_id:
                return d
        raise KeyError(doc_id)

    def withdrawn(self) -> GoldDocument | None:
        """The document withdrawn after ingestion, if the corpus has one."""
        return next((d for d in self.documents if d.withdrawn), None)


def gold_digest(gold: Gold) -> str:
    """SHA-256 hex of the canonical (sorted-key) JSON of ``gold``."""
    raw = msgspec.json.encode(msgspec.to_builtins(gold), order="sorted")
    return hashlib.sha256(raw).hexdigest()
