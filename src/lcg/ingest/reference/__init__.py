"""Import a reference workspace: replay its Cypher streams in its schema, emit our events."""

from lcg.ingest.reference.importer import GroupImport, ImportResult, Skipped, import_reference

__all__ = ["GroupImport", "ImportResult", "Skipped", "import_reference"]
