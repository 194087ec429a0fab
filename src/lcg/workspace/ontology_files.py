"""Where the workspace keeps its ontologies, and the record of the one its graph was built with.

Files: ``<root>/.lcg/ontology.yaml`` for the workspace (``.graphiti/ontology.yaml`` as a
fallback), ``<root>/.lcg/ontology/<encoded group id>.yaml`` for one group, which wins for that
group; ``<root>/.lcg/ontology-hash.json`` records the ontology of the last successful ingest or
rebuild. What an ontology *is* (parsing, hashing, drift) stays in ``lcg.extract.ontology``;
its storage lives here, so that ``extract`` imports nothing of ``events`` (ADR 0119).
"""

from __future__ import annotations

import threading
from pathlib import Path

import msgspec

from lcg.errors import CorruptFileError, GroupNameError
from lcg.events import LCG_DIR, atomic_write, encode_group
from lcg.extract import (
    NO_ONTOLOGY_HASH,
    Ontology,
    OntologyHashFile,
    hash_record,
    load_ontology_file,
)
from lcg.workspace._layout import (
    GROUP_ONTOLOGY_DIR,
    LEGACY_LCG_DIR,
    ONTOLOGY_FILE,
    ONTOLOGY_HASH_FILE,
)

__all__ = [
    "OntologyLoader",
    "group_ontology_path",
    "hash_file_path",
    "read_hash_file",
    "workspace_ontology_path",
    "write_hash_file",
]

_hash_decode = msgspec.json.Decoder(OntologyHashFile).decode


def workspace_ontology_path(root: Path) -> Path:
    """``<root>/.lcg/ontology.yaml``."""
    return root / LCG_DIR / ONTOLOGY_FILE


def group_ontology_path(root: Path, group_id: str) -> Path:
    """``<root>/.lcg/ontology/<encoded group id>.yaml``."""
    return root / LCG_DIR / GROUP_ONTOLOGY_DIR / f"{encode_group(group_id)}.yaml"


class OntologyLoader:
    """Resolves the ontology of each group, loading each file once (restart to reload).

    ``root`` is the workspace root (``Config.ontology_root``: ``LIMINIS_WORKSPACE_ROOT``, else
    the workspace itself); ``None`` means no ontology. The workspace file is loaded when the
    loader is made (the service's start, as the reference documents: "loaded once at startup");
    a group's file on that group's first use. A file added or edited later is not seen.
    Thread-safe.
    """

    def __init__(self, root: Path | None) -> None:
        self._root = root
        self._lock = threading.Lock()
        self._workspace: Ontology | None = None
        self._workspace_loaded = False
        self._workspace_found = False
        self._groups: dict[str, Ontology | None] = {}
        self._workspace_locked()

    @property
    def root(self) -> Path | None:
        """The workspace root ontologies are read under."""
        return self._root

    def workspace(self) -> Ontology | None:
        """The workspace ontology (``.lcg/ontology.yaml``, else ``.graphiti/ontology.yaml``)."""
        with self._lock:
            return self._workspace_locked()

    def _workspace_locked(self) -> Ontology | None:
        if not self._workspace_loaded:
            self._workspace_loaded = True
            if self._root is not None:
                primary = workspace_ontology_path(self._root)
                legacy = self._root / LEGACY_LCG_DIR / ONTOLOGY_FILE
                path = primary if primary.exists() else legacy
                self._workspace_found = path.exists()
                self._workspace = load_ontology_file(path)
        return self._workspace

    def workspace_found(self) -> bool:
        """Whether a workspace ontology file existed when it was loaded (not: exists now)."""
        with self._lock:
            self._workspace_locked()
            return self._workspace_found

    def for_group(self, group_id: str) -> Ontology | None:
        """The group's own ontology if it has one, else the workspace's, else ``None``."""
        with self._lock:
            if group_id in self._groups:
                return self._groups[group_id]
            found: Ontology | None = None
            if self._root is not None:
                try:
                    found = load_ontology_file(group_ontology_path(self._root, group_id))
                except GroupNameError:
                    found = None
            if found is None:
                found = self._workspace_locked()
            self._groups[group_id] = found
            return found

    def hash_for(self, group_id: str) -> str:
        """The content hash of the group's ontology, ``"none"`` without one."""
        onto = self.for_group(group_id)
        return onto.hash if onto is not None else NO_ONTOLOGY_HASH


def hash_file_path(root: Path) -> Path:
    """``<root>/.lcg/ontology-hash.json``."""
    return root / LCG_DIR / ONTOLOGY_HASH_FILE


def read_hash_file(root: Path) -> OntologyHashFile | None:
    """The recorded hash file, ``None`` if absent; ``CorruptFileError`` if unreadable."""
    path = hash_file_path(root)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CorruptFileError(f"{path} is unreadable ({exc}); delete it to re-baseline") from exc
    try:
        return _hash_decode(data)
    except msgspec.DecodeError as exc:
        raise CorruptFileError(
            f"{path} is corrupt ({exc}); delete it: the next ingest writes it again"
        ) from exc


def write_hash_file(root: Path, onto: Ontology | None) -> None:
    """Record ``onto`` as the ontology of the graph (atomic replace); clears drift."""
    path = hash_file_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, msgspec.json.encode(hash_record(onto)))
