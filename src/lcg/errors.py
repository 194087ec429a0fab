"""The error tree of lcg. Every error lcg raises on purpose is an ``LcgError``.

    LcgError
    ├── ConfigError            a setting or flag is invalid
    ├── StreamError            the event stream (WAL) refused or failed an operation
    │   ├── StreamLockedError      another writer holds the group's stream
    │   ├── GroupNameError         a group id cannot name a stream directory
    │   ├── GenerationError        the stream's generation is unknown or inconsistent
    │   ├── CorruptFileError       a metadata file is unreadable (name + remedy)
    │   └── MarkError              a mark (checkpoint) operation failed
    ├── ProjectionError        a projection could not apply, load or answer
    │   ├── ProjectionIOError      it cannot write to disk now (full disk, I/O error); it lags
    │   └── RebuildRefusedError    a rebuild was refused (non-empty group, busy, ...)
    ├── EmbedderError          the embedder failed or answered with a bad shape
    ├── ExtractionError        the extractor (LLM) failed
    │   └── CassetteError          cassette corrupt, duplicate key or miss
    └── RequestError           a client request is invalid
        ├── InvalidParamsError     a parameter is missing or malformed
        ├── MethodNotFoundError    no such method
        ├── NotFoundError          the thing a request names does not exist
        ├── ReadOnlyError          a write was sent to a read-only surface
        └── DegradedError          the service has no usable projections

This module imports nothing of lcg's: every package may use it.
"""

from __future__ import annotations

__all__ = [
    "CassetteError",
    "ConfigError",
    "CorruptFileError",
    "DegradedError",
    "EmbedderError",
    "ExtractionError",
    "GenerationError",
    "GroupNameError",
    "InvalidParamsError",
    "LcgError",
    "MarkError",
    "MethodNotFoundError",
    "NotFoundError",
    "ProjectionError",
    "ProjectionIOError",
    "ReadOnlyError",
    "RebuildRefusedError",
    "RequestError",
    "StreamError",
    "StreamLockedError",
]


class LcgError(Exception):
    """Root of every error lcg raises deliberately."""


class ConfigError(LcgError):
    """A setting, environment variable or flag is invalid."""


class StreamError(LcgError):
    """The event stream refused or failed an operation."""


class StreamLockedError(StreamError):
    """Another writer, in this or another process, holds the group's stream."""


class GroupNameError(StreamError):
    """A group id cannot name a stream directory (empty, too long, case collision)."""


class GenerationError(StreamError):
    """The stream's generation is unknown, or lines of two generations were found."""


class CorruptFileError(StreamError):
    """A metadata file is unreadable; the message names the file and the remedy."""


class MarkError(StreamError):
    """A mark (checkpoint) could not be created, found or deleted."""


class ProjectionError(LcgError):
    """A projection could not apply events, load its snapshot or answer a query."""


class ProjectionIOError(ProjectionError):
    """A projection cannot write to disk now (full disk, I/O error): it lags the stream and
    catches up from it once it can; no event is skipped."""


class RebuildRefusedError(ProjectionError):
    """A rebuild was refused: the group holds data, the service is busy, or similar."""


class EmbedderError(LcgError):
    """The embedder failed or answered with a vector of the wrong shape."""


class ExtractionError(LcgError):
    """The extractor (an LLM provider) failed or answered with unusable output."""


class CassetteError(ExtractionError):
    """A cassette is corrupt, holds a duplicate key, or has no record for a call."""


class RequestError(LcgError):
    """A client request is invalid."""


class InvalidParamsError(RequestError):
    """A request parameter is missing or malformed."""


class MethodNotFoundError(RequestError):
    """The requested method does not exist or is hidden from this surface."""


class NotFoundError(RequestError):
    """The entity, edge, episode, job or mark a request names does not exist."""


class ReadOnlyError(RequestError):
    """A write was sent to a read-only surface (a replica, or read-only Cypher)."""


class DegradedError(RequestError):
    """The service has no usable projections; recovery is required."""
