"""A remote embedder that may be away: the workspace opens and serves without it.

``StandbyEmbedder`` wraps an ``HttpEmbedder`` (or ``UdsEmbedder``) with an identity
``(model_id, dim)`` fixed when the workspace opens — the probe's answer when the server was
up, else a provisional one (``LCG_EMBEDDING_DIM``, or what the workspace recorded last time).
While the server is away every ``embed`` raises ``EmbedderError`` with the reason and the
remedy at once, and a new probe is tried at most once per ``retry_s`` (``refresh`` probes
now). A probe that answers with another identity than the fixed one is not used for vectors:
it is held in ``arrived`` until the workspace adopts it (``adopt``), which rebuilds the vector
projection as a restart would (ADR 0171).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from lcg.errors import EmbedderError
from lcg.extract._openai_embed import HttpEmbedder

__all__ = ["REPROBE_S", "StandbyEmbedder"]

#: How often an away embedder is probed again, at most (by calls, or the service's loop).
REPROBE_S: Final = 2.0


class StandbyEmbedder:
    """An ``HttpEmbedder`` whose absence degrades the vectors only, never the workspace."""

    def __init__(
        self,
        inner: HttpEmbedder,
        model_id: str,
        dim: int,
        *,
        away: str | None = None,
        confirmed: bool = False,
        retry_s: float = REPROBE_S,
    ) -> None:
        self.inner = inner
        self.model_id = model_id
        self.dim = dim
        self._retry_s = retry_s
        self._lock = threading.Lock()
        self._probing = threading.Lock()
        #: Why the embedder cannot embed now (``None``: it answers, or was not yet asked).
        self._away: str | None = None
        if away is not None:
            self._set_away(away)
        #: A probe answered with this identity since open (``confirmed``: the fixed one).
        self.confirmed = confirmed
        #: The identity a returned server reports when it is not ``(model_id, dim)``.
        self.arrived: tuple[str, int] | None = None
        self._last_try = time.monotonic() if away is not None else 0.0

    @property
    def where(self) -> str:
        """The endpoint (a URL, or ``unix:<path>``)."""
        return self.inner.where

    @property
    def default_min_score(self) -> float:
        """The wrapped embedder's default cosine floor (ADR 0198); known while it is away."""
        return self.inner.default_min_score

    @property
    def away(self) -> str | None:
        """Why vectors cannot be made now, with the remedy; ``None`` when none is known."""
        with self._lock:
            return self._away

    def refresh(self, *, force: bool = True) -> str | None:
        """Probe the server (now, or only if ``retry_s`` passed); ``away`` afterwards.

        Probes run one at a time: a caller finding one in flight gets the last reason.
        """
        with self._lock:
            if self._away is None and self.confirmed and self.arrived is None:
                return None
            if not force and time.monotonic() - self._last_try < self._retry_s:
                return self._away
        if not self._probing.acquire(blocking=False):
            return self.away
        try:
            self._last_try = time.monotonic()
            try:
                identity = self.inner.reprobe()
            except EmbedderError as exc:
                self._set_away(str(exc))
                return self.away
            with self._lock:
                if identity == (self.model_id, self.dim):
                    self.confirmed, self.arrived, self._away = True, None, None
                else:
                    self.arrived = identity
                    model, dim = identity
                    self._away = (
                        f"embedder at {self.where} answers with model {model!r} ({dim}-d), not "
                        f"the {self.model_id!r} ({self.dim}-d) this workspace opened with; the "
                        "vector projection is being rebuilt for it"
                    )
                return self._away
        finally:
            self._probing.release()

    def adopt(self, model_id: str, dim: int) -> None:
        """Take ``(model_id, dim)`` as the identity (the workspace rebuilt its vectors)."""
        with self._lock:
            self.model_id, self.dim = model_id, dim
            self.arrived = None
            self.confirmed = True
            self._away = None

    def _set_away(self, error: str) -> None:
        with self._lock:
            self._away = (
                f"{error}; the vectors wait for it (reads, Cypher and the BM25 legs of "
                "searches work; writes are kept and their vectors catch up): start the "
                "embedding server, or point LCG_EMBEDDING_URL / LCG_EMBEDDER_UDS (or "
                "--embedder-http / --embedder-uds) at one"
            )

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts`` with the server; ``EmbedderError`` at once while it is away."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if not self.confirmed or self.away is not None:
            reason = self.refresh(force=False)
            if reason is not None or not self.confirmed:
                raise EmbedderError(reason or f"embedder at {self.where} has not answered yet")
        try:
            return self.inner.embed(texts)
        except EmbedderError as exc:
            self._set_away(str(exc))
            self._last_try = time.monotonic()
            raise EmbedderError(self.away or str(exc)) from exc

    def close(self) -> None:
        """Close the server's client; later ``embed`` calls raise ``EmbedderError``."""
        self.inner.close()
