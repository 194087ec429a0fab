"""The text projection: an in-house Okapi BM25 per group and kind, snapshotted per group.

Each group holds one index per kind (``entity``, ``edge``, ``episode``; see
``lcg.projections.ops``) and the parts of every document, so an ``Upsert`` that names some
parts keeps the others. A document's indexed text is the ``TEXT_PARTS`` of its kind that it
has, in that order, joined with one space. The analyzer is ``lcg.projections._analyzer``; the
index and the exact BM25 formula are in ``lcg.projections._bm25`` (ADR 0012).

Sources: an episode that is a chunk of a source file (its ``source`` part, see
``lcg.projections.ops``) also counts toward one document of the group's *source index*: a
BM25 index whose documents are whole sources, each the sum of its chunks' terms. A change to a
chunk updates its source's term counts at once and marks the source stale; stale sources are
re-indexed together before the next source search (a snapshot saves them as stale), so
ingesting costs no re-indexing at all, and a file ingested one chunk per call costs one
re-index per search, not one per chunk (ADR 0091).

Durability: ``save()`` writes each changed group to ``<root>/<encode_group(g)>.bm25`` (write
``.tmp``, fsync, ``os.replace``, fsync the directory), data and applied position together,
sealed with a CRC-32 (``lcg.projections._checksum``), so a reopened projection is always at a
position it really reached. Opening sweeps stale temporaries and loads every snapshot. A
damaged one (its checksum fails, it is cut short, it does not decode or its parts disagree)
is not loaded: its group is listed in ``damaged`` with the path and what is wrong, and —
unless ``read_only`` — the file is deleted, so with no position the projector rebuilds the
group from its stream (ADR 0155); the other groups load as they are. A snapshot written
before checksums is accepted unverified and sealed at the next save. A snapshot of an older
format or made under another analyzer (``ANALYZER_VERSION``) is deleted on open and its group
listed in ``discarded_groups``: with no position, the projector replays it. One of a newer
format is a ``ProjectionError``: a newer lcg wrote this workspace.

All methods take one lock, so queries may run on other threads while the projector applies.
"""

from __future__ import annotations

import hashlib
import threading
from functools import partial
from pathlib import Path
from typing import Final, assert_never

import msgspec

from lcg.errors import ProjectionError
from lcg.events import (
    TEMP_SUFFIX,
    Position,
    atomic_write,
    decode_group,
    encode_group,
    fsync_dir,
)
from lcg.projections._analyzer import ANALYZER_VERSION, query_terms, term_counts
from lcg.projections._bm25 import Bm25Index
from lcg.projections._checksum import DamagedFile, describe_failure
from lcg.projections._layout import TEXT_SNAPSHOT_SUFFIX
from lcg.projections._snapshots import SnapshotBook
from lcg.projections._text_snapshot import FORMAT as _FORMAT
from lcg.projections._text_snapshot import GroupSnapshot as _GroupSnapshot
from lcg.projections._text_snapshot import KindState as _KindState
from lcg.projections._text_snapshot import encode_snapshot, read_snapshot
from lcg.projections.base import Batch, Capabilities
from lcg.projections.ops import (
    KEYS_PART,
    SOURCE_PART,
    TEXT_PARTS,
    TIME_PART,
    ClearGroup,
    Delete,
    Op,
    Upsert,
)

__all__ = ["SNAPSHOT_SUFFIX", "TextProjection", "indexed_text"]

#: Suffix of a group's snapshot file inside the projection root.
SNAPSHOT_SUFFIX: Final = TEXT_SNAPSHOT_SUFFIX
_KINDS: Final = tuple(TEXT_PARTS)
#: The parts each kind indexes: its text parts, and an episode's extraction keys after them.
_INDEXED: Final = {
    k: (*parts, KEYS_PART) if k == "episode" else parts for k, parts in TEXT_PARTS.items()
}
#: The parts each kind keeps: those, and an episode's source and reference time.
_KEPT: Final = {
    k: (*parts, KEYS_PART, SOURCE_PART, TIME_PART) if k == "episode" else parts
    for k, parts in TEXT_PARTS.items()
}


def indexed_text(kind: str, parts: dict[str, str]) -> str:
    """The text a doc of ``kind`` is indexed under: its known parts, in order, space-joined."""
    return " ".join(parts[p] for p in _INDEXED[kind] if p in parts)


class _Group:
    """One group's indexes, documents and applied position."""

    __slots__ = (
        "docs",
        "generation",
        "indexes",
        "members",
        "seq",
        "source_counts",
        "sources",
        "stale",
    )

    def __init__(self) -> None:
        self.generation: str | None = None
        self.seq: int | None = None
        self.docs: dict[str, dict[str, dict[str, str]]] = {k: {} for k in _KINDS}
        self.indexes: dict[str, Bm25Index] = {k: Bm25Index() for k in _KINDS}
        #: One document per source: the sum of its chunks' terms.
        self.sources = Bm25Index()
        #: Source -> the episodes (chunks) in it.
        self.members: dict[str, set[str]] = {}
        #: Source -> its summed term counts, for the sources changed since the group was
        #: loaded (built from the chunks on first change, then kept up to date).
        self.source_counts: dict[str, dict[str, int]] = {}
        #: Sources whose document in ``sources`` is out of date.
        self.stale: set[str] = set()

    def clear(self) -> None:
        for kind in _KINDS:
            self.docs[kind].clear()
            self.indexes[kind].clear()
        self.sources.clear()
        self.members.clear()
        self.source_counts.clear()
        self.stale.clear()

    def _counts_of(self, source: str) -> dict[str, int]:
        """The live summed term counts of ``source`` (built from its chunks once)."""
        counts = self.source_counts.get(source)
        if counts is None:
            counts = {}
            episodes = self.docs["episode"]
            for uuid in self.members.get(source, ()):
                _add_counts(counts, term_counts(indexed_text("episode", episodes[uuid])), 1)
            self.source_counts[source] = counts
        return counts

    def _leave_source(self, uuid: str, parts: dict[str, str]) -> None:
        """Take episode ``uuid`` (with its old ``parts``) out of its source, if any."""
        source = parts.get(SOURCE_PART)
        if source is None:
            return
        counts = self._counts_of(source)
        _add_counts(counts, term_counts(indexed_text("episode", parts)), -1)
        members = self.members[source]
        members.discard(uuid)
        if not members:
            del self.members[source]
            del self.source_counts[source]
        self.stale.add(source)

    def _join_source(self, uuid: str, parts: dict[str, str], counts: dict[str, int]) -> None:
        source = parts.get(SOURCE_PART)
        if source is None:
            return
        total = self._counts_of(source)  # before joining: built from the other chunks
        self.members.setdefault(source, set()).add(uuid)
        _add_counts(total, counts, 1)
        self.stale.add(source)

    def upsert(self, op: Upsert) -> None:
        docs = self.docs[op.kind]
        old = docs.get(op.uuid)
        if old is None and op.kind == "episode" and "content" not in op.parts:
            return  # keys of an episode this projection does not hold (deleted since)
        known = _KEPT[op.kind]
        new = dict(old) if old is not None else {}
        for name, text in op.parts.items():
            if name in known:
                new[name] = text
        if old is not None and new == old:
            return
        if op.kind == "episode" and old is not None:
            self._leave_source(op.uuid, old)
        docs[op.uuid] = new
        counts = term_counts(indexed_text(op.kind, new))
        self.indexes[op.kind].add(op.uuid, counts)
        if op.kind == "episode":
            self._join_source(op.uuid, new, counts)

    def delete(self, op: Delete) -> None:
        old = self.docs[op.kind].get(op.uuid)
        if old is None:
            return
        if op.kind == "episode":
            # While the doc is still there: the source's counts may be built from its chunks.
            self._leave_source(op.uuid, old)
        del self.docs[op.kind][op.uuid]
        self.indexes[op.kind].delete(op.uuid)

    def refresh_sources(self) -> bool:
        """Re-index the stale sources; whether anything changed."""
        if not self.stale:
            return False
        for source in sorted(self.stale):
            if source in self.members:
                self.sources.add(source, dict(self._counts_of(source)))
            else:
                self.sources.delete(source)
        self.stale.clear()
        # Each re-index leaves a tombstone; the usual threshold bounds them.
        self.sources.maybe_compact()
        return True

    def snapshot(self, group_id: str) -> _GroupSnapshot:
        assert self.generation is not None and self.seq is not None
        # Stale sources are saved as stale: re-indexing waits for the next source search.
        return _GroupSnapshot(
            format=_FORMAT,
            group_id=group_id,
            generation=self.generation,
            seq=self.seq,
            kinds={
                k: _KindState(parts=self.docs[k], index=self.indexes[k].snapshot()) for k in _KINDS
            },
            analyzer=ANALYZER_VERSION,
            sources=self.sources.snapshot(),
            stale_sources=sorted(self.stale),
        )

    @classmethod
    def from_snapshot(cls, snap: _GroupSnapshot) -> _Group:
        group = cls()
        group.generation = snap.generation
        group.seq = snap.seq
        for kind, state in snap.kinds.items():
            if kind not in TEXT_PARTS:
                raise ValueError(f"unknown kind {kind!r}")
            index = Bm25Index.from_snapshot(state.index)
            if len(index) != len(state.parts) or any(u not in index for u in state.parts):
                raise ValueError(f"the {kind} documents and their index disagree")
            group.docs[kind] = state.parts
            group.indexes[kind] = index
        for uuid, parts in group.docs["episode"].items():
            source = parts.get(SOURCE_PART)
            if source is not None:
                group.members.setdefault(source, set()).add(uuid)
        if snap.sources is None:
            raise ValueError("the source index is missing")
        group.sources = Bm25Index.from_snapshot(snap.sources)
        group.stale = set(snap.stale_sources)
        # Outside the stale ones, the index holds exactly the sources that have chunks.
        if any(s not in group.sources for s in group.members if s not in group.stale) or any(
            s not in group.members for s in group.sources.uuids() if s not in group.stale
        ):
            raise ValueError("the sources of the episodes and the source index disagree")
        return group


def _add_counts(total: dict[str, int], counts: dict[str, int], sign: int) -> None:
    """``total += sign * counts``, dropping terms that reach zero."""
    if sign > 0:  # the ingest path: nothing can reach zero
        get = total.get
        for term, n in counts.items():
            total[term] = get(term, 0) + n
        return
    for term, n in counts.items():
        left = total.get(term, 0) + sign * n
        if left:
            total[term] = left
        else:
            total.pop(term, None)


class TextProjection:
    """BM25 full-text search over every group's entities, edges and episodes."""

    name = "text"
    capabilities = Capabilities()

    def __init__(self, root: Path, *, read_only: bool = False) -> None:
        """Open the projection stored under ``root`` (``<workspace>/.lcg/text``).

        ``read_only`` (``lcg status``/``verify``): no file is deleted; a snapshot of an older
        format or analyzer is left on disk, not loaded, and listed in ``discarded_groups``.
        """
        self._root = root
        self._read_only = read_only
        self._book: SnapshotBook[_Group] = SnapshotBook(read_only=read_only)
        self._groups = self._book.states
        self._lock = threading.RLock()
        #: Groups being replayed in bulk: compaction waits for ``end_bulk``.
        self._bulk: set[str] = set()
        self._closed = False
        #: Groups whose snapshot was of an older format or analyzer, deleted on open.
        self.discarded_groups = self._book.discarded
        #: Groups whose snapshot was damaged, not loaded (deleted unless ``read_only``):
        #: group → the path and what is wrong with it.
        self.damaged = self._book.damaged
        if root.is_dir():
            self._load_all()

    # -- lifecycle ------------------------------------------------------------------------

    def _path(self, group_id: str) -> Path:
        return self._root / (encode_group(group_id) + SNAPSHOT_SUFFIX)

    def _load_all(self) -> None:
        for entry in sorted(self._root.iterdir()):
            name = entry.name
            if name.endswith(TEMP_SUFFIX):
                # A save that died before its rename; the previous snapshot (if any) stands.
                if not self._read_only:
                    entry.unlink(missing_ok=True)
                continue
            if not name.endswith(SNAPSHOT_SUFFIX):
                continue
            group_id = decode_group(name[: -len(SNAPSHOT_SUFFIX)])
            if group_id is None:
                continue
            self._book.open(
                group_id,
                partial(self._load, entry, group_id),
                partial(entry.unlink, missing_ok=True),
            )

    def _load(self, path: Path, group_id: str) -> _Group | None:
        """The group a snapshot holds; ``None`` if an older lcg or analyzer made it.

        ``DamagedFile`` when the file cannot be trusted; ``ProjectionError`` when a newer lcg
        wrote it (the whole workspace is then of that lcg).
        """
        snap, verified = read_snapshot(path, group_id, ANALYZER_VERSION)
        if snap is None:
            # Made by an older lcg or analyzer: its terms are not this analyzer's. With no
            # position the projector replays the group.
            self._book.discard(group_id, path.unlink)
            return None
        try:
            group = _Group.from_snapshot(snap)
        except Exception as exc:  # noqa: BLE001 - inconsistent parts are damage too
            raise DamagedFile(f"text snapshot {path} is damaged ({describe_failure(exc)})") from exc
        if not verified and not self._read_only:
            self._book.dirty.add(group_id)  # written before checksums: sealed by the next save
        return group

    def _check_open(self) -> None:
        if self._closed:
            raise ProjectionError("the text projection is closed")

    def save(self) -> None:
        """Snapshot every changed group atomically, each with its applied position."""
        with self._lock:
            self._check_open()
            dirty = self._book.changed()
            if not dirty:
                return
            self._root.mkdir(mode=0o700, parents=True, exist_ok=True)
            for group_id, group in dirty:
                path = self._path(group_id)
                data = encode_snapshot(group.snapshot(group_id))
                try:
                    # One directory fsync below covers every group's rename.
                    atomic_write(path, data, sync_dir=False)
                except OSError as exc:
                    raise ProjectionError(f"cannot write text snapshot {path}: {exc}") from exc
                self._book.saved(group_id)
            fsync_dir(self._root)

    def close(self) -> None:
        """Save what changed and release the projection; later calls raise."""
        with self._lock:
            if self._closed:
                return
            self.save()
            self._groups.clear()
            self._closed = True

    # -- writes ---------------------------------------------------------------------------

    def position(self, group_id: str) -> Position:
        """Where ``group_id`` stands (``Position.none`` if unknown)."""
        with self._lock:
            self._check_open()
            return self._book.position(group_id)

    def apply(self, group_id: str, generation: str, last_seq: int, ops: list[Op]) -> None:
        """Apply ``ops`` (all of ``group_id``) and set the group's position to ``last_seq``.

        Ops of another group raise ``ProjectionError`` before anything changes. Compaction of
        indexes with many tombstones runs inline, after the ops.
        """
        with self._lock:
            self._check_open()
            for op in ops:
                if op.group_id != group_id:
                    raise ProjectionError(
                        f"op for group {op.group_id!r} in a batch of group {group_id!r}"
                    )
            group = self._groups.get(group_id)
            if group is None:
                encode_group(group_id)  # refuse ids that could never be saved, now
                group = self._groups[group_id] = _Group()
            for op in ops:
                match op:
                    case Upsert():
                        group.upsert(op)
                    case Delete():
                        group.delete(op)
                    case ClearGroup():
                        group.clear()
                    case _:
                        assert_never(op)
            if group_id not in self._bulk:
                for index in group.indexes.values():
                    index.maybe_compact()
            self._book.applied(group_id, group, last_seq, generation)

    def apply_batch(self, batch: Batch) -> None:
        """Apply ``batch``'s ops (``Projection``)."""
        self.apply(batch.group_id, batch.generation, batch.last_seq, list(batch.ops))

    def begin_bulk(self, group_id: str) -> None:
        """A full replay of ``group_id`` begins: no compaction until ``end_bulk``.

        Tombstones pile up meanwhile (a replay revises summaries and facts many times); one
        compaction at the end replaces the dozens the threshold would run on the way.
        """
        with self._lock:
            self._check_open()
            self._bulk.add(group_id)

    def end_bulk(self, group_id: str) -> None:
        """Compact ``group_id``'s indexes that passed the threshold; compaction resumes."""
        with self._lock:
            self._check_open()
            self._bulk.discard(group_id)
            group = self._groups.get(group_id)
            if group is None:
                return
            for index in (*group.indexes.values(), group.sources):
                if index.maybe_compact():
                    self._book.dirty.add(group_id)

    def purge_group(self, group_id: str) -> None:
        """Drop the group's data, position and snapshot file."""
        with self._lock:
            self._check_open()
            self._book.drop(group_id)
            self._bulk.discard(group_id)
            path = self._path(group_id)
            try:
                path.unlink()
            except FileNotFoundError:
                return
            except OSError as exc:
                raise ProjectionError(f"cannot remove text snapshot {path}: {exc}") from exc
            fsync_dir(self._root)

    # -- reads ----------------------------------------------------------------------------

    def groups(self) -> list[str]:
        """The groups this projection holds, sorted."""
        with self._lock:
            self._check_open()
            return self._book.names()

    def doc_count(self, group_id: str, kind: str) -> int:
        """Live documents of ``kind`` in ``group_id`` (0 for an unknown group)."""
        with self._lock:
            self._check_open()
            group = self._groups.get(group_id)
            return 0 if group is None else len(group.docs[_check_kind(kind)])

    def search(self, group_id: str, kind: str, query: str, k: int) -> list[tuple[str, float]]:
        """The ``k`` best ``(uuid, score)`` of ``kind`` for ``query``; best first, ties uuid asc.

        An unknown group, a query with no indexable term, or no match gives ``[]``.
        """
        _check_kind(kind)
        terms = query_terms(query)
        with self._lock:
            self._check_open()
            group = self._groups.get(group_id)
            if group is None or not terms:
                return []
            return group.indexes[kind].search(terms, k)

    def search_groups(
        self, group_ids: list[str] | None, kind: str, query: str, k: int
    ) -> list[tuple[str, float, str]]:
        """The ``k`` best ``(uuid, score, group_id)`` over ``group_ids`` (``None``: all).

        Each group scores with its own statistics; ties break by uuid, then group id.
        """
        _check_kind(kind)
        terms = query_terms(query)
        with self._lock:
            self._check_open()
            if not terms or k <= 0:
                return []
            names = sorted(self._groups) if group_ids is None else sorted(set(group_ids))
            hits: list[tuple[str, float, str]] = []
            for g in names:
                group = self._groups.get(g)
                if group is not None:
                    hits.extend((u, s, g) for u, s in group.indexes[kind].search(terms, k))
        hits.sort(key=lambda h: (-h[1], h[0], h[2]))
        return hits[:k]

    def search_sources(
        self, group_ids: list[str] | None, query: str, k: int
    ) -> list[tuple[str, float, str]]:
        """The ``k`` best sources ``(source, score, group_id)`` for ``query`` (``None``: all).

        A source is scored as one document: the text of all its chunks. Ties break by source,
        then group id.
        """
        terms = query_terms(query)
        with self._lock:
            self._check_open()
            if not terms or k <= 0:
                return []
            names = sorted(self._groups) if group_ids is None else sorted(set(group_ids))
            hits: list[tuple[str, float, str]] = []
            for g in names:
                group = self._groups.get(g)
                if group is not None:
                    if group.refresh_sources():
                        self._book.dirty.add(g)
                    hits.extend((src, sc, g) for src, sc in group.sources.search(terms, k))
        hits.sort(key=lambda h: (-h[1], h[0], h[2]))
        return hits[:k]

    def sources_of(self, group_id: str, uuids: list[str]) -> dict[str, str]:
        """The source of each of ``uuids`` (episodes of ``group_id``) that has one."""
        return self._episode_part(group_id, uuids, SOURCE_PART)

    def times_of(self, group_id: str, uuids: list[str]) -> dict[str, str]:
        """The reference time (RFC 3339) of each of ``uuids`` (episodes of ``group_id``)."""
        return self._episode_part(group_id, uuids, TIME_PART)

    def keys_of(self, group_id: str, uuids: list[str]) -> dict[str, str]:
        """The extraction keys (names and facts, one per line) of each of ``uuids`` (episodes
        of ``group_id``) that has them."""
        return self._episode_part(group_id, uuids, KEYS_PART)

    def _episode_part(self, group_id: str, uuids: list[str], part: str) -> dict[str, str]:
        with self._lock:
            self._check_open()
            group = self._groups.get(group_id)
            if group is None:
                return {}
            docs = group.docs["episode"]
            out: dict[str, str] = {}
            for uuid in uuids:
                parts = docs.get(uuid)
                value = None if parts is None else parts.get(part)
                if value is not None:
                    out[uuid] = value
            return out

    def members_of(self, group_id: str, source: str) -> list[str]:
        """The episodes of ``source`` in ``group_id``, sorted (``[]`` if unknown)."""
        with self._lock:
            self._check_open()
            group = self._groups.get(group_id)
            if group is None:
                return []
            return sorted(group.members.get(source, ()))

    def digest(self, group_id: str) -> str:
        """sha256 (hex) over the group's sorted ``(kind, uuid, indexed text)``; history-free."""
        with self._lock:
            self._check_open()
            h = hashlib.sha256()
            group = self._groups.get(group_id)
            if group is not None:
                for kind in sorted(_KINDS):
                    docs = group.docs[kind]
                    for uuid in sorted(docs):
                        h.update(msgspec.json.encode((kind, uuid, indexed_text(kind, docs[uuid]))))
                        h.update(b"\n")
            return h.hexdigest()


def _check_kind(kind: str) -> str:
    if kind not in TEXT_PARTS:
        raise ProjectionError(f"unknown text kind {kind!r}; expected one of {sorted(TEXT_PARTS)}")
    return kind
