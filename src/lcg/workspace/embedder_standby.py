"""The workspace's side of an embedder that may be away (ADR 0171).

``standby_for`` wraps a remote (http/uds) embedder when the workspace opens: it probes the
server (unless ``LCG_EMBEDDING_DIM`` says the dimension, which skips the probe at open), and
when the server is away it opens with a provisional identity — the one most of the vector
snapshots were made with, else the one the streams' ``.wal-embedding-model.json`` record,
else the configured model and dimension. The vector snapshots of that identity load as they
are, so an embedder that comes back as it was costs no re-embedding.

``recover`` is what the service runs while the embedder is away (and what a caller may run
at any time): probe; if the server answers with another identity, adopt it (the vector
projection is emptied and rebuilt from the streams, as a restart with that embedder would);
then catch up the vector projection of every group that lacks vectors. Graph and text were
applied all along, so only the vectors are replayed, batch by batch with the model run
outside the group's lock (``vector_drain``, ADR 0201).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Final, Protocol

from lcg.config import Config
from lcg.errors import EmbedderError
from lcg.events import read_embedding_model
from lcg.extract import Embedder, HttpEmbedder, StandbyEmbedder
from lcg.projections import (
    EmbeddingCache,
    snapshot_identities,
)
from lcg.workspace.vector_drain import DrainHost, DrainLocks, drain_group

__all__ = ["PLACEHOLDER_DIM", "Host", "provisional_identity", "recover", "standby_for"]


class _Locks(DrainLocks, Protocol):
    def write(self) -> AbstractContextManager[None]: ...


class Host(DrainHost, Protocol):
    """What ``recover`` needs of the workspace: the drainer's needs and the embedder's own
    (``Workspace`` is one; typed this narrowly because the workspace module imports this one:
    no import cycle)."""

    cache: EmbeddingCache

    @property
    def embedder(self) -> Embedder: ...
    @property
    def rw(self) -> _Locks: ...


#: The dimension assumed when nothing says it (the reference's bge-base-en-v1.5 has 768);
#: a server that answers with another one is adopted (``recover``).
PLACEHOLDER_DIM: Final = 768


def provisional_identity(
    model: str, dim: int | None, vectors_dir: Path, wal_dir: Path
) -> tuple[str, int]:
    """The ``(model_id, dim)`` to open with while the embedder cannot be asked.

    ``dim`` (``LCG_EMBEDDING_DIM``) restricts the choice to identities of that dimension.
    """
    counts = snapshot_identities(vectors_dir)
    if not counts:
        for gdir in sorted(wal_dir.iterdir()) if wal_dir.is_dir() else ():
            sidecar = read_embedding_model(gdir) if gdir.is_dir() else None
            if sidecar is not None:
                key = (sidecar.model, sidecar.dim)
                counts[key] = counts.get(key, 0) + 1
    fitting = [(n, key) for key, n in counts.items() if dim is None or key[1] == dim]
    if fitting:
        return max(fitting)[1]
    return (model, dim if dim is not None else PLACEHOLDER_DIM)


def standby_for(config: Config, embedder: HttpEmbedder) -> StandbyEmbedder:
    """``embedder`` wrapped so that its absence degrades only the vectors."""
    away: str | None = None
    if config.embedding_dim is None:
        try:
            model_id, dim = embedder.probe()
        except EmbedderError as exc:
            away = str(exc)
        else:
            return StandbyEmbedder(embedder, model_id, dim, confirmed=True)
    model_id, dim = provisional_identity(
        embedder.requested_model, config.embedding_dim, config.vectors_dir, config.wal_dir
    )
    return StandbyEmbedder(embedder, model_id, dim, away=away)


def recover(ws: Host) -> str | None:
    """Probe an away embedder and catch up the vectors; why it is still away, or ``None``."""
    embedder = ws.embedder
    if not isinstance(embedder, StandbyEmbedder):
        return None
    if embedder.away is not None or not embedder.confirmed:
        embedder.refresh(force=True)
    arrived = embedder.arrived
    if arrived is not None:
        _adopt(ws, embedder, *arrived)
    reason = embedder.away
    if reason is not None:
        return reason
    lagging = (
        list(ws.store.groups()) if arrived is not None else list(ws.projector.embedder_failures)
    )
    for group_id in lagging:
        try:
            # Batch by batch, the model outside the group's lock (ADR 0201).
            drain_group(ws, group_id)
        except EmbedderError:
            break  # away again: the next probe tries
        except Exception:  # noqa: BLE001 - the group's own damage is reported by its status
            continue
    return embedder.away


def _adopt(ws: Host, embedder: StandbyEmbedder, model_id: str, dim: int) -> None:
    """Take the identity the returned server reports: a vector projection (and cache) of it."""
    with ws.rw.write():
        ws.vectors.reset_identity(model_id, dim)
        embedder.adopt(model_id, dim)
        old, ws.cache = ws.cache, EmbeddingCache.for_embedder(ws.config.cache_dir, embedder)
        ws.text_embedder.cache = ws.cache
        ws.text_embedder.model_id, ws.text_embedder.dim = model_id, dim
        old.close()
