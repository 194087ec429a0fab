"""Provenance sidecars of a group stream: ontology and embedding model.

Both are informational: they describe what the stream's producer ran with. A corrupt sidecar
reads as ``None`` and is rewritten at the next successful write; so does one that is a
symlink, not a regular file or larger than a sidecar may be (``events.guarded``): it is
never read through.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from lcg.events.files import atomic_write
from lcg.events.guarded import DEFAULT_MAX_SIDECAR_BYTES, UnsafeFileError, read_small
from lcg.events.layout import EMBEDDING_MODEL_FILE, ONTOLOGY_SIDECAR_FILE

__all__ = [
    "EmbeddingModelSidecar",
    "OntologySidecar",
    "read_embedding_model",
    "read_ontology_sidecar",
    "write_embedding_model",
    "write_ontology_sidecar",
]


class OntologySidecar(msgspec.Struct, kw_only=True):
    """``.wal-ontology.json``: the ontology the stream's producer used."""

    hash: str
    mode: str | None
    entity_types: list[str] = []
    relation_types: list[str] = []
    written_at: str = ""


class EmbeddingModelSidecar(msgspec.Struct, kw_only=True):
    """``.wal-embedding-model.json``: the embedder the stream's projections were built with."""

    model: str
    dim: int
    written_at: str = ""


_encoder = msgspec.json.Encoder()


def _read(path: Path, kind: type[msgspec.Struct]) -> msgspec.Struct | None:
    try:
        data = read_small(path, DEFAULT_MAX_SIDECAR_BYTES)
        return None if data is None else msgspec.json.decode(data, type=kind)
    except (OSError, ValueError, UnsafeFileError):
        return None


def read_ontology_sidecar(group_dir: Path) -> OntologySidecar | None:
    """The ontology sidecar, or ``None`` if absent or unreadable."""
    value = _read(group_dir / ONTOLOGY_SIDECAR_FILE, OntologySidecar)
    return value if isinstance(value, OntologySidecar) else None


def write_ontology_sidecar(group_dir: Path, sidecar: OntologySidecar) -> None:
    """Replace the ontology sidecar atomically."""
    atomic_write(group_dir / ONTOLOGY_SIDECAR_FILE, _encoder.encode(sidecar))


def read_embedding_model(group_dir: Path) -> EmbeddingModelSidecar | None:
    """The embedding-model sidecar, or ``None`` if absent or unreadable."""
    value = _read(group_dir / EMBEDDING_MODEL_FILE, EmbeddingModelSidecar)
    return value if isinstance(value, EmbeddingModelSidecar) else None


def write_embedding_model(group_dir: Path, sidecar: EmbeddingModelSidecar) -> None:
    """Replace the embedding-model sidecar atomically."""
    atomic_write(group_dir / EMBEDDING_MODEL_FILE, _encoder.encode(sidecar))
