"""The on-disk names the projections write, in one place (the stream's names and the
workspace's top-level places are ``events/layout.py``'s; where each projection's directory
lies is ``Config``'s)."""

from __future__ import annotations

from typing import Final

__all__ = [
    "CLEARED_FILE",
    "DAMAGE_FILE",
    "EMBEDDINGS_DIR",
    "EMBEDDINGS_KEYS_SUFFIX",
    "EMBEDDINGS_LOCK_FILE",
    "EMBEDDINGS_META_FILE",
    "EMBEDDINGS_VECS_SUFFIX",
    "RESETS_FILE",
    "TEXT_SNAPSHOT_SUFFIX",
    "VECTORS_META_FILE",
]

#: Groups whose projections lack events the stream lost (``Projector``), inside ``.lcg/``.
DAMAGE_FILE: Final = "damaged-groups.json"
#: Groups cleared by ``knowledge_clear_all`` with their streams kept, inside the graph's
#: directory.
CLEARED_FILE: Final = "cleared.json"
#: Groups reset by a catch-up whose reset no rebuild has reported yet, inside the graph's
#: directory.
RESETS_FILE: Final = "resets.json"
#: The embedding caches, inside the workspace's cache directory; then ``<model>-<dim>/``
#: holding the files below.
EMBEDDINGS_DIR: Final = "embeddings"
EMBEDDINGS_META_FILE: Final = "meta.json"
EMBEDDINGS_LOCK_FILE: Final = ".lock"
EMBEDDINGS_KEYS_SUFFIX: Final = ".keys"
EMBEDDINGS_VECS_SUFFIX: Final = ".vecs"
#: A group's BM25 snapshot: ``<text dir>/<encoded group><suffix>``.
TEXT_SNAPSHOT_SUFFIX: Final = ".bm25"
#: A group's vector snapshot metadata: ``<vectors dir>/<encoded group>/<file>``.
VECTORS_META_FILE: Final = "meta.msgpack"
