"""Import a reference workspace: parse its Cypher streams against the documented templates,
apply them to an in-memory model of its tables, emit our events (ADR 0170, ADR 0194)."""

from lcg.ingest.reference.importer import GroupImport, ImportResult, Skipped, import_reference

__all__ = ["GroupImport", "ImportResult", "Skipped", "import_reference"]
