"""Embedders: batches of text in, float32 unit vectors out.

Every embedder has ``model_id``, ``dim``, ``default_min_score`` (the cosine floor a passage
search applies when its caller names none: a cosine scale is the model's own, ADR 0198) and an
``embed(texts)`` that returns a
``[len(texts), dim]`` float32 array of unit rows in input order (``[0, dim]`` for no texts),
and raises only ``EmbedderError``. Implementations:

* ``LocalEmbedder`` — the embedded default (all-MiniLM-L6-v2 int8, offline, CPU);
* ``HttpEmbedder`` / ``UdsEmbedder`` — an OpenAI-compatible ``/v1/embeddings`` server;
* ``StandbyEmbedder`` — such a server that may be away (the workspace wraps one in it);
* ``HashEmbedder`` — a deterministic hashing **test double** (tests and fast CI runs).

``make_embedder`` picks one by kind (``LCG_EMBEDDER=local|hash|http|uds``).
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, Protocol
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt

from lcg.errors import ConfigError, EmbedderError
from lcg.extract._minilm import LOCAL_DIM, LOCAL_MIN_SCORE, LOCAL_MODEL_ID, LocalEmbedder
from lcg.extract._openai_embed import (
    REFERENCE_MIN_SCORE,
    REFERENCE_MODEL,
    HttpEmbedder,
    UdsEmbedder,
)
from lcg.extract._standby import REPROBE_S, StandbyEmbedder

__all__ = [
    "HASH_MIN_SCORE",
    "HASH_MODEL_ID",
    "LOCAL_DIM",
    "LOCAL_MIN_SCORE",
    "LOCAL_MODEL_ID",
    "REFERENCE_MIN_SCORE",
    "REFERENCE_MODEL",
    "REPROBE_S",
    "Embedder",
    "HashEmbedder",
    "HttpEmbedder",
    "LocalEmbedder",
    "StandbyEmbedder",
    "UdsEmbedder",
    "make_embedder",
]

#: The model id of the hashing test double.
HASH_MODEL_ID: Final = "hash-embedder-v1"
#: The hashing double's default cosine floor (ADR 0198): none. Its cosines count shared
#: words, stopwords included, so no floor parts answers from unrelated text (on LongMemEval,
#: the floor that keeps 95 % of the questions' answers keeps 64 % of unrelated pairs).
HASH_MIN_SCORE: Final = 0.0


class Embedder(Protocol):
    """Batch of texts in, ``[n, dim]`` float32 unit rows out; raises only ``EmbedderError``.

    A static protocol (checked by mypy), deliberately not ``runtime_checkable``: on Python
    3.11 ``isinstance`` reads every member, and reading a remote embedder's ``dim`` runs its
    network probe.
    """

    @property
    def model_id(self) -> str:
        """The model's identity (names the embedding cache directory with ``dim``)."""
        ...

    @property
    def dim(self) -> int:
        """The length of every vector."""
        ...

    @property
    def default_min_score(self) -> float:
        """The cosine floor of a passage search that names no ``min_score`` (ADR 0198)."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``: float32 ``[len(texts), dim]``, unit rows, in input order."""
        ...

    def close(self) -> None:
        """Release resources; later ``embed`` calls raise ``EmbedderError``."""
        ...


_WORD = re.compile(r"\w+")
# Features that give the same vector to every text with no word (unit norm must hold).
_EMPTY_FEATURE: Final = "\x00empty"
_BIGRAM_WEIGHT: Final = 0.5
_BLOCK: Final = 2048
# Past this many distinct features the table is dropped and rebuilt (bounded memory).
_MEMO_LIMIT: Final = 1 << 21


class HashEmbedder:
    """A deterministic hashing embedder — a TEST DOUBLE, not a semantic model.

    Word unigrams (weight 1) and bigrams (weight 0.5) of the lower-cased text are each hashed
    (blake2b, so stable across processes) to two dimensions; rows are L2-normalised.
    Contract: texts sharing a word always have a positive cosine, and unrelated short texts
    a cosine near zero — what tests of vector search need. Weights are deliberately
    unsigned: with the usual random signs, colliding words of opposite sign can cancel a
    shared word (measured: ~1% of 5-word pairs sharing one word scored <= 0); without signs
    every coordinate is >= 0, so a shared word's coordinates can only add. Two dimensions
    per feature keep two words from colliding completely (odds 1 in dim², not 1 in dim).
    Safe to share between threads (one lock around the feature table).
    """

    def __init__(self, dim: int = 384) -> None:
        if dim < 8:
            raise ConfigError(f"hash embedder dim {dim} is too small (at least 8)")
        self.model_id: str = HASH_MODEL_ID
        self.dim: int = dim
        #: The default cosine floor of a passage search (ADR 0198).
        self.default_min_score: float = HASH_MIN_SCORE
        self._lock = threading.Lock()
        self._closed = False
        self._reset()

    def _reset(self) -> None:
        # Features are hashed once and kept in a table: a text becomes a list of feature ids,
        # and numpy gathers their columns and weights in one step per call.
        self._words: dict[str, int] = {}
        self._pairs: dict[int, int] = {}
        self._cols = np.zeros((0, 2), dtype=np.int64)
        self._vals = np.zeros((0, 2), dtype=np.float64)
        self._new: list[str] = []
        self._new_weights: list[float] = []
        self._empty = self._add(_EMPTY_FEATURE, 1.0)
        self._commit()

    def _add(self, feature: str, weight: float) -> int:
        # New features are hashed in one vectorised pass by ``_commit``.
        self._new.append(feature)
        self._new_weights.append(weight)
        return len(self._cols) + len(self._new) - 1

    def _commit(self) -> None:
        if not self._new:
            return
        digests = b"".join(
            hashlib.blake2b(f.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            for f in self._new
        )
        h = np.frombuffer(digests, dtype="<u8").astype(np.uint64)
        dim = np.uint64(self.dim)
        col_a = h % dim
        col_b = (h >> np.uint64(24)) % dim
        same = col_a == col_b
        # Two distinct dimensions per feature, chosen by further bits of the same hash.
        col_b[same] = (
            col_a[same] + np.uint64(1) + (h[same] >> np.uint64(48)) % (dim - np.uint64(1))
        ) % dim
        weights = np.asarray(self._new_weights, dtype=np.float64)
        self._cols = np.concatenate([self._cols, np.stack([col_a, col_b], axis=1).astype(np.int64)])
        self._vals = np.concatenate([self._vals, np.stack([weights, weights], axis=1)])
        self._new = []
        self._new_weights = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts`` deterministically into unit rows ``[len(texts), dim]``."""
        if self._closed:
            raise EmbedderError(f"embedder {HASH_MODEL_ID} is closed")
        n, dim = len(texts), self.dim
        if n == 0:
            return np.zeros((0, dim), dtype=np.float32)
        with self._lock:
            if len(self._cols) > _MEMO_LIMIT:
                self._reset()
            ids, counts = self._feature_ids(texts)
            self._commit()
            cols = self._cols[ids]
            vals = self._vals[ids]
        out = np.empty((n, dim), dtype=np.float32)
        ends = np.cumsum(np.asarray(counts, dtype=np.int64))
        # Densify in blocks of rows so the float64 scratch stays small and cache-resident.
        for start in range(0, n, _BLOCK):
            stop = min(start + _BLOCK, n)
            lo = int(ends[start - 1]) if start else 0
            hi = int(ends[stop - 1])
            rows = np.repeat(np.arange(stop - start, dtype=np.int64) * dim, counts[start:stop])
            flat = (cols[lo:hi] + rows[:, None]).ravel()
            dense = np.bincount(
                flat, weights=vals[lo:hi].ravel(), minlength=(stop - start) * dim
            ).reshape(stop - start, dim)
            norms = np.linalg.norm(dense, axis=1)
            # Never zero: every text has at least one feature, and weights are positive.
            np.divide(dense, norms[:, None], out=out[start:stop], casting="same_kind")
        return out

    def _feature_ids(self, texts: Sequence[str]) -> tuple[list[int], list[int]]:
        words_memo, pairs_memo, add, findall = self._words, self._pairs, self._add, _WORD.findall
        ids: list[int] = []
        counts: list[int] = []
        append = ids.append
        for text in texts:
            words = findall(text.lower())
            if not words:
                append(self._empty)
                counts.append(1)
                continue
            prev_word = ""
            prev = -1
            for word in words:
                fid = words_memo.get(word)
                if fid is None:
                    fid = words_memo[word] = add(word, 1.0)
                append(fid)
                if prev >= 0:
                    # Pairs are memoised by the two ids; the feature itself is hashed from
                    # the words, so vectors do not depend on the order features were seen.
                    key = (prev << 32) | fid
                    pid = pairs_memo.get(key)
                    if pid is None:
                        pid = pairs_memo[key] = add(prev_word + " " + word, _BIGRAM_WEIGHT)
                    append(pid)
                prev, prev_word = fid, word
            counts.append(2 * len(words) - 1)
        return ids, counts

    def close(self) -> None:
        """Mark the embedder closed; later ``embed`` calls raise ``EmbedderError``."""
        self._closed = True


_KINDS: Final = ("local", "hash", "http", "uds")


def make_embedder(
    kind: str,
    *,
    url: str | None = None,
    uds: str | None = None,
    model: str | None = None,
    dim: int | None = None,
) -> Embedder:
    """Build the embedder of ``kind`` (local, hash, http or uds); ``ConfigError`` on bad input.

    ``model`` ``None``: the kind's default — the embedded model for ``local``, the reference's
    ``bge-base-en-v1.5`` for an ``http`` or ``uds`` server.

    Nothing is loaded or contacted here: the local model loads on first use, and a remote
    embedder is contacted by its ``probe()`` (or first use).
    """
    if kind not in _KINDS:
        raise ConfigError(f"embedder kind {kind!r}: use local, hash, http or uds")
    if url is not None and uds is not None:
        raise ConfigError("an embedder URL and an embedder socket are exclusive; set only one")
    if dim is not None and dim <= 0:
        raise ConfigError(f"embedding dim {dim} must be positive")
    if kind in ("local", "hash") and (url is not None or uds is not None):
        raise ConfigError(f"the {kind} embedder takes no URL or socket")
    if kind == "local":
        if model not in (None, LOCAL_MODEL_ID):
            raise ConfigError(
                f"embedding model {model!r} is not the embedded model {LOCAL_MODEL_ID!r}; "
                "use an http or uds embedder to serve another model"
            )
        if dim is not None and dim != LOCAL_DIM:
            raise ConfigError(f"the embedded model has {LOCAL_DIM} dimensions, not {dim}")
        return LocalEmbedder()
    if kind == "hash":
        return HashEmbedder(dim if dim is not None else LOCAL_DIM)
    if model is None:
        model = REFERENCE_MODEL
    if kind == "http":
        if url is None:
            raise ConfigError("the http embedder needs a URL (LCG_EMBEDDING_URL)")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"embedder URL {url!r} needs an http(s) scheme and a host")
        return HttpEmbedder(url, model, dim=dim)
    if uds is None:
        raise ConfigError("the uds embedder needs a socket path (LCG_EMBEDDER_UDS)")
    if not os.path.exists(uds):
        raise ConfigError(f"embedder socket {uds} does not exist")
    return UdsEmbedder(uds, model, dim=dim)


if TYPE_CHECKING:
    # Static proof (mypy) that every implementation satisfies the protocol.
    def _conforms(
        local: LocalEmbedder,
        hashed: HashEmbedder,
        http: HttpEmbedder,
        uds: UdsEmbedder,
        standby: StandbyEmbedder,
    ) -> list[Embedder]:
        return [local, hashed, http, uds, standby]
