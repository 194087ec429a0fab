"""The on-disk format of a group's text snapshot (``text/<group>.bm25``) and its reading.

One msgpack document per group — its applied position, every kind's documents and BM25
index, the source index — sealed with a CRC-32 header (``lcg.projections._checksum``,
ADR 0155). ``read_snapshot`` checks the seal before decoding and rewords every failure as
``DamagedFile`` naming the path; a snapshot of a newer format is a ``ProjectionError`` (a
newer lcg wrote the workspace).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import msgspec

from lcg.errors import ProjectionError
from lcg.projections._bm25 import IndexSnapshot
from lcg.projections._checksum import DamagedFile, describe_failure, encode_sealed, unseal

__all__ = ["FORMAT", "GroupSnapshot", "KindState", "encode_snapshot", "read_snapshot"]

#: 2: the analyzer stems, episodes keep their ``source`` part, the source index is saved.
FORMAT: Final = 2


class KindState(msgspec.Struct, kw_only=True):
    """The snapshot of one kind: each doc's parts and the index over them."""

    parts: dict[str, dict[str, str]]
    index: IndexSnapshot


class GroupSnapshot(msgspec.Struct, kw_only=True):
    """The snapshot file of one group: its applied position and every kind's state."""

    format: int
    group_id: str
    generation: str
    seq: int
    kinds: dict[str, KindState]
    #: The ``ANALYZER_VERSION`` that made the terms (absent before format 2).
    analyzer: str = ""
    #: The source index: one document per source file, keyed by the source (format 2).
    sources: IndexSnapshot | None = None
    #: Sources whose document in ``sources`` is out of date (re-indexed on the next search).
    stale_sources: list[str] = []


class _Header(msgspec.Struct):
    """The leading fields of a snapshot: enough to decide whether to read the rest."""

    format: int
    group_id: str
    analyzer: str = ""


_ENCODER: Final = msgspec.msgpack.Encoder()
_DECODER: Final = msgspec.msgpack.Decoder(GroupSnapshot)
_HEADER: Final = msgspec.msgpack.Decoder(_Header)


def encode_snapshot(snap: GroupSnapshot) -> bytearray:
    """The sealed bytes of ``snap``."""
    return encode_sealed(_ENCODER, snap)


def read_snapshot(path: Path, group_id: str, analyzer: str) -> tuple[GroupSnapshot | None, bool]:
    """The snapshot at ``path`` and whether its checksum was verified (``False``: written
    before checksums); ``None`` when an older lcg or another ``analyzer`` made it.

    ``DamagedFile`` when the file cannot be trusted; ``ProjectionError`` when a newer lcg
    wrote it.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DamagedFile(f"text snapshot {path} is unreadable ({exc})", content=False) from exc
    try:
        data, verified = unseal(raw)
        head = _HEADER.decode(data)
        if head.format > FORMAT:
            raise ProjectionError(
                f"text snapshot {path} has format {head.format}, this lcg reads up to {FORMAT}: "
                f"a newer lcg wrote it; run that lcg, or delete {path.parent} and let this one "
                "rebuild it from the streams"
            )
        if head.group_id != group_id:
            raise ValueError(f"it holds group {head.group_id!r}")
        if head.format < FORMAT or head.analyzer != analyzer:
            return None, verified
        return _DECODER.decode(data), verified
    except ProjectionError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever damaged bytes raise is damage
        raise DamagedFile(f"text snapshot {path} is damaged ({describe_failure(exc)})") from exc
