"""The rows a segment's events touch, and the rule that they are the events' group's own.

``Keys`` collects, event by event, the uuids whose rows the events write: created, updated,
deleted (an edge's endpoints and a mention's entity are only *named*, which is how a
cross-group edge legitimately reaches another group's entity; they are not collected). After
each event is planned, ``refuse_foreign`` looks up the owner of each row it added: a row held
by another group refuses the event (``ForeignRowError``), so no stream — copied, followed,
imported or hostile — creates, changes or deletes a row of another group (ADR 0196).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import islice

from lcg.events import Event, MergeOutcome
from lcg.projections.base import ForeignRowError
from lcg.projections.graph._index import IndexDelta

__all__ = ["Keys", "Mark", "refuse_foreign"]

#: How many keys of each kind ``Keys`` held: (created entities, entities, episodes, edges).
Mark = tuple[int, int, int, int]


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

    def mark(self) -> Mark:
        """Where the keys stand now (``refuse_foreign`` checks only those added since)."""
        return (len(self.created_ents), len(self.ents), len(self.eps), len(self.edges))


def _since(keys: dict[str, None], start: int) -> Iterable[str]:
    return islice(keys, start, None)


def refuse_foreign(index: IndexDelta, group_id: str, event: Event, keys: Keys, mark: Mark) -> None:
    """Raise ``ForeignRowError`` if ``event`` (of ``group_id``) added a key, since ``mark``,
    whose row another group holds.

    A key seen before ``mark`` was checked when it was first added. Ownership is the locator's
    (committed rows and this transaction's writes); a row the segment itself creates is
    not in it yet, and is the group's own.
    """
    checks: tuple[tuple[str, dict[str, None], int, Callable[[str], str | None]], ...] = (
        ("entity", keys.created_ents, mark[0], index.entity_owner),
        ("entity", keys.ents, mark[1], index.entity_owner),
        ("episode", keys.eps, mark[2], index.episode_owner),
        ("edge", keys.edges, mark[3], index.edge_owner),
    )
    for table, found, start, owner_of in checks:
        for uuid in _since(found, start):
            owner = owner_of(uuid)
            if owner is not None and owner != group_id:
                raise ForeignRowError(
                    event, group_id, owner, f"writes {table} {uuid}, which group {owner!r} holds"
                )
