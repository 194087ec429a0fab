"""The content-addressed embedding cache: text -> vector, per (model, dim).

Derived state only: deleting the directory changes no result, it only costs embedder calls.
A rebuild under an unchanged embedder finds every vector here and makes no embedder call.

Layout of ``<root>/<model_id>-<dim>/`` (see docs/adr/0011-embedding-cache.md)::

    meta.json          format, model_id, dim, records per shard (msgspec ``CacheMeta``)
    000000.keys        fixed 36-byte records: sha256(text) (32) + crc32 of the vector (4, LE)
    000000.vecs        fixed records of ``dim`` little-endian float32, same order as .keys
    000001.keys ...    the next shard once a shard holds ``shard_records`` records
    .lock              flock of the single writing process

Keys and vectors live in separate files so that opening reads only the keys (36 MB at a
million texts) and never the vectors (1.5 GB at 384-d). The in-memory index is a sorted
array of each digest's first 8 bytes plus a small dict for records added since the last
merge; a hit is confirmed against the full digest and the vector's crc32 before it is
returned, so a torn or damaged record reads as a miss, never as a wrong vector. Records are
append-only; a torn tail (a crash mid-append) is cut back to whole records on open.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import threading
import zlib
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Final

import msgspec
import numpy as np
import numpy.typing as npt

from lcg import telemetry
from lcg.errors import EmbedderError, ProjectionError
from lcg.events import (
    atomic_write,
    describe_os_error,
    private_dir,
    probe_write,
)
from lcg.projections._layout import (
    EMBEDDINGS_DIR,
    EMBEDDINGS_KEYS_SUFFIX,
    EMBEDDINGS_LOCK_FILE,
    EMBEDDINGS_META_FILE,
    EMBEDDINGS_VECS_SUFFIX,
)

if TYPE_CHECKING:
    from lcg.extract import Embedder

__all__ = ["EMBEDDINGS_DIR", "CacheMeta", "EmbeddingCache", "cache_dir_name", "embed_with_cache"]

_FORMAT: Final = 1
_META_FILE: Final = EMBEDDINGS_META_FILE
_LOCK_FILE: Final = EMBEDDINGS_LOCK_FILE
_KEYS_SUFFIX: Final = EMBEDDINGS_KEYS_SUFFIX
_VECS_SUFFIX: Final = EMBEDDINGS_VECS_SUFFIX
_DIGEST: Final = 32
_KEY_RECORD: Final = _DIGEST + 4
_SHARD_DIGITS: Final = 6
_DEFAULT_SHARD_RECORDS: Final = 1 << 16
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


class CacheMeta(msgspec.Struct, frozen=True, kw_only=True):
    """``meta.json`` of one cache directory: what its records are."""

    format: int
    model_id: str
    dim: int
    shard_records: int


_meta_decode = msgspec.json.Decoder(CacheMeta).decode
_meta_encode = msgspec.json.Encoder().encode


def cache_dir_name(model_id: str, dim: int) -> str:
    """The directory name of ``(model_id, dim)``: ``<model_id>-<dim>``, made filesystem-safe."""
    safe = _SAFE.sub("_", model_id)
    if safe != model_id or safe.startswith("."):
        # Two ids that sanitise alike must not share a directory.
        safe = safe.lstrip(".") + "-" + hashlib.sha256(model_id.encode()).hexdigest()[:8]
    return f"{safe}-{dim}"


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _prefixes(digests: bytes, n: int) -> npt.NDArray[np.uint64]:
    raw = np.frombuffer(digests, dtype=np.uint8).reshape(n, _DIGEST)
    return np.ascontiguousarray(raw[:, :8]).view("<u8").reshape(n).astype(np.uint64)


def _open_append(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _cut(path: Path, size: int) -> None:
    """Truncate (or create) ``path`` to ``size`` bytes."""
    fd = _open_append(path)
    try:
        os.ftruncate(fd, size)
    finally:
        os.close(fd)


class _Shard:
    """One pair of ``.keys``/``.vecs`` files and read-only maps of their whole records."""

    def __init__(self, directory: Path, number: int, record: int) -> None:
        stem = f"{number:0{_SHARD_DIGITS}d}"
        self.keys_path = directory / (stem + _KEYS_SUFFIX)
        self.vecs_path = directory / (stem + _VECS_SUFFIX)
        self.record = record
        self.count = 0
        self._mapped = 0
        self._keys: npt.NDArray[np.uint8] | None = None
        self._vecs: npt.NDArray[np.uint8] | None = None

    def whole_records(self) -> tuple[int, int, int]:
        """(whole records in both files, bytes of .keys, bytes of .vecs) on disk."""
        k = self.keys_path.stat().st_size if self.keys_path.exists() else 0
        v = self.vecs_path.stat().st_size if self.vecs_path.exists() else 0
        return min(k // _KEY_RECORD, v // self.record), k, v

    def maps(self) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
        """Byte views ``[count, 36]`` and ``[count, record]`` of the shard, remapped on growth."""
        if self._keys is None or self._vecs is None or self._mapped != self.count:
            self._keys = np.memmap(
                self.keys_path, dtype=np.uint8, mode="r", shape=(self.count, _KEY_RECORD)
            )
            self._vecs = np.memmap(
                self.vecs_path, dtype=np.uint8, mode="r", shape=(self.count, self.record)
            )
            self._mapped = self.count
        return self._keys, self._vecs

    def unmap(self) -> None:
        """Drop the maps (before truncation or close)."""
        self._keys = self._vecs = None
        self._mapped = 0


class EmbeddingCache:
    """Vectors of one (model, dim) keyed by sha256 of their text; append-only shard files.

    ``get_many``/``put_many`` are safe to call from several threads. One process writes a
    directory at a time (an flock); another process opening it gets a read-only cache whose
    ``put_many`` stores nothing. Counters: ``hits`` and ``misses`` (distinct texts looked up),
    ``corrupt`` (records that failed their check and read as misses).
    """

    def __init__(
        self,
        root: Path,
        model_id: str,
        dim: int,
        *,
        shard_records: int = _DEFAULT_SHARD_RECORDS,
    ) -> None:
        if dim <= 0:
            raise ProjectionError(f"embedding cache dim {dim} must be positive")
        self.model_id = model_id
        self.dim = dim
        self.path = Path(root) / cache_dir_name(model_id, dim)
        self.hits = 0
        self.misses = 0
        self.corrupt = 0
        self._record = dim * 4
        self._lock = threading.Lock()
        self._closed = False
        # Append descriptors of the last shard's two files, opened on the first put.
        self._keys_fd: int | None = None
        self._vecs_fd: int | None = None
        #: Why the last store failed (``disk full writing <path>``); cleared by the next store
        #: that succeeds. A cache that cannot store still answers (and the caller goes on).
        self.fault: str | None = None
        #: Stores that failed (records skipped: they cost an embedder call next time).
        self.write_errors = 0
        try:
            private_dir(self.path)
            self._lock_fd: int | None = os.open(
                self.path / _LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600
            )
        except OSError as exc:
            raise ProjectionError(f"embedding cache {self.path} cannot open: {exc}") from exc
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.read_only = False
        except BlockingIOError:
            self.read_only = True
        try:
            self._shard_records = self._open_meta(shard_records)
            self._shards = self._open_shards()
        except BaseException:
            self._release_lock()
            raise
        self._build_index()

    @classmethod
    def for_embedder(cls, cache_dir: Path, embedder: Embedder) -> EmbeddingCache:
        """The cache of ``embedder``'s (model, dim) under ``<cache_dir>/embeddings/``."""
        return cls(Path(cache_dir) / EMBEDDINGS_DIR, embedder.model_id, embedder.dim)

    # -- opening -----------------------------------------------------------------------

    def _open_meta(self, shard_records: int) -> int:
        meta_path = self.path / _META_FILE
        remedy = f"delete {self.path} (it is a cache; nothing is lost)"
        if meta_path.exists():
            try:
                meta = _meta_decode(meta_path.read_bytes())
            except (OSError, msgspec.DecodeError) as exc:
                raise ProjectionError(
                    f"embedding cache {meta_path} is unreadable: {exc}; {remedy}"
                ) from exc
            if (meta.format, meta.model_id, meta.dim) != (_FORMAT, self.model_id, self.dim):
                raise ProjectionError(
                    f"embedding cache {meta_path} holds format {meta.format}, model "
                    f"{meta.model_id!r}, dim {meta.dim}, not format {_FORMAT}, model "
                    f"{self.model_id!r}, dim {self.dim}; {remedy}"
                )
            return meta.shard_records
        if any(self.path.glob("*" + _KEYS_SUFFIX)):
            raise ProjectionError(
                f"embedding cache {self.path} has shards but no {_META_FILE}; {remedy}"
            )
        if self.read_only:
            return shard_records
        meta = CacheMeta(
            format=_FORMAT, model_id=self.model_id, dim=self.dim, shard_records=shard_records
        )
        try:
            atomic_write(meta_path, _meta_encode(meta))
        except OSError as exc:
            raise ProjectionError(
                f"embedding cache {self.path} cannot open: {describe_os_error(exc, meta_path)}"
            ) from exc
        return shard_records

    def _open_shards(self) -> list[_Shard]:
        shards: list[_Shard] = []
        while True:
            shard = _Shard(self.path, len(shards), self._record)
            if not shard.keys_path.exists() and not shard.vecs_path.exists():
                break
            whole, k_size, v_size = shard.whole_records()
            shard.count = min(whole, self._shard_records)
            torn = k_size != shard.count * _KEY_RECORD or v_size != shard.count * self._record
            if torn and not self.read_only:
                # A crash mid-append left a partial record (or one file ahead of the
                # other): cut both back to the records they hold in full.
                _cut(shard.keys_path, shard.count * _KEY_RECORD)
                _cut(shard.vecs_path, shard.count * self._record)
            shards.append(shard)
        if not self.read_only:
            # Shards past a gap (a shard deleted by hand) are unreachable, and appending
            # would one day land on top of them: drop them. They are only a cache.
            for stray in self.path.glob("*[0-9]" + _KEYS_SUFFIX):
                if stray.stem.isdigit() and int(stray.stem) >= len(shards):
                    stray.unlink(missing_ok=True)
            for stray in self.path.glob("*[0-9]" + _VECS_SUFFIX):
                if stray.stem.isdigit() and int(stray.stem) >= len(shards):
                    stray.unlink(missing_ok=True)
        if not shards:
            shards.append(_Shard(self.path, 0, self._record))
        return shards

    def _build_index(self) -> None:
        parts: list[npt.NDArray[np.uint64]] = []
        locs: list[npt.NDArray[np.int64]] = []
        for number, shard in enumerate(self._shards):
            if shard.count:
                keys, _ = shard.maps()
                parts.append(_prefixes(keys[:, :_DIGEST].tobytes(), shard.count))
                base = number * self._shard_records
                locs.append(np.arange(base, base + shard.count, dtype=np.int64))
        prefixes = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
        where = np.concatenate(locs) if locs else np.zeros(0, dtype=np.int64)
        self._set_index(prefixes, where)
        self._pending: dict[int, int] = {}

    def _set_index(self, prefixes: npt.NDArray[np.uint64], locs: npt.NDArray[np.int64]) -> None:
        # Stable sort, then keep the last record of each prefix: a later record (re-put
        # after a damaged one) wins.
        order = np.argsort(prefixes, kind="stable")
        prefixes, locs = prefixes[order], locs[order]
        if len(prefixes):
            last = np.ones(len(prefixes), dtype=bool)
            last[:-1] = prefixes[1:] != prefixes[:-1]
            prefixes, locs = prefixes[last], locs[last]
        self._keys_sorted = prefixes
        self._locs_sorted = locs

    def _merge_pending(self) -> None:
        if not self._pending:
            return
        extra_p = np.fromiter(self._pending.keys(), dtype=np.uint64, count=len(self._pending))
        extra_l = np.fromiter(self._pending.values(), dtype=np.int64, count=len(self._pending))
        self._set_index(
            np.concatenate([self._keys_sorted, extra_p]),
            np.concatenate([self._locs_sorted, extra_l]),
        )
        self._pending = {}

    # -- lookups -----------------------------------------------------------------------

    def __len__(self) -> int:
        """The number of distinct texts with a stored vector."""
        with self._lock:
            return len(self._keys_sorted) + len(self._pending)

    def _locate(self, digests: bytes, n: int) -> npt.NDArray[np.int64]:
        prefixes = _prefixes(digests, n)
        locs = np.full(n, -1, dtype=np.int64)
        if len(self._keys_sorted):
            pos = np.searchsorted(self._keys_sorted, prefixes)
            pos_c = np.minimum(pos, len(self._keys_sorted) - 1)
            found = self._keys_sorted[pos_c] == prefixes
            locs[found] = self._locs_sorted[pos_c[found]]
        if self._pending:
            get = self._pending.get
            for i, p in enumerate(prefixes.tolist()):
                loc = get(p)
                if loc is not None:
                    locs[i] = loc
        return locs

    def _read(
        self, digests: bytes, locs: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
        """Vectors at ``locs`` (``-1`` = absent) and which of them passed their checks."""
        n = len(locs)
        out = np.zeros((n, self.dim), dtype=np.float32)
        ok = np.zeros(n, dtype=bool)
        wanted = locs >= 0
        if not wanted.any():
            return out, ok
        want_digests = np.frombuffer(digests, dtype=np.uint8).reshape(n, _DIGEST)
        shard_of = np.where(wanted, locs // self._shard_records, -1)
        for number in np.unique(shard_of[wanted]).tolist():
            rows = np.flatnonzero(shard_of == number)
            keys, vecs = self._shards[number].maps()
            idx = locs[rows] - number * self._shard_records
            key_rec = np.asarray(keys[idx])
            vec_rec = np.asarray(vecs[idx])
            same = np.all(key_rec[:, :_DIGEST] == want_digests[rows], axis=1)
            crcs = key_rec[:, _DIGEST:].copy().view("<u4").reshape(len(rows))
            for j in np.flatnonzero(same).tolist():
                if zlib.crc32(vec_rec[j].tobytes()) == int(crcs[j]):
                    ok[rows[j]] = True
                else:
                    self.corrupt += 1
            out[rows] = vec_rec.view("<f4").reshape(len(rows), self.dim)
        out[~ok] = 0.0
        return out, ok

    def _lookup(
        self, texts: Sequence[str]
    ) -> tuple[list[str], list[int], npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
        """Distinct texts, each input's index into them, their vectors, and which were hits."""
        position: dict[str, int] = {}
        inverse: list[int] = []
        for text in texts:
            i = position.get(text)
            if i is None:
                i = position[text] = len(position)
            inverse.append(i)
        unique = list(position)
        digests = b"".join(_digest(t) for t in unique)
        with self._lock:
            self._check_open()
            locs = self._locate(digests, len(unique))
            vectors, ok = self._read(digests, locs)
            hit_count = int(ok.sum())
            self.hits += hit_count
            self.misses += len(unique) - hit_count
        return unique, inverse, vectors, ok

    def get_many(
        self, texts: Sequence[str]
    ) -> tuple[dict[str, npt.NDArray[np.float32]], list[str]]:
        """``(hits, misses)``: vectors of the texts found, and the distinct texts not found.

        ``misses`` keeps first-appearance order. Counters count distinct texts.
        """
        unique, _, vectors, ok = self._lookup(texts)
        hits = {unique[i]: vectors[i] for i in np.flatnonzero(ok).tolist()}
        misses = [unique[i] for i in np.flatnonzero(~ok).tolist()]
        return hits, misses

    # -- writes ------------------------------------------------------------------------

    def put_many(self, texts: Sequence[str], vectors: npt.ArrayLike) -> int:
        """Store ``vectors[i]`` for ``texts[i]``; returns how many new records were written.

        Texts already stored (or repeated in the call) are skipped; a read-only cache
        stores nothing.
        """
        array = np.asarray(vectors, dtype="<f4")
        if array.shape != (len(texts), self.dim):
            raise ProjectionError(
                f"embedding cache expects vectors of shape ({len(texts)}, {self.dim}), "
                f"got {array.shape}"
            )
        if not texts or self.read_only:
            return 0
        first: dict[str, int] = {}
        for i, text in enumerate(texts):
            first.setdefault(text, i)
        unique = list(first)
        rows = np.fromiter(first.values(), dtype=np.int64, count=len(first))
        digests = b"".join(_digest(t) for t in unique)
        with self._lock:
            self._check_open()
            present = self._read(digests, self._locate(digests, len(unique)))[1]
            fresh = np.flatnonzero(~present).tolist()
            stored = 0
            while stored < len(fresh):
                room = self._room()
                take = fresh[stored : stored + room]
                if not self._append(
                    [digests[j * _DIGEST : (j + 1) * _DIGEST] for j in take],
                    [array[rows[j]].tobytes() for j in take],
                ):
                    break
                stored += len(take)
            if len(self._pending) > max(4096, len(self._keys_sorted) // 4):
                self._merge_pending()
        return stored

    def _room(self) -> int:
        """Records the last shard still takes (starting a new shard when it is full)."""
        shard = self._shards[-1]
        if shard.count >= self._shard_records:
            self._close_writers()
            shard.unmap()
            self._shards.append(_Shard(self.path, len(self._shards), self._record))
        return self._shard_records - self._shards[-1].count

    def _append(self, digests: list[bytes], vectors: list[bytes]) -> bool:
        """Append records to the last shard; False (nothing stored, fault noted) if it failed.

        Vectors first, then their keys: a key on disk implies its vector was written before.
        A failed write is taken back in both files, so the shard holds whole records only and
        the next store (once there is room again) appends where this one began.
        """
        shard = self._shards[-1]
        keys = b"".join(
            d + zlib.crc32(v).to_bytes(4, "little") for d, v in zip(digests, vectors, strict=True)
        )
        target = shard.vecs_path
        try:
            if self._vecs_fd is None or self._keys_fd is None:
                self._close_writers()
                self._vecs_fd = _open_append(shard.vecs_path)
                self._keys_fd = _open_append(shard.keys_path)
            _write_all(self._vecs_fd, b"".join(vectors))
            target = shard.keys_path
            _write_all(self._keys_fd, keys)
        except OSError as exc:
            self._undo(shard)
            self.write_errors += 1
            self._note_fault(describe_os_error(exc, target))
            return False
        base = (len(self._shards) - 1) * self._shard_records
        for digest in digests:
            self._pending[int.from_bytes(digest[:8], "little")] = base + shard.count
            shard.count += 1
        if self.fault is not None:
            self._note_fault(None)
        return True

    def _undo(self, shard: _Shard) -> None:
        """Cut both files of ``shard`` back to its whole records after a failed append."""
        try:
            for fd, size in (
                (self._vecs_fd, shard.count * self._record),
                (self._keys_fd, shard.count * _KEY_RECORD),
            ):
                if fd is not None:
                    os.ftruncate(fd, size)
        except OSError:
            # Appends would land past stray bytes: stop storing until the cache is reopened
            # (which cuts the files back to whole records).
            self.read_only = True

    def recheck(self) -> None:
        """Clear ``fault`` if the cache's directory takes a write again (space came back)."""
        if self.fault is not None and probe_write(self.path) is None:
            with self._lock:
                self._note_fault(None)

    def _note_fault(self, reason: str | None) -> None:
        if reason == self.fault:
            return
        self.fault = reason
        telemetry.emit(telemetry.IoFault(component=f"embedding cache {self.path}", reason=reason))

    def _close_writers(self) -> None:
        for fd in (self._vecs_fd, self._keys_fd):
            if fd is not None:
                os.close(fd)
        self._vecs_fd = self._keys_fd = None

    def flush(self, *, fsync: bool = False) -> None:
        """Make stored records durable with ``fsync=True`` (each store already reached the
        OS); a failure is noted in ``fault``, never raised: the cache is derived state."""
        with self._lock:
            if self._closed or not fsync:
                return
            for fd, path in ((self._vecs_fd, "vecs"), (self._keys_fd, "keys")):
                if fd is not None:
                    try:
                        os.fsync(fd)
                    except OSError as exc:
                        self._note_fault(describe_os_error(exc, self.path / path))

    def close(self) -> None:
        """Release the files and the writer lock; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._close_writers()
            for shard in self._shards:
                shard.unmap()
            self._release_lock()

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    def _check_open(self) -> None:
        if self._closed:
            raise ProjectionError(f"embedding cache {self.path} is closed")

    def __enter__(self) -> EmbeddingCache:
        """Use as a context manager; ``close()`` on exit."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the cache."""
        self.close()


def embed_with_cache(
    embedder: Embedder, cache: EmbeddingCache, texts: Sequence[str]
) -> npt.NDArray[np.float32]:
    """Vectors for ``texts`` (aligned, ``[len(texts), dim]``), embedding only the misses.

    The distinct misses go to the embedder in one ``embed`` call and are stored in the
    cache; with every text cached the embedder is not called at all.
    """
    if embedder.model_id != cache.model_id or embedder.dim != cache.dim:
        raise EmbedderError(
            f"embedder {embedder.model_id!r} ({embedder.dim}-d) does not match the cache of "
            f"{cache.model_id!r} ({cache.dim}-d)"
        )
    unique, inverse, vectors, ok = cache._lookup(texts)
    missing = np.flatnonzero(~ok)
    if len(missing):
        miss_texts = [unique[i] for i in missing.tolist()]
        fresh = np.asarray(embedder.embed(miss_texts), dtype=np.float32)
        if fresh.shape != (len(miss_texts), cache.dim):
            raise EmbedderError(
                f"embedding response shape mismatch: expected ({len(miss_texts)}, "
                f"{cache.dim}), got {fresh.shape}"
            )
        vectors[missing] = fresh
        cache.put_many(miss_texts, fresh)
    out: npt.NDArray[np.float32] = vectors[np.asarray(inverse, dtype=np.int64)]
    return out
