"""How a chunk episode names the file it was cut from: the one place the convention is spelled.

A chunk of a file is recorded as an episode named after its chunk id whose
``source_description`` is ``<source file>:<chunk id>`` (``lcg.ingest`` writes it; search, the
UI and the CLI read the file back from it). An episode added without a file
(``knowledge_add_episode``) has a description that does not end in ``:<its name>``: it has no
file, and is its own source for search.
"""

from __future__ import annotations

__all__ = ["chunk_description", "chunk_file"]


def chunk_description(source_file: str, chunk_id: str) -> str:
    """The ``source_description`` of the chunk ``chunk_id`` of ``source_file``."""
    return f"{source_file}:{chunk_id}"


def chunk_file(chunk_id: str, source_description: str) -> str | None:
    """The file of the episode named ``chunk_id`` described as ``source_description``
    (``None``: not a chunk of a file)."""
    suffix = chunk_description("", chunk_id)
    if not chunk_id or not source_description.endswith(suffix):
        return None
    return source_description[: -len(suffix)] or None
