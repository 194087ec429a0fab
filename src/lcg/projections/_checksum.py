"""Checksums of projection files, so a damaged snapshot is found on load, never served.

Two shapes, both CRC-32 (``zlib.crc32``, ADR 0155):

* *sealed* files — the text snapshots (``text/*.bm25``) and the vector metadata
  (``meta.msgpack``), whose bytes lcg encodes itself — carry a 20-byte header before the
  payload::

      magic  8 bytes  b"\\xc1LCGCRC1"   (0xc1 is the one byte msgpack never uses, so a
                                         file of the previous version, bare msgpack, is
                                         told apart by its first byte)
      crc    4 bytes  big-endian CRC-32 of the payload
      length 8 bytes  big-endian byte count of the payload (a truncation is named as one)

* files a library writes (numpy's ``.npy``, hnswlib's ``.hnsw``) are left as the library
  writes them; the sealed metadata that names them records each one's CRC-32 and size
  (``file_crc``), checked before the library reads the file.

A file without the header (written before checksums) is returned as *unverified*: the caller
accepts it once and writes it sealed at its next save (ADR 0155). CRC-32 finds accidental
damage (zeroed pages, flipped bits, a torn or truncated write); it is no defence against
someone who can write the files, who could rewrite the checksum as well.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Final

import msgspec

__all__ = [
    "MAGIC",
    "ChecksumError",
    "DamagedFile",
    "describe_failure",
    "encode_sealed",
    "file_crc",
    "seal",
    "unseal",
]

#: The first bytes of a sealed file.
MAGIC: Final = b"\xc1LCGCRC1"
_HEAD: Final = struct.Struct(">IQ")
_HEADER_BYTES: Final = len(MAGIC) + _HEAD.size
_CHUNK: Final = 1 << 20


class ChecksumError(ValueError):
    """A projection file's bytes do not match the checksum recorded for them."""


class DamagedFile(Exception):
    """A projection file that cannot be trusted; its message names the path and the fault.

    ``content``: its bytes are wrong (the file may be deleted and rebuilt), not its reading
    (an ``OSError``: the file is left for the operator).
    """

    def __init__(self, message: str, *, content: bool = True) -> None:
        super().__init__(message)
        self.content = content


def describe_failure(exc: BaseException) -> str:
    """What a failure to decode a file says, in our words (never a bare exception name)."""
    if isinstance(exc, UnicodeDecodeError):
        return f"a text field is not UTF-8 at byte {exc.start}"
    text = str(exc) or "no detail"
    return text if isinstance(exc, ValueError) else f"{type(exc).__name__}: {text}"


def seal(payload: bytes) -> bytes:
    """``payload`` behind the header that lets ``unseal`` check it."""
    return MAGIC + _HEAD.pack(zlib.crc32(payload), len(payload)) + payload


def encode_sealed(encoder: msgspec.msgpack.Encoder, obj: object) -> bytearray:
    """``seal(encoder.encode(obj))``, encoded straight after the header (no second copy)."""
    buf = bytearray(_HEADER_BYTES)
    encoder.encode_into(obj, buf, _HEADER_BYTES)
    with memoryview(buf) as view:
        crc = zlib.crc32(view[_HEADER_BYTES:])
    buf[: len(MAGIC)] = MAGIC
    _HEAD.pack_into(buf, len(MAGIC), crc, len(buf) - _HEADER_BYTES)
    return buf


def unseal(data: bytes) -> tuple[memoryview, bool]:
    """The payload of a sealed file and ``True``; a file without a header as it is, ``False``.

    Raises ``ChecksumError`` when the header is cut short, the payload's length differs from
    the recorded one, or its CRC-32 does.
    """
    if not data.startswith(MAGIC[:1]):
        return memoryview(data), False  # bare msgpack: written before checksums
    if len(data) < _HEADER_BYTES or not data.startswith(MAGIC):
        raise ChecksumError("its checksum header is damaged")
    crc, length = _HEAD.unpack_from(data, len(MAGIC))
    payload = memoryview(data)[_HEADER_BYTES:]
    if len(payload) != length:
        raise ChecksumError(f"it holds {len(payload)} bytes after its header, {length} recorded")
    actual = zlib.crc32(payload)
    if actual != crc:
        raise ChecksumError(f"its CRC-32 is {actual:08x}, {crc:08x} recorded")
    return payload, True


def file_crc(path: Path) -> tuple[int, int]:
    """``(CRC-32, size in bytes)`` of the file at ``path``, read in 1 MiB chunks."""
    crc = 0
    size = 0
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
            size += len(chunk)
    return crc, size
