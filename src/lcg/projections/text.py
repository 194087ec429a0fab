"""The text projection: an in-house Okapi BM25 per group and kind, snapshotted per group.

Each group holds one index per kind (``entity``, ``edge``, ``episode``; see
``lcg.projections.ops``) and the parts of every document, so an ``Upsert`` that names some
parts keeps the others. A document's indexed text is the ``TEXT_PARTS`` of its kind that it
has, in that order, joined with one space. The analyzer is ``lcg.projections._analyzer``; the
index and the exact BM25 formula are in ``lcg.projections._bm25`` (ADR 0012).

Durability: ``save()`` writes each changed group to ``<root>/<encode_group(g)>.bm25`` (write
``.tmp``, fsync, ``os.replace``, fsync the directory), data and applied position together, so
a reopened projection is always at a position it really reached. Opening sweeps stale
temporaries and loads every snapshot; an unreadable snapshot is a ``ProjectionError`` naming
the file (remedy: delete it and replay the group).

All methods take one lock, so queries may run on other threads while the projector applies.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from pathlib import Path
from typing import Final

import msgspec

from lcg.errors import ProjectionError
from lcg.events.groups import decode_group, encode_group
from lcg.events.layout import TEMP_SUFFIX, TEXT_SNAPSHOT_SUFFIX
from lcg.projections._analyzer import query_terms, term_counts
from lcg.projections._bm25 import Bm25Index, IndexSnapshot
from lcg.projections.ops import TEXT_PARTS, ClearGroup, Delete, Op, Upsert

__all__ = ["SNAPSHOT_SUFFIX", "TextProjection", "indexed_text"]

#: Suffix of a group's snapshot file inside the projection root.
# Belongs in lcg.events.layout with the other on-disk names (requested there).
SNAPSHOT_SUFFIX: Final = TEXT_SNAPSHOT_SUFFIX
_FORMAT: Final = 1
_KINDS: Final = tuple(TEXT_PARTS)


class _KindState(msgspec.Struct, kw_only=True):
    """The snapshot of one kind: each doc's parts and the index over them."""

    parts: dict[str, dict[str, str]]
    index: IndexSnapshot


class _GroupSnapshot(msgspec.Struct, kw_only=True):
    """The snapshot file of one group: its applied position and every kind's state."""

    format: int
    group_id: str
    generation: str
    seq: int
    kinds: dict[str, _KindState]


_ENCODER: Final = msgspec.msgpack.Encoder()
_DECODER: Final = msgspec.msgpack.Decoder(_GroupSnapshot)


def indexed_text(kind: str, parts: dict[str, str]) -> str:
    """The text a doc of ``kind`` is indexed under: its known parts, in order, space-joined."""
    return " ".join(parts[p] for p in TEXT_PARTS[kind] if p in parts)


class _Group:
    """One group's indexes, documents and applied position."""

    __slots__ = ("dirty", "docs", "generation", "indexes", "seq")

    def __init__(self) -> None:
        self.generation: str | None = None
        self.seq: int | None = None
        self.docs: dict[str, dict[str, dict[str, str]]] = {k: {} for k in _KINDS}
        self.indexes: dict[str, Bm25Index] = {k: Bm25Index() for k in _KINDS}
        self.dirty = True

    def clear(self) -> None:
        for kind in _KINDS:
            self.docs[kind].clear()
            self.indexes[kind].clear()

    def upsert(self, op: Upsert) -> None:
        docs = self.docs[op.kind]
        old = docs.get(op.uuid)
        known = TEXT_PARTS[op.kind]
        new = dict(old) if old is not None else {}
        for name, text in op.parts.items():
            if name in known:
                new[name] = text
        if old is not None and new == old:
            return
        docs[op.uuid] = new
        self.indexes[op.kind].add(op.uuid, term_counts(indexed_text(op.kind, new)))

    def delete(self, op: Delete) -> None:
        if self.docs[op.kind].pop(op.uuid, None) is not None:
            self.indexes[op.kind].delete(op.uuid)

    def snapshot(self, group_id: str) -> _GroupSnapshot:
        assert self.generation is not None and self.seq is not None
        return _GroupSnapshot(
            format=_FORMAT,
            group_id=group_id,
            generation=self.generation,
            seq=self.seq,
            kinds={
                k: _KindState(parts=self.docs[k], index=self.indexes[k].snapshot()) for k in _KINDS
            },
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
        group.dirty = False
        return group


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class TextProjection:
    """BM25 full-text search over every group's entities, edges and episodes."""

    def __init__(self, root: Path) -> None:
        """Open the projection stored under ``root`` (``<workspace>/.lcg/text``)."""
        self._root = root
        self._groups: dict[str, _Group] = {}
        self._lock = threading.RLock()
        #: Groups being replayed in bulk: compaction waits for ``end_bulk``.
        self._bulk: set[str] = set()
        self._closed = False
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
                entry.unlink(missing_ok=True)
                continue
            if not name.endswith(SNAPSHOT_SUFFIX):
                continue
            group_id = decode_group(name[: -len(SNAPSHOT_SUFFIX)])
            if group_id is None:
                continue
            self._groups[group_id] = self._load(entry, group_id)

    def _load(self, path: Path, group_id: str) -> _Group:
        try:
            snap = _DECODER.decode(path.read_bytes())
            if snap.format != _FORMAT:
                raise ValueError(f"format {snap.format}, this lcg reads {_FORMAT}")
            if snap.group_id != group_id:
                raise ValueError(f"it holds group {snap.group_id!r}")
            return _Group.from_snapshot(snap)
        except (OSError, ValueError, msgspec.DecodeError) as exc:
            raise ProjectionError(
                f"text snapshot {path} is unreadable ({exc}); delete it and replay group "
                f"{group_id!r} (`lcg replay --group {group_id}`)"
            ) from exc

    def _check_open(self) -> None:
        if self._closed:
            raise ProjectionError("the text projection is closed")

    def save(self) -> None:
        """Snapshot every changed group atomically, each with its applied position."""
        with self._lock:
            self._check_open()
            dirty = [(g, grp) for g, grp in self._groups.items() if grp.dirty]
            if not dirty:
                return
            self._root.mkdir(parents=True, exist_ok=True)
            for group_id, group in dirty:
                path = self._path(group_id)
                tmp = path.with_name(path.name + TEMP_SUFFIX)
                data = _ENCODER.encode(group.snapshot(group_id))
                try:
                    with open(tmp, "wb") as fh:
                        fh.write(data)
                        fh.flush()
                        os.fsync(fh.fileno())
                    os.replace(tmp, path)
                except OSError as exc:
                    with contextlib.suppress(OSError):
                        tmp.unlink()
                    raise ProjectionError(f"cannot write text snapshot {path}: {exc}") from exc
                group.dirty = False
            _fsync_dir(self._root)

    def close(self) -> None:
        """Save what changed and release the projection; later calls raise."""
        with self._lock:
            if self._closed:
                return
            self.save()
            self._groups.clear()
            self._closed = True

    # -- writes ---------------------------------------------------------------------------

    def position(self, group_id: str) -> tuple[int | None, str | None]:
        """``(applied seq, generation)`` of ``group_id``, or ``(None, None)`` if unknown."""
        with self._lock:
            self._check_open()
            group = self._groups.get(group_id)
            if group is None:
                return (None, None)
            return (group.seq, group.generation)

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
                if isinstance(op, Upsert):
                    group.upsert(op)
                elif isinstance(op, Delete):
                    group.delete(op)
                elif isinstance(op, ClearGroup):
                    group.clear()
            if group_id not in self._bulk:
                for index in group.indexes.values():
                    index.maybe_compact()
            group.generation = generation
            group.seq = last_seq
            group.dirty = True

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
            for index in group.indexes.values():
                if index.maybe_compact():
                    group.dirty = True

    def purge_group(self, group_id: str) -> None:
        """Drop the group's data, position and snapshot file."""
        with self._lock:
            self._check_open()
            self._groups.pop(group_id, None)
            self._bulk.discard(group_id)
            path = self._path(group_id)
            try:
                path.unlink()
            except FileNotFoundError:
                return
            except OSError as exc:
                raise ProjectionError(f"cannot remove text snapshot {path}: {exc}") from exc
            _fsync_dir(self._root)

    # -- reads ----------------------------------------------------------------------------

    def groups(self) -> list[str]:
        """The groups this projection holds, sorted."""
        with self._lock:
            self._check_open()
            return sorted(self._groups)

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
