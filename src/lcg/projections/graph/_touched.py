"""The rows a segment's events touch, and the rule that they are the events' group's own.

``Keys`` collects, event by event, the uuids whose rows the events write: created, updated,
deleted (an edge's endpoints and a mention's entity are only *named*, which is how a
cross-group edge legitimately reaches another group's entity; they are not collected). After
each event is planned into keys of its own, ``refuse_foreign`` looks up the owner of each: a
row held by another group refuses the event (``ForeignRowError``), so no stream — copied,
followed, imported or hostile — creates, changes or deletes a row of another group
(ADR 0196).
"""

from __future__ import annotations

from collections.abc import Callable

from lcg.events import Event, MergeOutcome
from lcg.projections.base import ForeignRowError
from lcg.projections.graph._index import IndexDelta

__all__ = ["Keys", "refuse_foreign"]


class Keys:
    """The uuids a segment's events touch whose current rows they need, in first-seen order."""

    __slots__ = ("created_ents", "edges", "ents", "eps", "extracted_eps")

    def __init__(self) -> None:
        """No key yet."""
        self.ents: dict[str, None] = {}
        self.eps: dict[str, None] = {}
        self.edges: dict[str, None] = {}
        self.created_ents: dict[str, None] = {}
        #: The episodes extracted by the events, one per event (their MENTIONS may be loaded).
        self.extracted_eps: list[str] = []

    def merge(self, m: MergeOutcome) -> None:
        """The rows a merge reads: canonical, aliases, the edges it invalidates."""
        self.ents[m.canonical_uuid] = None
        for a in m.aliases:
            self.ents[a.uuid] = None
        for inv in m.edges_invalidated:
            self.edges[inv.uuid] = None
        # Minted fresh by the merge, but a line may repeat one: located, so it is upserted.
        for rec in m.edges_created:
            self.edges[rec.uuid] = None

    def absorb(self, other: Keys) -> None:
        """Add ``other``'s keys after these (one event's, once they are checked)."""
        self.ents.update(other.ents)
        self.eps.update(other.eps)
        self.edges.update(other.edges)
        self.created_ents.update(other.created_ents)
        self.extracted_eps.extend(other.extracted_eps)


def refuse_foreign(index: IndexDelta, group_id: str, event: Event, keys: Keys) -> None:
    """Raise ``ForeignRowError`` if a row ``event`` (of ``group_id``) writes, one of its
    ``keys``, is held by another group.

    Ownership is the locator's (committed rows and this transaction's writes); a row the
    segment itself creates is not in it yet, and is the group's own.
    """
    checks: tuple[tuple[str, dict[str, None], Callable[[str], str | None]], ...] = (
        ("entity", keys.created_ents, index.entity_owner),
        ("entity", keys.ents, index.entity_owner),
        ("episode", keys.eps, index.episode_owner),
        ("edge", keys.edges, index.edge_owner),
    )
    for table, found, owner_of in checks:
        for uuid in found:
            owner = owner_of(uuid)
            if owner is not None and owner != group_id:
                raise ForeignRowError(
                    event, group_id, owner, f"writes {table} {uuid}, which group {owner!r} holds"
                )
