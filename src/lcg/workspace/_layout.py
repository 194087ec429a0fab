"""The on-disk names the workspace layer writes, in one place (the stream's names and the
workspace's top-level places are ``events/layout.py``'s)."""

from __future__ import annotations

from typing import Final

__all__ = [
    "GROUP_ONTOLOGY_DIR",
    "LEGACY_LCG_DIR",
    "ONTOLOGY_FILE",
    "ONTOLOGY_HASH_FILE",
    "WORKSPACE_LOCK_FILE",
]

#: The exclusive lock of an open workspace, inside ``.lcg/``.
WORKSPACE_LOCK_FILE: Final = "workspace.lock"
#: The workspace's ontology, inside ``.lcg/``; each group's own is
#: ``GROUP_ONTOLOGY_DIR/<encoded group>.yaml`` there.
ONTOLOGY_FILE: Final = "ontology.yaml"
GROUP_ONTOLOGY_DIR: Final = "ontology"
#: Where the reference kept its state: an ontology found only there is still read.
LEGACY_LCG_DIR: Final = ".graphiti"
#: The ontology of the last successful ingest or rebuild, inside ``.lcg/``.
ONTOLOGY_HASH_FILE: Final = "ontology-hash.json"
