"""The streams' on-disk names, and the workspace's places that ``Config`` resolves (the
state directory and the directories and socket inside it: ``config``, a leaf, reads them
here). Every other file's name is kept by the package that writes it: the projections'
in ``projections/_layout.py``, the workspace layer's in ``workspace/_layout.py``, the Cypher
sandbox's in ``query/open_sandbox.py`` (ADR 0226)."""

from __future__ import annotations

from typing import Final

__all__ = [
    "BOUNDS_FILE",
    "CACHE_DIR",
    "CHECKPOINTS_DIR",
    "DB_DIR",
    "DEFAULT_GROUP",
    "EMBEDDING_MODEL_FILE",
    "GENERATION_FILE",
    "LCG_DIR",
    "LOCK_FILE",
    "ONTOLOGY_SIDECAR_FILE",
    "QUARANTINE_DIR",
    "REMOVING_SUFFIX",
    "REPLICA_DIR",
    "SEGMENT_DIGITS",
    "SEGMENT_SUFFIX",
    "SOCKET_FILE",
    "TEMP_SUFFIX",
    "TEXT_DIR",
    "VECTORS_DIR",
    "WAL_DIR",
    "segment_name",
]

#: The workspace's state directory, relative to the workspace root.
LCG_DIR: Final = ".lcg"
#: Root of the per-group streams, inside ``LCG_DIR``.
WAL_DIR: Final = "wal"
#: The graph projection (Kuzu), inside ``LCG_DIR``.
DB_DIR: Final = "db"
#: The vector projection (hnswlib), inside ``LCG_DIR``.
VECTORS_DIR: Final = "vectors"
#: The text projection (BM25), inside ``LCG_DIR``.
TEXT_DIR: Final = "text"
#: Derived caches (embeddings), inside ``LCG_DIR``.
CACHE_DIR: Final = "cache"
#: The service's Unix socket, inside ``LCG_DIR``.
SOCKET_FILE: Final = "service.sock"

#: The group written to when a write names none.
DEFAULT_GROUP: Final = "liminis"

#: Stream segment files: ``<first seq, zero-padded>.jsonl``.
SEGMENT_SUFFIX: Final = ".jsonl"
SEGMENT_DIGITS: Final = 12

#: Sidecars inside a group's stream directory.
GENERATION_FILE: Final = ".wal-generation.json"
BOUNDS_FILE: Final = ".wal-bounds.json"
ONTOLOGY_SIDECAR_FILE: Final = ".wal-ontology.json"
EMBEDDING_MODEL_FILE: Final = ".wal-embedding-model.json"
CHECKPOINTS_DIR: Final = ".checkpoints"
QUARANTINE_DIR: Final = ".quarantine"
#: The single-writer advisory lock of a group stream.
LOCK_FILE: Final = ".writer.lock"
#: Suffix of files written before an atomic rename.
TEMP_SUFFIX: Final = ".tmp"
#: Suffix of a tombstone: a directory renamed away to be deleted (``.<name>.<hex><suffix>``).
REMOVING_SUFFIX: Final = ".removing"

#: A replica's verified-segment records, inside ``LCG_DIR`` (``replication/``'s, still named
#: here while that package is reworked).
REPLICA_DIR: Final = "replica"


def segment_name(first_seq: int) -> str:
    """The file name of a segment whose first line has ``first_seq``."""
    return f"{first_seq:0{SEGMENT_DIGITS}d}{SEGMENT_SUFFIX}"
