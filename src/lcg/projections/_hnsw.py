"""The vectors of one (group, field): raw rows by label, a uuid↔label map, an hnswlib graph.

Labels are dense ints owned by this module, indexes into the raw arrays and hnswlib's labels.
The hnswlib graph is built only once the field holds ``exact_below`` live vectors: below that
an exact numpy scan is as fast as a graph search and gives exact results, and small groups
(the common case) never pay hnswlib's insertion cost.

Once the graph exists it holds every live label and some *dead* ones. hnswlib can replace a
point in place, but it does so by repairing the neighbourhood around it, measured at about
7x the cost of an insert (``test_replace_cost`` in ``bench/test_vectors_bench.py``). So a
changed vector retires its old label (``mark_deleted``: it stays in the graph as a
navigation point, dead) and is inserted under a free label; a removed vector's label is
retired the same way. When a change would leave more dead labels than live ones, the graph
is built anew from the live vectors instead (the batch's vectors change in place, every dead
label becomes free). A changed vector thus costs one insert plus,
amortised, at most one more (the rebuild), and the arrays and the graph stay within about
twice the live count. Free labels are never in the graph: reusing one is a plain insert.

``suspend_graph`` drops the graph and keeps only the raw rows (searches are exact) until
``resume_graph`` builds it once from the final vectors: a full replay inserts each live
vector once instead of replaying every revision into hnswlib.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import hnswlib
import msgspec
import numpy as np
import numpy.typing as npt

from lcg.errors import ProjectionError
from lcg.events import atomic_file
from lcg.projections._checksum import DamagedFile, describe_failure, file_crc

__all__ = [
    "EF_CONSTRUCTION",
    "EXACT_BELOW",
    "HNSW_M",
    "FieldIndex",
    "FieldMeta",
    "default_ef",
]

F32 = npt.NDArray[np.float32]

#: hnswlib graph degree.
HNSW_M: Final = 16
#: hnswlib construction beam width.
EF_CONSTRUCTION: Final = 200
#: Below this many live vectors a field is searched exactly (and has no hnswlib graph yet).
EXACT_BELOW: Final = 2000
#: hnswlib's level generator seed, fixed so that single-threaded builds are repeatable.
_SEED: Final = 100
_MIN_CAPACITY: Final = 64


def default_ef(k: int) -> int:
    """The query beam width used for ``k`` results: ``max(64, 2k)``."""
    return max(64, 2 * k)


class FieldMeta(msgspec.Struct, frozen=True, kw_only=True):
    """What a snapshot records of one field: the uuid of each label and its files."""

    #: The uuid held by each label, ``""`` for a free label.
    uuids: list[str]
    #: The ``.npy`` file of the raw rows, one per label (relative to the group directory).
    vectors_file: str
    #: The hnswlib index file, or ``None`` while the field is searched exactly.
    hnsw_file: str | None
    #: The size of ``hnsw_file`` in bytes: hnswlib does not check a truncated file itself.
    hnsw_bytes: int = 0
    #: CRC-32 and size of ``vectors_file``, CRC-32 of ``hnsw_file`` (``None``: written before
    #: checksums, ADR 0155), checked before numpy or hnswlib reads the file.
    vectors_crc: int | None = None
    vectors_bytes: int = 0
    hnsw_crc: int | None = None


class FieldIndex:
    """The live vectors of one (group, field), searchable by cosine similarity."""

    def __init__(self, dim: int, *, exact_below: int = EXACT_BELOW, threads: int = -1) -> None:
        """An empty field of ``dim``-dimensional vectors."""
        self.dim = dim
        self._exact_below = exact_below
        self._threads = threads
        self._vecs: F32 = np.zeros((0, dim), dtype=np.float32)
        self._norms: F32 = np.zeros(0, dtype=np.float32)
        self._live: npt.NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)
        self._uuids: list[str] = []
        self._labels: dict[str, int] = {}
        #: Labels in no graph, for reuse. ``_dead``: retired labels still in the graph.
        self._free: list[int] = []
        self._dead: list[int] = []
        self._n_slots = 0
        self._hnsw: hnswlib.Index | None = None
        self._suspended = False

    # -- state ----------------------------------------------------------------------------

    @property
    def count(self) -> int:
        """The number of live vectors."""
        return len(self._labels)

    @property
    def suspended(self) -> bool:
        """Whether graph upkeep is suspended (``suspend_graph``)."""
        return self._suspended

    @property
    def has_graph(self) -> bool:
        """Whether the hnswlib graph exists (the field reached ``exact_below`` once)."""
        return self._hnsw is not None

    def get(self, uuid: str) -> F32 | None:
        """A copy of the vector of ``uuid``, or ``None``."""
        label = self._labels.get(uuid)
        return None if label is None else self._vecs[label].copy()

    def sorted_block(self) -> tuple[list[str], F32]:
        """The live uuids, sorted, and their vectors as one ``(count, dim)`` array."""
        uuids = sorted(self._labels)
        labels = np.fromiter((self._labels[u] for u in uuids), dtype=np.int64, count=len(uuids))
        return uuids, self._vecs[labels]

    # -- changes --------------------------------------------------------------------------

    def remove(self, uuids: list[str]) -> None:
        """Remove the vectors of ``uuids`` (unknown uuids are ignored)."""
        for uuid in uuids:
            label = self._labels.pop(uuid, None)
            if label is not None:
                self._retire(label)
        if self._hnsw is not None and len(self._dead) > self.count:
            if self.count >= self._exact_below:
                self._build_graph()
            else:
                self._drop_graph()

    def _retire(self, label: int) -> None:
        self._uuids[label] = ""
        self._live[label] = False
        if self._hnsw is not None:
            self._hnsw.mark_deleted(label)
            self._dead.append(label)
        else:
            self._free.append(label)

    def upsert(self, uuids: list[str], vecs: F32) -> None:
        """Set the vectors of distinct ``uuids`` to the rows of ``vecs`` (add or replace)."""
        if not uuids:
            return
        if self._hnsw is not None:
            replaced = sum(1 for u in uuids if u in self._labels)
            if len(self._dead) + replaced > self.count:
                # The graph would be rebuilt after these inserts anyway: drop it first, so
                # the vectors change in place and the rebuild below inserts each once.
                self._drop_graph()
        labels = np.empty(len(uuids), dtype=np.int64)
        for i, uuid in enumerate(uuids):
            label = self._labels.get(uuid)
            if label is not None and self._hnsw is not None:
                self._retire(label)  # a new label: an insert, not an in-place repair
                label = None
            if label is None:
                label = self._alloc()
                self._labels[uuid] = label
                self._uuids[label] = uuid
                self._live[label] = True
            labels[i] = label
        self._vecs[labels] = vecs
        self._norms[labels] = np.linalg.norm(vecs, axis=1)
        if self._suspended:
            return
        if self._hnsw is not None:
            self._add_to_graph(vecs, labels)
        elif self.count >= self._exact_below:
            self._build_graph()

    def suspend_graph(self) -> None:
        """Stop maintaining the hnswlib graph (and drop it): searches are exact meanwhile."""
        self._suspended = True
        self._drop_graph()

    def resume_graph(self) -> None:
        """Maintain the graph again, building it from the live vectors if they are enough."""
        self._suspended = False
        if self._hnsw is None and self.count >= self._exact_below:
            self._build_graph()

    def _drop_graph(self) -> None:
        self._hnsw = None
        self._free.extend(self._dead)
        self._dead = []

    def _alloc(self) -> int:
        if self._free:
            return self._free.pop()
        if self._n_slots == len(self._uuids):
            self._grow(max(_MIN_CAPACITY, 2 * len(self._uuids)))
        label = self._n_slots
        self._n_slots += 1
        return label

    def _grow(self, capacity: int) -> None:
        old = len(self._uuids)
        vecs = np.zeros((capacity, self.dim), dtype=np.float32)
        vecs[:old] = self._vecs
        norms = np.zeros(capacity, dtype=np.float32)
        norms[:old] = self._norms
        live = np.zeros(capacity, dtype=np.bool_)
        live[:old] = self._live
        self._vecs, self._norms, self._live = vecs, norms, live
        self._uuids.extend([""] * (capacity - old))
        if self._hnsw is not None:
            self._hnsw.resize_index(capacity)

    def _add_to_graph(self, vecs: F32, labels: npt.NDArray[np.int64]) -> None:
        assert self._hnsw is not None
        try:
            self._hnsw.add_items(vecs, labels, num_threads=self._threads)
        except RuntimeError as exc:  # hnswlib reports every failure as RuntimeError
            raise ProjectionError(f"hnswlib refused to add vectors: {exc}") from exc

    def _build_graph(self) -> None:
        index = hnswlib.Index(space="cosine", dim=self.dim)
        index.init_index(
            max_elements=len(self._uuids),
            ef_construction=EF_CONSTRUCTION,
            M=HNSW_M,
            random_seed=_SEED,
        )
        self._drop_graph()  # the new graph holds only live labels: the dead become free
        self._hnsw = index
        labels = np.flatnonzero(self._live[: self._n_slots]).astype(np.int64)
        self._add_to_graph(self._vecs[labels], labels)

    # -- search ---------------------------------------------------------------------------

    def search(
        self, query: F32, k: int, *, ef: int | None = None, exact: bool = False
    ) -> list[tuple[str, float]]:
        """The ``k`` nearest live vectors to the unit vector ``query``: ``(uuid, cosine)``."""
        k = min(k, self.count)
        if k <= 0:
            return []
        if exact or self._hnsw is None or self.count < self._exact_below:
            return self._exact(query, k)
        self._hnsw.set_ef(max(ef if ef is not None else default_ef(k), k))
        try:
            labels, dists = self._hnsw.knn_query(query, k=k, num_threads=1)
        except RuntimeError:
            # hnswlib raises when its beam met fewer than k live points (many deletions
            # near the query); the exact scan always can answer.
            return self._exact(query, k)
        return [
            (self._uuids[int(lab)], 1.0 - float(d))
            for lab, d in zip(labels[0], dists[0], strict=True)
        ]

    def _exact(self, query: F32, k: int) -> list[tuple[str, float]]:
        n = self._n_slots
        norms = np.maximum(self._norms[:n], np.float32(1e-30))
        sims = (self._vecs[:n] @ query) / norms
        sims[~self._live[:n]] = -np.inf
        if k < n:
            # argpartition of the negated scores: the (-x, k) form is fast on numpy 2.x.
            top = np.argpartition(-sims, k - 1)[:k]
        else:
            top = np.arange(n)
        # Best first; equal scores by label, so the order is a function of the state.
        order = top[np.lexsort((top, -sims[top]))][:k]
        return [(self._uuids[int(i)], float(sims[i])) for i in order]

    # -- snapshot -------------------------------------------------------------------------

    def save(self, directory: Path, stem: str) -> FieldMeta:
        """Write this field's files as ``<stem>.npy`` (and ``<stem>.hnsw``), fsynced."""
        vectors_file = f"{stem}.npy"
        # The meta written after the field files fsyncs the directory for all of them. Each
        # file's checksum is read back from what was written (the page cache holds it).
        with atomic_file(directory / vectors_file, sync_dir=False) as tmp:
            with open(tmp, "wb") as fh:
                np.save(fh, self._vecs[: self._n_slots], allow_pickle=False)
            vectors_crc, vectors_bytes = file_crc(tmp)
        hnsw_file: str | None = None
        hnsw_bytes = 0
        hnsw_crc: int | None = None
        if self._hnsw is not None:
            hnsw_file = f"{stem}.hnsw"
            with atomic_file(directory / hnsw_file, sync_dir=False) as tmp:
                try:
                    self._hnsw.save_index(str(tmp))
                except RuntimeError as exc:
                    raise ProjectionError(f"hnswlib could not save {tmp}: {exc}") from exc
                hnsw_crc, hnsw_bytes = file_crc(tmp)
        return FieldMeta(
            uuids=self._uuids[: self._n_slots],
            vectors_file=vectors_file,
            hnsw_file=hnsw_file,
            hnsw_bytes=hnsw_bytes,
            vectors_crc=vectors_crc,
            vectors_bytes=vectors_bytes,
            hnsw_crc=hnsw_crc,
        )

    @classmethod
    def load(
        cls,
        directory: Path,
        meta: FieldMeta,
        dim: int,
        *,
        exact_below: int = EXACT_BELOW,
        threads: int = -1,
    ) -> tuple[FieldIndex, FieldMeta]:
        """The field a snapshot describes, and its meta with the files' checksums filled in.

        A file whose checksum or size differs from the meta's, or that numpy or hnswlib
        cannot read, or whose contents disagree with the meta, is ``DamagedFile``. Files
        written before checksums are checked as far as their structure allows and accepted;
        the returned meta records their checksums as found (``vectors_crc`` was ``None``).
        """
        path = directory / meta.vectors_file
        vectors_crc, vectors_bytes = _checked(
            path, "vector snapshot", meta.vectors_crc, meta.vectors_bytes
        )
        try:
            raw = np.load(path, allow_pickle=False)
        except Exception as exc:  # noqa: BLE001 - numpy's every failure on bad bytes is damage
            raise DamagedFile(
                f"vector snapshot {path} is unreadable ({describe_failure(exc)})"
            ) from exc
        n = len(meta.uuids)
        if raw.dtype != np.float32 or raw.shape != (n, dim):
            raise DamagedFile(
                f"vector snapshot {path} holds {raw.dtype} {raw.shape}, expected float32 "
                f"({n}, {dim})"
            )
        field = cls(dim, exact_below=exact_below, threads=threads)
        capacity = max(_MIN_CAPACITY, n)
        field._grow(capacity)
        field._vecs[:n] = raw
        field._norms[:n] = np.linalg.norm(raw, axis=1)
        field._n_slots = n
        for label, uuid in enumerate(meta.uuids):
            if uuid:
                field._labels[uuid] = label
                field._uuids[label] = uuid
                field._live[label] = True
            else:
                field._free.append(label)
        if len(field._labels) != n - len(field._free):
            raise DamagedFile(f"the vector snapshot meta of {path} repeats a uuid")
        # Pop the lowest free label first, as a fresh field would.
        field._free.reverse()
        hnsw_crc = None
        if meta.hnsw_file is not None:
            hnsw_crc = field._load_graph(directory / meta.hnsw_file, meta, capacity)
        checked = msgspec.structs.replace(
            meta, vectors_crc=vectors_crc, vectors_bytes=vectors_bytes, hnsw_crc=hnsw_crc
        )
        return field, checked

    def _load_graph(self, path: Path, meta: FieldMeta, capacity: int) -> int:
        """Load the hnswlib graph at ``path`` (checked first); its CRC-32."""
        crc, _ = _checked(path, "hnswlib index", meta.hnsw_crc, meta.hnsw_bytes)
        index = hnswlib.Index(space="cosine", dim=self.dim)
        try:
            index.load_index(str(path), max_elements=capacity)
            in_graph = set(index.get_ids_list())
        except Exception as exc:  # noqa: BLE001 - hnswlib raises RuntimeError, IndexError, ...
            raise DamagedFile(
                f"hnswlib index {path} is unreadable ({describe_failure(exc)})"
            ) from exc
        n = len(meta.uuids)
        if index.element_count > n:
            raise DamagedFile(
                f"hnswlib index {path} holds {index.element_count} labels, the snapshot {n}"
            )
        if not in_graph.issuperset(self._labels.values()):
            raise DamagedFile(f"hnswlib index {path} lacks labels the snapshot holds live")
        self._hnsw = index
        self._dead = [label for label in self._free if label in in_graph]
        self._free = [label for label in self._free if label not in in_graph]
        return crc


def _checked(path: Path, what: str, crc: int | None, size: int) -> tuple[int, int]:
    """``(CRC-32, size)`` of ``path``; ``DamagedFile`` unless both are as recorded.

    ``crc`` ``None`` (written before checksums): only a recorded non-zero ``size`` is checked.
    """
    try:
        actual_crc, actual_size = file_crc(path)
    except FileNotFoundError as exc:
        raise DamagedFile(f"{what} {path} is missing") from exc
    except OSError as exc:
        raise DamagedFile(f"{what} {path} is unreadable ({exc})", content=False) from exc
    if (crc is not None or size) and actual_size != size:
        raise DamagedFile(f"{what} {path} has {actual_size} bytes, the snapshot recorded {size}")
    if crc is not None and actual_crc != crc:
        raise DamagedFile(
            f"{what} {path} is damaged (its CRC-32 is {actual_crc:08x}, {crc:08x} recorded)"
        )
    return actual_crc, actual_size
