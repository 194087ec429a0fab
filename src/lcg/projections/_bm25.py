"""One Okapi BM25 index (one kind of one group): postings on pyroaring, scoring with numpy.

Layout:

* documents get dense int ids in the order they are added; ``_uuids[id]`` maps back;
* each term has a ``_Postings``: a ``BitMap`` of the ids holding it and ``tfs``, the term's
  frequency in each of those docs, in ascending id order. Ids only ever grow, so adding a doc
  appends to every array it touches and the two stay aligned without sorting;
* replacing a doc is a delete plus an add under a new id; a delete only sets the id in the
  ``_tomb`` bitmap (postings are left alone, queries mask it out, ``df`` subtracts it);
* ``compact()`` renumbers the live docs densely and rewrites the postings without tombstoned
  ids; ``maybe_compact()`` runs it once tombstones reach ``COMPACT_FRACTION`` of the ids.

Scoring, for a query's distinct terms ``t`` present in the index (``N`` live docs, ``df(t)``
live docs holding ``t``, ``tf`` its frequency in the doc, ``dl`` the doc's term count,
``avgdl`` the mean ``dl`` over live docs)::

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(d, q) = sum over t of idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

with ``k1 = 1.2`` and ``b = 0.75``. Every term of a matching doc adds a strictly positive
amount, so the docs with a positive score are exactly the live docs holding a query term.
"""

from __future__ import annotations

import math
from array import array
from typing import Final, cast

import msgspec
import numpy as np
import numpy.typing as npt
from pyroaring import BitMap

__all__ = [
    "B",
    "COMPACT_FRACTION",
    "COMPACT_MIN",
    "K1",
    "PRUNE_MIN_LEFT",
    "Bm25Index",
    "IndexSnapshot",
    "idf",
]

K1: Final = 1.2
B: Final = 0.75
#: Compact once tombstones are at least this fraction of all doc ids ...
COMPACT_FRACTION: Final = 0.25
#: ... and at least this many (tiny indexes are not worth renumbering often).
COMPACT_MIN: Final = 64

# array("I") is the in-memory tf / length store; snapshots are little-endian uint32.
if array("I").itemsize != 4:  # pragma: no cover - every platform we support has 4-byte uint
    raise ImportError("lcg needs a 4-byte array('I')")

_U32: Final = np.dtype("<u4")
#: Find candidates by scanning the dense scores unless the index has this many times more
#: docs than the query has postings (then the union of the posting bitmaps is cheaper).
_DENSE_SCAN: Final = 16
#: Pruning checks per query at most (each costs about one pass over the docs seen so far).
_MAX_CHECKS: Final = 2
#: No pruning check unless this many postings are left to score: on LongMemEval-sized groups
#: (up to 43k docs, ~3k postings per query) the checks cost more than they save (ADR 0012).
PRUNE_MIN_LEFT = 50_000  # a module variable, so a test can lower it

F64 = npt.NDArray[np.float64]
IntArr = npt.NDArray[np.intp]


def idf(n_docs: int, df: int) -> float:
    """The BM25 inverse document frequency ``ln(1 + (N - df + 0.5) / (df + 0.5))``."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


class IndexSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """The on-disk form of one ``Bm25Index`` (inside a group snapshot)."""

    #: By doc id; ``""`` for a tombstoned id.
    uuids: list[str]
    #: Doc lengths by id, little-endian uint32.
    lengths: bytes
    #: The tombstone bitmap, pyroaring's portable serialization.
    tombstones: bytes
    terms: list[str]
    #: One serialized bitmap per term, aligned with ``terms``.
    postings: list[bytes]
    #: All terms' frequencies concatenated in ``terms`` order, little-endian uint32.
    tfs: bytes


class _Postings:
    """The docs holding one term, and the term's frequency in each (ascending id order)."""

    __slots__ = ("bound", "contrib", "contrib_key", "ids", "ids_np", "tfs")

    def __init__(self, ids: BitMap | None = None, tfs: array[int] | None = None) -> None:
        self.ids: BitMap = ids if ids is not None else BitMap()
        self.tfs: array[int] = tfs if tfs is not None else array("I")
        # Query-time caches: the ids as a numpy array, and each doc's contribution
        # idf * tf*(k1+1)/(tf + k1*(1-b+b*dl/avgdl)) for the (avgdl, idf) it was computed
        # under, with its maximum (the term's upper bound for pruning). Postings only grow
        # (compaction builds new ones), so a cache shorter than ``tfs`` is stale.
        self.ids_np: IntArr | None = None
        self.contrib: F64 | None = None
        self.contrib_key = (-1.0, -1.0)
        self.bound = 0.0

    def id_array(self) -> IntArr:
        """The doc ids, ascending, as a numpy array (cached)."""
        if self.ids_np is None or len(self.ids_np) != len(self.tfs):
            self.ids_np = np.frombuffer(self.ids.to_array(), dtype=np.uint32).astype(np.intp)
        return self.ids_np

    def scored(self, lengths: F64, avgdl: float, weight: float) -> tuple[IntArr, F64]:
        """The doc ids and each one's score contribution under ``avgdl`` and idf ``weight``."""
        contrib = self.contrib
        if contrib is None or self.contrib_key != (avgdl, weight) or len(contrib) != len(self.tfs):
            ids = self.id_array()
            tfs = np.frombuffer(self.tfs, dtype=np.uint32).astype(np.float64)
            norm = K1 * (1.0 - B) + (K1 * B / avgdl) * lengths[ids]
            contrib = self.contrib = weight * (tfs * (K1 + 1.0) / (tfs + norm))
            self.contrib_key = (avgdl, weight)
            self.bound = float(contrib.max())
        return self.id_array(), contrib


class Bm25Index:
    """A mutable BM25 index from uuid to analyzed text (term counts)."""

    def __init__(self) -> None:
        """An empty index."""
        self._reset()

    def _reset(self) -> None:
        self._uuids: list[str] = []
        self._ids: dict[str, int] = {}
        self._lengths: array[int] = array("I")
        self._tomb = BitMap()
        self._postings: dict[str, _Postings] = {}
        self._live_length = 0
        self._lengths_np: F64 | None = None
        self._tomb_np: IntArr | None = None
        #: Searches that took the MaxScore shortcut (for tests and the bench).
        self.pruned_searches = 0
        self._live: npt.NDArray[np.bool_] | None = None

    # -- writes ---------------------------------------------------------------------------

    def add(self, uuid: str, counts: dict[str, int]) -> None:
        """Index ``uuid`` with these term counts, replacing what it had."""
        if uuid in self._ids:
            self.delete(uuid)
        doc = len(self._uuids)
        self._uuids.append(uuid)
        self._ids[uuid] = doc
        postings = self._postings
        # The hot loop of a build: caches are not touched here, they notice appends themselves.
        for term, tf in counts.items():
            p = postings.get(term)
            if p is None:
                p = postings[term] = _Postings()
            p.ids.add(doc)
            p.tfs.append(tf)
        length = sum(counts.values())
        self._lengths.append(length)
        self._live_length += length
        self._lengths_np = None

    def delete(self, uuid: str) -> bool:
        """Remove ``uuid``; ``False`` if it was not indexed."""
        doc = self._ids.pop(uuid, None)
        if doc is None:
            return False
        self._uuids[doc] = ""
        self._tomb.add(doc)
        self._live_length -= self._lengths[doc]
        self._tomb_np = None
        self._live = None
        return True

    def clear(self) -> None:
        """Remove every document."""
        self._reset()

    def maybe_compact(self) -> bool:
        """Compact if tombstones passed the threshold; whether it did."""
        dead = len(self._tomb)
        if dead >= COMPACT_MIN and dead >= COMPACT_FRACTION * len(self._uuids):
            self.compact()
            return True
        return False

    def compact(self) -> None:
        """Renumber live docs densely and drop tombstoned ids from every posting list."""
        if not self._tomb:
            return
        n = len(self._uuids)
        live = np.ones(n, dtype=bool)
        live[self._tomb_ids()] = False
        # Old id -> new id; monotonic, so rewritten postings stay in ascending order.
        remap = np.cumsum(live, dtype=np.int64) - 1
        kept: dict[str, _Postings] = {}
        for term, p in self._postings.items():
            if not p.ids.intersect(self._tomb):
                new_ids = remap[p.id_array()].astype(np.uint32)
                kept[term] = _Postings(BitMap(new_ids), p.tfs)
                continue
            ids = np.frombuffer(p.ids.to_array(), dtype=np.uint32)
            keep = live[ids]
            if not keep.any():
                continue
            tfs = np.frombuffer(p.tfs, dtype=np.uint32)[keep]
            kept[term] = _Postings(
                BitMap(remap[ids[keep]].astype(np.uint32)), array("I", tfs.tobytes())
            )
        lengths = np.frombuffer(self._lengths, dtype=np.uint32)[live]
        self._uuids = [u for u in self._uuids if u]
        self._ids = {u: i for i, u in enumerate(self._uuids)}
        self._lengths = array("I", lengths.tobytes())
        self._postings = kept
        self._tomb = BitMap()
        self._lengths_np = None
        self._tomb_np = None
        self._live = None

    # -- reads ----------------------------------------------------------------------------

    def __len__(self) -> int:
        """The number of live documents."""
        return len(self._ids)

    def uuids(self) -> list[str]:
        """The live documents' uuids, in no particular order."""
        return list(self._ids)

    def __contains__(self, uuid: object) -> bool:
        """Whether ``uuid`` is indexed."""
        return uuid in self._ids

    @property
    def tombstones(self) -> int:
        """Tombstoned ids not yet compacted away."""
        return len(self._tomb)

    @property
    def vocabulary(self) -> int:
        """Terms with a posting list (some may only hold tombstoned docs until compaction)."""
        return len(self._postings)

    def df(self, term: str) -> int:
        """Live documents holding ``term``."""
        p = self._postings.get(term)
        if p is None:
            return 0
        if self._tomb:
            return len(p.ids) - p.ids.intersection_cardinality(self._tomb)
        return len(p.ids)

    def _tomb_ids(self) -> IntArr:
        if self._tomb_np is None:
            self._tomb_np = np.frombuffer(self._tomb.to_array(), dtype=np.uint32).astype(np.intp)
        return self._tomb_np

    def _lengths_f64(self) -> F64:
        if self._lengths_np is None:
            self._lengths_np = np.frombuffer(self._lengths, dtype=np.uint32).astype(np.float64)
        return self._lengths_np

    def search(self, terms: list[str], k: int) -> list[tuple[str, float]]:
        """The ``k`` best ``(uuid, score)`` for distinct ``terms``; best first, ties uuid asc.

        Terms are scored rarest first into a dense score array with ``np.add.at``, so every
        doc sums its terms' contributions in one fixed order, whatever path is taken. When
        many postings are left (``PRUNE_MIN_LEFT``), exact MaxScore pruning may cut the work:
        before a term whose list is longer than everything seen, the k-th best partial score
        ``theta`` is compared with ``rest``, the sum of the remaining terms' upper bounds; if
        ``rest < theta`` no unseen doc can reach the top k, and the remaining terms are only
        looked up (binary search) for the seen docs that still can. Scores are bit for bit
        those of exhaustive scoring. Not thread-safe (the projection serializes calls).
        """
        n_live = len(self._ids)
        if k <= 0 or n_live == 0 or self._live_length == 0:
            return []
        tomb = self._tomb
        plan: list[tuple[int, str, _Postings]] = []
        get = self._postings.get
        for term in terms:
            p = get(term)
            if p is not None:
                df = len(p.ids) - p.ids.intersection_cardinality(tomb) if tomb else len(p.ids)
                if df:
                    plan.append((df, term, p))
        if not plan:
            return []
        # Rarest first; the order depends only on live statistics, so equal indexes (whatever
        # their history) add every doc's contributions in the same order. (df, term) pairs
        # are distinct, so the postings objects are never compared.
        plan.sort()
        lengths = self._lengths_f64()
        avgdl = self._live_length / n_live
        scored = [p.scored(lengths, avgdl, idf(n_live, df)) for df, _, p in plan]
        if len(plan) == 1:
            ids, contrib = scored[0]
            if tomb:
                alive = self._live_mask()[ids]
                ids, contrib = ids[alive], contrib[alive]
            return self._top(ids, contrib, k)
        n = len(self._uuids)
        postings = sum(len(i) for i, _ in scored)
        candidates: IntArr | None = None
        if postings >= PRUNE_MIN_LEFT:
            scores = np.zeros(n, dtype=np.float64)
            candidates = self._search_pruned(plan, scored, scores, k)
        if candidates is None:
            # bincount adds in input order from 0.0, as add.at does: the same sums, bit for
            # bit, with no separate zeroed array.
            scores = cast(
                "F64",
                np.bincount(
                    np.concatenate([i for i, _ in scored]),
                    np.concatenate([c for _, c in scored]),
                    minlength=n,
                ),
            )
            if n > _DENSE_SCAN * postings:
                # Few postings in a big index: the candidates are their union.
                live = BitMap.union(*(p.ids for _, _, p in plan))
                if tomb:
                    live -= tomb
                candidates = np.frombuffer(live.to_array(), dtype=np.uint32).astype(np.intp)
            else:
                candidates = self._dense_candidates(scores, scored[0][0], k)
        return self._top(candidates, scores[candidates], k)

    def _dense_candidates(self, scores: F64, sample: IntArr, k: int) -> IntArr:
        """Live docs that may be in the top ``k``, found by one scan of the dense scores.

        Any ``k`` live docs' scores bound the k-th best from below; the docs of the rarest
        term make a cheap and usually tight sample, so few docs pass the scan.
        """
        if self._tomb:
            scores[self._tomb_ids()] = 0.0
        floor = 0.0
        if len(sample) >= k:
            floor = float(-np.partition(-scores[sample], k - 1)[k - 1])
        if floor > 0.0:
            return np.flatnonzero(scores >= floor)
        return np.flatnonzero(scores > 0.0)

    def _search_pruned(
        self,
        plan: list[tuple[int, str, _Postings]],
        scored: list[tuple[IntArr, F64]],
        scores: F64,
        k: int,
    ) -> IntArr | None:
        """MaxScore: the candidates if pruning paid, else ``None`` with ``scores`` all zero."""
        done = 0  # terms [0, done) are added for every doc
        seen = 0  # their postings, counted with repeats
        left = sum(len(i) for i, _ in scored)  # postings of the terms not yet seen
        checks = 0
        posts = [p for _, _, p in plan]
        for j in range(1, len(plan)):
            seen += len(scored[j - 1][0])
            left -= len(scored[j - 1][0])
            # A check costs about |seen|; it can only pay before a list longer than all seen
            # so far, when much more is left to score than was scored.
            if not (len(scored[j][0]) > seen >= k and left > 2 * seen):
                continue
            _accumulate(scores, scored[done:j])
            done = j
            candidates = self._prune(scores, posts[:j], k, sum(p.bound for p in posts[j:]))
            if candidates is not None:
                self.pruned_searches += 1
                for ids, contrib in scored[j:]:
                    _lookup_add(scores, candidates, ids, contrib)
                return candidates
            checks += 1
            if checks == _MAX_CHECKS:
                break
        if done:
            # Pruning did not pay: undo the partial sums, the caller scores from scratch.
            touched = BitMap.union(*(p.ids for p in posts[:done]))
            scores[np.frombuffer(touched.to_array(), dtype=np.uint32)] = 0.0
        return None

    def _live_mask(self) -> npt.NDArray[np.bool_]:
        """``True`` for live doc ids (cached until the next delete or add)."""
        if self._live is None or len(self._live) != len(self._uuids):
            live = np.ones(len(self._uuids), dtype=bool)
            live[self._tomb_ids()] = False
            self._live = live
        return self._live

    def _prune(self, scores: F64, seen: list[_Postings], k: int, rest: float) -> IntArr | None:
        """The seen docs that can still reach the top ``k``, or ``None`` if unseen ones can."""
        live = BitMap.union(*(p.ids for p in seen)) if len(seen) > 1 else seen[0].ids
        if self._tomb:
            live = live - self._tomb
        if len(live) < k:
            return None
        ids = np.frombuffer(live.to_array(), dtype=np.uint32).astype(np.intp)
        partial = scores[ids]
        theta = float(-np.partition(-partial, k - 1)[k - 1])
        # A margin far above float rounding keeps the bound safe: pruned docs score < theta.
        slack = rest * (1.0 + 1e-9)
        floor = theta * (1.0 - 1e-9)
        if slack >= floor:
            return None
        return ids[partial + slack >= floor]

    def _top(self, candidates: IntArr, sub: F64, k: int) -> list[tuple[str, float]]:
        """The ``k`` best of ``candidates`` (doc ids) with scores ``sub``."""
        if sub.size > k:
            # The k-th best score by partitioning the negated scores around index k-1: the
            # fast form (partition(x, -k) is pathologically slow on numpy 2.4), and no index
            # array is needed since everything tied with the k-th score competes on uuid.
            threshold = -np.partition(-sub, k - 1)[k - 1]
            keep = sub >= threshold
            candidates, sub = candidates[keep], sub[keep]
        uuids = self._uuids
        ranked = sorted(zip((-sub).tolist(), [uuids[i] for i in candidates.tolist()], strict=True))
        return [(u, -neg) for neg, u in ranked[:k]]

    # -- snapshots ------------------------------------------------------------------------

    def snapshot(self) -> IndexSnapshot:
        """The index as a msgspec ``IndexSnapshot``."""
        terms = list(self._postings)
        plist = [self._postings[t] for t in terms]
        tfs = b"".join(p.tfs.tobytes() for p in plist)
        lengths = self._lengths.tobytes()
        if _U32.byteorder == ">":  # pragma: no cover - big-endian hosts
            tfs = np.frombuffer(tfs, dtype=np.uint32).astype(_U32).tobytes()
            lengths = np.frombuffer(lengths, dtype=np.uint32).astype(_U32).tobytes()
        return IndexSnapshot(
            uuids=list(self._uuids),
            lengths=lengths,
            tombstones=self._tomb.serialize(),
            terms=terms,
            postings=[p.ids.serialize() for p in plist],
            tfs=tfs,
        )

    @classmethod
    def from_snapshot(cls, snap: IndexSnapshot) -> Bm25Index:
        """Rebuild an index from its snapshot; ``ValueError`` if it is inconsistent."""
        index = cls()
        n = len(snap.uuids)
        lengths = np.frombuffer(snap.lengths, dtype=_U32).astype(np.uint32)
        tfs_all = np.frombuffer(snap.tfs, dtype=_U32).astype(np.uint32)
        if lengths.size != n or len(snap.terms) != len(snap.postings):
            raise ValueError("snapshot arrays disagree in length")
        tomb = BitMap.deserialize(snap.tombstones)
        live_length = 0
        for doc, uuid in enumerate(snap.uuids):
            if uuid:
                index._ids[uuid] = doc
                live_length += int(lengths[doc])
            elif doc not in tomb:
                raise ValueError(f"doc id {doc} has no uuid and no tombstone")
        if len(index._ids) + len(tomb) != n:
            raise ValueError("snapshot uuids and tombstones disagree")
        offset = 0
        postings: dict[str, _Postings] = {}
        for term, raw in zip(snap.terms, snap.postings, strict=True):
            ids = BitMap.deserialize(raw)
            end = offset + len(ids)
            if end > tfs_all.size or (ids and ids.max() >= n):
                raise ValueError(f"postings of {term!r} run past the snapshot's arrays")
            postings[term] = _Postings(ids, array("I", tfs_all[offset:end].tobytes()))
            offset = end
        if offset != tfs_all.size:
            raise ValueError("snapshot term frequencies are longer than its postings")
        index._uuids = list(snap.uuids)
        index._lengths = array("I", lengths.tobytes())
        index._tomb = tomb
        index._postings = postings
        index._live_length = live_length
        return index


def _accumulate(scores: F64, scored: list[tuple[IntArr, F64]]) -> None:
    """Add the terms' contributions to ``scores``, term by term for every doc."""
    if len(scored) == 1:
        ids, contrib = scored[0]
        scores[ids] += contrib  # ids are distinct within one term
    else:
        # add.at is unbuffered and runs in order: each doc gets its terms' shares in term
        # order, exactly as one term at a time would.
        np.add.at(
            scores, np.concatenate([i for i, _ in scored]), np.concatenate([c for _, c in scored])
        )


def _lookup_add(scores: F64, docs: IntArr, ids: IntArr, contrib: F64) -> None:
    """Add one term's contributions to ``docs`` found in its ascending postings ``ids``."""
    pos = np.searchsorted(ids, docs)
    pos[pos == len(ids)] = 0
    hit = ids[pos] == docs
    scores[docs[hit]] += contrib[pos[hit]]
