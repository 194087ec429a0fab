"""The vector projection: per group and field, cosine search over the embeddings of its texts.

Fields are ``entity.name``, ``entity.summary``, ``edge.fact`` and ``episode.content``
(``ops.VECTOR_FIELDS``). Each (group, field) is a ``FieldIndex``: the raw float32 vectors, a
uuid↔label map and, once the field holds ``EXACT_BELOW`` live vectors, an hnswlib graph
(cosine, M=16, ef_construction=200, grown by doubling). Searches of smaller fields are exact.

On disk, under ``root`` (``<workspace>/.lcg/vectors``), each group has a directory named by
``encode_group``. A snapshot of a group is its field files, named with the snapshot's version
(``entity.name.00000003.npy``, ``.hnsw``), and a ``meta.msgpack`` written last by atomic rename
that names them together with the group's applied ``(seq, generation)``, the embedder's
``model_id`` and ``dim``. A crash at any point leaves the previous meta and the files it
names intact; files no meta names are swept on the next save or load. A snapshot made by
another embedder (``model_id`` or ``dim``), or under other rules of which rows are embedded
(``ops.VECTOR_RULES``), is deleted on load and its group listed in ``discarded_groups``, so
the projector replays it.

Checksums (ADR 0155): the meta is sealed with a CRC-32 (``lcg.projections._checksum``) and
records each field file's CRC-32 and size, all checked on load. A group whose snapshot is
damaged — any of its files — is not loaded: it is listed in ``damaged`` with the path and the
fault and, unless ``read_only``, its directory is deleted, so with no position the projector
rebuilds it from the stream; the other groups load as they are. A snapshot written before
checksums is accepted and its next save records them.

Thread safety: one lock serialises changes, saves and searches of the whole projection.
"""

from __future__ import annotations

import hashlib
import heapq
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Final, assert_never

import msgspec
import numpy as np
import numpy.typing as npt

from lcg.errors import ProjectionError
from lcg.events import (
    Position,
    atomic_write,
    decode_group,
    encode_group,
    fsync_dir,
    remove_tree,
)
from lcg.projections._checksum import DamagedFile, describe_failure, encode_sealed, unseal
from lcg.projections._hnsw import EXACT_BELOW, FieldIndex, FieldMeta
from lcg.projections._layout import VECTORS_META_FILE
from lcg.projections._snapshots import SnapshotBook
from lcg.projections.base import Batch, Capabilities
from lcg.projections.embedding import VectorBacklog
from lcg.projections.ops import VECTOR_FIELDS, VECTOR_RULES, ClearGroup, Delete, Op, Upsert

__all__ = ["FIELDS", "META_FILE", "VectorProjection", "snapshot_identities"]

#: The searchable fields, ``"<kind>.<part>"``, sorted.
FIELDS: Final[tuple[str, ...]] = tuple(sorted(f"{k}.{p}" for k, p in VECTOR_FIELDS))
#: The snapshot meta file inside a group's directory (written last).
META_FILE: Final = VECTORS_META_FILE
_FORMAT: Final = 1

_FIELDS_OF_KIND: Final[dict[str, tuple[str, ...]]] = {
    kind: tuple(f for f in FIELDS if f.startswith(kind + ".")) for kind, _ in VECTOR_FIELDS
}

F32 = npt.NDArray[np.float32]


class _GroupMeta(msgspec.Struct, frozen=True, kw_only=True):
    """A group's snapshot: its position, its embedder and the files of each field."""

    format: int
    group_id: str
    model_id: str
    dim: int
    seq: int | None
    generation: str | None
    version: int
    fields: dict[str, FieldMeta]
    #: The ``ops.VECTOR_RULES`` the vectors were made under ("" before ADR 0223).
    rules: str = ""


_ENCODER: Final = msgspec.msgpack.Encoder()
_DECODER: Final = msgspec.msgpack.Decoder(_GroupMeta)


@dataclass
class _Group:
    fields: dict[str, FieldIndex] = field(default_factory=dict)
    seq: int | None = None
    generation: str | None = None
    #: The version of the last snapshot and the field files it names.
    version: int = 0
    saved: dict[str, FieldMeta] = field(default_factory=dict)
    dirty_fields: set[str] = field(default_factory=set)


def _prefixed(text: str) -> bytes:
    raw = text.encode()
    return len(raw).to_bytes(4, "big") + raw


def _sweep(directory: Path, metas: Mapping[str, FieldMeta]) -> None:
    """Delete every file of ``directory`` that neither the meta nor its fields name."""
    keep = {META_FILE}
    for m in metas.values():
        keep.add(m.vectors_file)
        if m.hnsw_file is not None:
            keep.add(m.hnsw_file)
    for entry in directory.iterdir():
        if entry.name not in keep and entry.is_file():
            entry.unlink()


class VectorProjection:
    """hnswlib vector indices per group and field, snapshotted with their applied position."""

    name = "vectors"
    #: Fed the embeddings of its ops' texts; lags while the embedder fails.
    capabilities = Capabilities(embeds=True)

    def __init__(
        self,
        root: Path,
        dim: int,
        model_id: str,
        *,
        exact_below: int = EXACT_BELOW,
        threads: int = -1,
        read_only: bool = False,
    ) -> None:
        """Open (creating) ``root`` and load every snapshot made by ``(model_id, dim)``.

        ``read_only`` (``lcg status``/``verify``): nothing on disk is created or deleted; a
        snapshot of another embedder is left as it is and listed in ``foreign_groups``.
        """
        if dim <= 0:
            raise ProjectionError(f"vector dimension must be positive, got {dim}")
        self.root = root
        self.dim = dim
        self.model_id = model_id
        self._book: SnapshotBook[_Group] = SnapshotBook(read_only=read_only)
        #: Groups whose snapshot was made by another embedder and was deleted on load.
        self.discarded_groups = self._book.discarded
        #: Read-only: group → the (model_id, dim, seq, generation) of a snapshot made by
        #: another embedder, kept on disk and not loaded (its vectors are not this model's).
        self.foreign_groups: dict[str, tuple[str, int, int | None, str | None]] = {}
        #: Groups whose snapshot was damaged, not loaded (deleted unless ``read_only``):
        #: group → the path and what is wrong with it.
        self.damaged = self._book.damaged
        self._read_only = read_only
        self._exact_below = exact_below
        self._threads = threads
        self._groups = self._book.states
        self._dirty = self._book.dirty
        self._suspended: set[str] = set()
        self._lock = threading.RLock()
        #: Texts whose vectors this projection still lacks, being made in the background
        #: (ADR 0201): a count for status, health and search to report.
        self.backlog = VectorBacklog()
        self._closed = False
        if not read_only:
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
        for entry in sorted(root.iterdir()) if root.is_dir() else ():
            group_id = decode_group(entry.name)
            if group_id is not None and entry.is_dir():
                self._load_group(group_id, entry)

    # -- loading --------------------------------------------------------------------------

    def _load_group(self, group_id: str, directory: Path) -> None:
        meta_path = directory / META_FILE
        if not meta_path.exists():
            # A first save that crashed before its meta: nothing of it was ever valid.
            if not self._read_only:
                remove_tree(directory)
            return
        self._book.open(
            group_id,
            partial(self._read_group, group_id, directory, meta_path),
            partial(remove_tree, directory),
        )

    def _read_group(self, group_id: str, directory: Path, meta_path: Path) -> _Group | None:
        try:
            data, verified = unseal(meta_path.read_bytes())
            meta = _DECODER.decode(data)
        except OSError as exc:
            raise DamagedFile(
                f"vector snapshot meta {meta_path} is unreadable ({exc})", content=False
            ) from exc
        except Exception as exc:  # noqa: BLE001 - whatever damaged bytes raise is damage
            raise DamagedFile(
                f"vector snapshot meta {meta_path} is damaged ({describe_failure(exc)})"
            ) from exc
        if verified and meta.format > _FORMAT:
            raise ProjectionError(
                f"vector snapshot meta {meta_path} has format {meta.format}, this lcg reads up "
                f"to {_FORMAT}: a newer lcg wrote it; run that lcg, or delete {self.root} and "
                "let this one rebuild it from the streams"
            )
        if meta.format != _FORMAT or meta.group_id != group_id:
            raise DamagedFile(
                f"vector snapshot meta {meta_path} has format {meta.format} for group "
                f"{meta.group_id!r}, expected format {_FORMAT} for {group_id!r}"
            )
        if meta.model_id != self.model_id or meta.dim != self.dim:
            if self._read_only:
                self.foreign_groups[group_id] = (meta.model_id, meta.dim, meta.seq, meta.generation)
            else:
                self._book.discard(group_id, partial(remove_tree, directory))
            return None
        if meta.rules != VECTOR_RULES:
            # Made when other rows were embedded (ADR 0223): rebuilt from the stream, its
            # texts mostly from the embedding cache.
            self._book.discard(group_id, partial(remove_tree, directory))
            return None
        unknown = set(meta.fields) - set(FIELDS)
        if unknown:
            raise DamagedFile(f"vector snapshot meta {meta_path} names fields {sorted(unknown)}")
        group = _Group(seq=meta.seq, generation=meta.generation, version=meta.version)
        for name, fmeta in meta.fields.items():
            group.fields[name], group.saved[name] = FieldIndex.load(
                directory, fmeta, self.dim, exact_below=self._exact_below, threads=self._threads
            )
        if not self._read_only:
            _sweep(directory, meta.fields)
            if not verified or group.saved != meta.fields:
                # Written before checksums: accepted once; the next save writes a sealed
                # meta with the checksums of the files as loaded (the files stay).
                self._dirty.add(group_id)
        return group

    # -- position -------------------------------------------------------------------------

    def groups(self) -> list[str]:
        """The groups this projection holds anything of (a position or vectors), sorted."""
        with self._lock:
            return self._book.names()

    def position(self, group_id: str) -> Position:
        """Where ``group_id`` stands (``Position.none`` if nothing is applied)."""
        with self._lock:
            if group_id not in self._groups and group_id in self.foreign_groups:
                _, _, seq, generation = self.foreign_groups[group_id]
                # Read-only: where the other embedder's vectors stand.
                return Position(group_id=group_id, generation=generation, seq=seq)
            return self._book.position(group_id)

    # -- changes --------------------------------------------------------------------------

    def _vector(self, text: str, vectors: Mapping[str, npt.ArrayLike]) -> F32:
        raw = vectors.get(text)
        if raw is None:
            raise ProjectionError(f"no vector was given for the text {text[:60]!r}")
        vec = np.ascontiguousarray(raw, dtype=np.float32)
        if vec.shape != (self.dim,):
            raise ProjectionError(
                f"vector for {text[:60]!r} has shape {vec.shape}, expected ({self.dim},)"
            )
        if not np.isfinite(vec).all():
            raise ProjectionError(f"vector for {text[:60]!r} has non-finite components")
        return vec

    def apply(
        self,
        group_id: str,
        generation: str,
        last_seq: int,
        ops: list[Op],
        vectors: Mapping[str, npt.ArrayLike],
    ) -> None:
        """Apply ``ops`` of ``group_id`` with the vector of each of their texts.

        Every op is checked (its group, the vector of each text) before anything changes,
        so a bad batch leaves the projection as it was. The position becomes
        ``(last_seq, generation)`` even when no op touches a vector field.
        """
        # The net change of the batch per field and uuid: a vector, or None for "remove".
        pending: dict[str, dict[str, F32 | None]] = {}
        resolved: dict[str, F32] = {}
        clear = False
        for op in ops:
            if op.group_id != group_id:
                raise ProjectionError(
                    f"an op of group {op.group_id!r} was applied to group {group_id!r}"
                )
            match op:
                case ClearGroup():
                    clear = True
                    pending.clear()
                case Upsert():
                    for part, text in op.parts.items():
                        if (op.kind, part) not in VECTOR_FIELDS:
                            continue
                        vec: F32 | None = None
                        if text and op.embed:
                            vec = resolved.get(text)
                            if vec is None:
                                vec = resolved[text] = self._vector(text, vectors)
                        pending.setdefault(f"{op.kind}.{part}", {})[op.uuid] = vec
                case Delete():
                    for name in _FIELDS_OF_KIND[op.kind]:
                        pending.setdefault(name, {})[op.uuid] = None
                case _:
                    assert_never(op)
        with self._lock:
            self._check_open()
            group = self._groups.setdefault(group_id, _Group())
            if clear:
                group.fields.clear()
            for name, changes in pending.items():
                removed = [u for u, v in changes.items() if v is None]
                added = [(u, v) for u, v in changes.items() if v is not None]
                index = group.fields.get(name)
                if index is None:
                    if not added:
                        continue
                    index = group.fields[name] = FieldIndex(
                        self.dim, exact_below=self._exact_below, threads=self._threads
                    )
                    if group_id in self._suspended:
                        index.suspend_graph()
                index.remove(removed)
                if added:
                    index.upsert([u for u, _ in added], np.stack([v for _, v in added]))
                group.dirty_fields.add(name)
            self._book.applied(group_id, group, last_seq, generation)

    def apply_batch(self, batch: Batch) -> None:
        """Apply ``batch``'s ops with its embeddings (``Projection``)."""
        self.apply(batch.group_id, batch.generation, batch.last_seq, list(batch.ops), batch.vectors)

    def begin_bulk(self, group_id: str) -> None:
        """A full replay of ``group_id`` begins: keep only raw vectors until ``end_bulk``.

        Searches of the group are exact meanwhile; a snapshot taken meanwhile has no hnswlib
        files, and loading it builds nothing until the field next changes. A group that
        already holds vectors keeps its graphs (only the graph projection was lost, say):
        rebuilding them would cost more than the few changes a replay still brings.
        """
        with self._lock:
            self._check_open()
            group = self._groups.get(group_id)
            if group is not None and any(index.count for index in group.fields.values()):
                return
            self._suspended.add(group_id)

    def end_bulk(self, group_id: str) -> None:
        """Build the hnswlib graphs of ``group_id`` once from its live vectors."""
        with self._lock:
            self._check_open()
            self._suspended.discard(group_id)
            group = self._groups.get(group_id)
            if group is None:
                return
            for name, index in group.fields.items():
                had_graph = index.has_graph
                index.resume_graph()
                if index.has_graph and not had_graph:
                    group.dirty_fields.add(name)
                    self._dirty.add(group_id)

    def reset_identity(self, model_id: str, dim: int) -> None:
        """Forget every group and take ``(model_id, dim)``: another embedder's vectors are
        not these (as on a load, ADR 0171); the projector rebuilds them from the streams."""
        if dim <= 0:
            raise ProjectionError(f"vector dimension must be positive, got {dim}")
        with self._lock:
            for group_id in list(self._groups):
                self.purge_group(group_id)
            self.model_id, self.dim = model_id, dim

    def purge_group(self, group_id: str) -> None:
        """Forget ``group_id`` entirely, in memory and on disk (its position included)."""
        with self._lock:
            self._check_open()
            self._book.drop(group_id)
            self._suspended.discard(group_id)
            directory = self.root / encode_group(group_id)
            remove_tree(directory)  # whole or gone after a crash (ADR 0156)

    # -- reads ----------------------------------------------------------------------------

    def _query(self, field_name: str, query_vec: npt.ArrayLike) -> F32 | None:
        if field_name not in FIELDS:
            raise ProjectionError(f"unknown vector field {field_name!r}; known: {list(FIELDS)}")
        q = np.ascontiguousarray(query_vec, dtype=np.float32).reshape(-1)
        if q.shape != (self.dim,):
            raise ProjectionError(f"query vector has {q.shape[0]} components, expected {self.dim}")
        norm = float(np.linalg.norm(q))
        if not np.isfinite(norm) or norm == 0.0:
            return None
        return q / np.float32(norm)

    def search(
        self,
        group_id: str,
        field: str,
        query_vec: npt.ArrayLike,
        k: int,
        *,
        ef: int | None = None,
        exact: bool = False,
    ) -> list[tuple[str, float]]:
        """The ``k`` most similar live vectors of ``field``: ``(uuid, cosine)``, best first.

        ``k`` beyond the live count returns them all; ``ef`` overrides the beam width
        (``max(64, 2k)``); ``exact`` forces the brute-force scan.
        """
        with self._lock:
            self._check_open()
            q = self._query(field, query_vec)
            group = self._groups.get(group_id)
            index = None if group is None else group.fields.get(field)
            if q is None or index is None or k <= 0:
                return []
            return index.search(q, k, ef=ef, exact=exact)

    def search_groups(
        self,
        group_ids: list[str] | None,
        field: str,
        query_vec: npt.ArrayLike,
        k: int,
        *,
        ef: int | None = None,
        exact: bool = False,
    ) -> list[tuple[str, float, str]]:
        """The ``k`` best ``(uuid, cosine, group_id)`` over ``group_ids`` (``None``: all)."""
        with self._lock:
            self._check_open()
            q = self._query(field, query_vec)
            if q is None or k <= 0:
                return []
            wanted = sorted(self._groups) if group_ids is None else list(dict.fromkeys(group_ids))
            hits: list[tuple[str, float, str]] = []
            for group_id in wanted:
                group = self._groups.get(group_id)
                index = None if group is None else group.fields.get(field)
                if index is not None:
                    hits.extend((u, s, group_id) for u, s in index.search(q, k, ef=ef, exact=exact))
            return heapq.nsmallest(k, hits, key=lambda h: (-h[1], h[2], h[0]))

    def count(self, group_id: str, field: str) -> int:
        """The number of live vectors of ``field`` in ``group_id``."""
        with self._lock:
            group = self._groups.get(group_id)
            index = None if group is None else group.fields.get(field)
            return 0 if index is None else index.count

    def get_vector(self, group_id: str, field: str, uuid: str) -> F32 | None:
        """A copy of the stored vector of ``uuid`` in ``field``, or ``None``."""
        with self._lock:
            group = self._groups.get(group_id)
            index = None if group is None else group.fields.get(field)
            return None if index is None else index.get(uuid)

    def digest(self, group_id: str) -> str:
        """sha256 over the live vectors, sorted by (field, uuid): a function of content only.

        Per non-empty field, in name order: the length-prefixed UTF-8 field name, the live
        count, each length-prefixed UTF-8 uuid in sorted order, then their vectors in that
        order as little-endian float32. Labels, deletions, empty fields and hnswlib's graph
        do not enter it.
        """
        h = hashlib.sha256(b"lcg-vectors-v2\0")
        with self._lock:
            group = self._groups.get(group_id)
            if group is None:
                return h.hexdigest()
            for name in sorted(group.fields):
                uuids, block = group.fields[name].sorted_block()
                if not uuids:
                    continue
                h.update(_prefixed(name) + len(uuids).to_bytes(8, "big"))
                h.update(b"".join(_prefixed(u) for u in uuids))
                h.update(block.astype("<f4", copy=False).tobytes())
        return h.hexdigest()

    # -- snapshot -------------------------------------------------------------------------

    def save(self) -> None:
        """Snapshot every group changed since its last save, each with its position."""
        with self._lock:
            self._check_open()
            for group_id, group in self._book.changed():
                self._save_group(group_id, group)
                self._book.saved(group_id)

    def _save_group(self, group_id: str, group: _Group) -> None:
        directory = self.root / encode_group(group_id)
        created = not directory.exists()
        directory.mkdir(mode=0o700, exist_ok=True)
        version = group.version + 1
        metas: dict[str, FieldMeta] = {}
        for name, index in sorted(group.fields.items()):
            old = group.saved.get(name)
            if old is not None and name not in group.dirty_fields:
                metas[name] = old
            else:
                metas[name] = index.save(directory, f"{name}.{version:08d}")
        meta = _GroupMeta(
            format=_FORMAT,
            group_id=group_id,
            model_id=self.model_id,
            dim=self.dim,
            seq=group.seq,
            generation=group.generation,
            version=version,
            fields=metas,
            rules=VECTOR_RULES,
        )
        atomic_write(directory / META_FILE, encode_sealed(_ENCODER, meta))
        if created:
            fsync_dir(self.root)
        _sweep(directory, metas)
        group.version = version
        group.saved = metas
        group.dirty_fields.clear()

    def close(self) -> None:
        """Save what changed and release the indices; later calls raise ``ProjectionError``."""
        with self._lock:
            if self._closed:
                return
            self.save()
            self._groups.clear()
            self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise ProjectionError("the vector projection is closed")


def snapshot_identities(root: Path) -> dict[tuple[str, int], int]:
    """How many group snapshots under ``root`` each ``(model_id, dim)`` made (unreadable
    metas are left out): the identity a workspace opens with while its embedder is away."""
    found: dict[tuple[str, int], int] = {}
    for entry in sorted(root.iterdir()) if root.is_dir() else ():
        try:
            data, _ = unseal((entry / META_FILE).read_bytes())
            meta = _DECODER.decode(data)
        except Exception:  # noqa: BLE001 - a damaged or absent meta names no identity
            continue
        key = (meta.model_id, meta.dim)
        found[key] = found.get(key, 0) + 1
    return found
