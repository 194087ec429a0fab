"""Every on-disk name of the workspace and its streams, in one place."""

from __future__ import annotations

from typing import Final

__all__ = [
    "BOUNDS_FILE",
    "CACHE_DIR",
    "CHECKPOINTS_DIR",
    "CLEARED_FILE",
    "DAMAGE_FILE",
    "DB_DIR",
    "DEFAULT_GROUP",
    "EMBEDDINGS_CACHE_DIR",
    "EMBEDDINGS_KEYS_SUFFIX",
    "EMBEDDINGS_LOCK_FILE",
    "EMBEDDINGS_META_FILE",
    "EMBEDDINGS_VECS_SUFFIX",
    "EMBEDDING_MODEL_FILE",
    "GENERATION_FILE",
    "GROUP_ONTOLOGY_DIR",
    "LCG_DIR",
    "LEGACY_LCG_DIR",
    "LOCK_FILE",
    "ONTOLOGY_FILE",
    "ONTOLOGY_HASH_FILE",
    "ONTOLOGY_SIDECAR_FILE",
    "QUARANTINE_DIR",
    "REMOVING_SUFFIX",
    "REPLICA_DIR",
    "RESETS_FILE",
    "SEGMENT_DIGITS",
    "SEGMENT_SUFFIX",
    "SOCKET_FILE",
    "TEMP_SUFFIX",
    "TEXT_DIR",
    "TEXT_SNAPSHOT_SUFFIX",
    "VECTORS_DIR",
    "VECTORS_META_FILE",
    "WAL_DIR",
    "WORKSPACE_LOCK_FILE",
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

#: Groups whose projections lack events the stream lost (``Projector``), inside ``LCG_DIR``.
DAMAGE_FILE: Final = "damaged-groups.json"
#: Groups cleared by ``knowledge_clear_all`` with their streams kept, inside ``DB_DIR``.
CLEARED_FILE: Final = "cleared.json"
#: Groups reset by a catch-up whose reset no rebuild has reported yet, inside ``DB_DIR``.
RESETS_FILE: Final = "resets.json"
#: The exclusive lock of an open workspace, inside ``LCG_DIR``.
WORKSPACE_LOCK_FILE: Final = "workspace.lock"
#: The embedding cache, inside ``LCG_DIR/CACHE_DIR``; then ``<model>-<dim>/``.
EMBEDDINGS_CACHE_DIR: Final = "embeddings"
EMBEDDINGS_META_FILE: Final = "meta.json"
EMBEDDINGS_LOCK_FILE: Final = ".lock"
EMBEDDINGS_KEYS_SUFFIX: Final = ".keys"
EMBEDDINGS_VECS_SUFFIX: Final = ".vecs"
#: A group's BM25 snapshot: ``TEXT_DIR/<encoded group><suffix>``.
TEXT_SNAPSHOT_SUFFIX: Final = ".bm25"
#: A group's vector snapshot metadata: ``VECTORS_DIR/<encoded group>/<file>``.
VECTORS_META_FILE: Final = "meta.msgpack"
#: A replica's verified-segment records, inside ``LCG_DIR``.
REPLICA_DIR: Final = "replica"
#: Ontology files under the workspace root.
ONTOLOGY_FILE: Final = "ontology.yaml"
GROUP_ONTOLOGY_DIR: Final = "ontology"
LEGACY_LCG_DIR: Final = ".graphiti"
ONTOLOGY_HASH_FILE: Final = "ontology-hash.json"


def segment_name(first_seq: int) -> str:
    """The file name of a segment whose first line has ``first_seq``."""
    return f"{first_seq:0{SEGMENT_DIGITS}d}{SEGMENT_SUFFIX}"
