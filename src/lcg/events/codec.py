"""Encoding and decoding of stream lines, with upcasting of older event versions.

A line is one JSON object terminated by ``\\n``. Decoding never raises for a bad line: it
returns a ``Decoded`` whose ``event`` is set, or whose ``problem`` names the class of defect:

* ``unparseable`` – not a JSON object, or missing the envelope (``seq``, ``type``);
* ``unrecognised`` – an unknown ``type``, or a ``v`` newer than this build knows;
* ``failed`` – a known type and version whose payload does not validate;
* ``corrupt`` – the line's checksum does not match its bytes (damage on disk).

Every line ends with ``"crc32":"<8 hex digits>"``, the CRC-32 (``zlib.crc32``) of the line as
encoded without that field: the encoder writes the event, checksums those bytes and closes the
object with the field; the decoder checks the bytes on disk before it decodes them (ADR 0075).
A line without the field was written before checksums existed and is accepted as legacy
(``Decoded.checksummed`` is False); the reader decides whether that is suspicious.

An older version is upcast by a pure function ``raw dict → raw dict`` before the typed
decode; lines on disk are never rewritten.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any, Literal

import msgspec

from lcg.events.model import CURRENT_VERSIONS, Event

__all__ = [
    "CHECKSUM_FIELD",
    "UPCASTERS",
    "Decoded",
    "Problem",
    "decode_line",
    "encode_event",
    "encode_events",
    "seal",
    "upcast_EpisodeAdded_v1_v2",
    "verify_checksum",
]

Problem = Literal["unparseable", "unrecognised", "failed", "corrupt"]

#: The envelope field holding a line's checksum; always the line's last field.
CHECKSUM_FIELD = "crc32"
# ``,"crc32":"`` + 8 hex digits + ``"}``: the fixed-width tail the encoder writes.
_CRC_OPEN = b',"' + CHECKSUM_FIELD.encode() + b'":"'
_CRC_TAIL_LEN = len(_CRC_OPEN) + 8 + 2
_OPEN_LEN = len(_CRC_OPEN)
_SEAL_FORMAT = _CRC_OPEN + b'%08x"}\n'
_CLOSE = b"}"

_encoder = msgspec.json.Encoder()
_typed_decoder: msgspec.json.Decoder[Event] = msgspec.json.Decoder(Event)
_raw_decoder = msgspec.json.Decoder()


class Decoded(msgspec.Struct, frozen=True):
    """The result of decoding one line: an event, or the class of its defect and why."""

    event: Event | None = None
    problem: Problem | None = None
    detail: str = ""
    seq: int | None = None
    #: True when the line carried a checksum (and it matched); False for a legacy line.
    checksummed: bool = False


def upcast_EpisodeAdded_v1_v2(raw: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
    """v1 named the episode text ``body``; v2 calls it ``content`` and adds ``content_hash``."""
    out = dict(raw)
    if "body" in out and "content" not in out:
        out["content"] = out.pop("body")
    out.setdefault("content_hash", "")
    out["v"] = 2
    return out


#: ``(type, from_version) → upcaster`` producing ``from_version + 1``.
UPCASTERS: dict[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {
    ("EpisodeAdded", 1): upcast_EpisodeAdded_v1_v2,
}


def _seal(buf: bytearray, start: int) -> None:
    """Close the object encoded at ``buf[start:]`` with its checksum field and a newline."""
    # The encoded object ends with ``}``: its checksum field and the newline replace that byte.
    buf[-1:] = _SEAL_FORMAT % zlib.crc32(buf[start:])


def seal(obj: bytes) -> bytes:
    """A line from one encoded JSON object: its checksum field and newline added."""
    buf = bytearray(obj.rstrip(b"\n"))
    _seal(buf, 0)
    return bytes(buf)


def encode_event(event: Event) -> bytes:
    """One event as its line (checksum and newline included)."""
    buf = bytearray()
    _encoder.encode_into(event, buf, -1)
    _seal(buf, 0)
    return bytes(buf)


def encode_events(events: list[Event]) -> bytes:
    """Several events as consecutive lines."""
    buf = bytearray()
    for event in events:
        start = len(buf)
        _encoder.encode_into(event, buf, -1)
        _seal(buf, start)
    return bytes(buf)


def verify_checksum(line: bytes) -> bool | None:
    """``True`` if the line's checksum matches, ``False`` if not, ``None`` if it has none."""
    end = len(line)
    if end and line[end - 1] == 10:  # the newline
        end -= 1
    cut = end - _CRC_TAIL_LEN
    if cut < 1 or line[end - 2 : end] != b'"}' or line[cut : cut + _OPEN_LEN] != _CRC_OPEN:
        return None
    with memoryview(line) as view:
        crc = zlib.crc32(_CLOSE, zlib.crc32(view[:cut]))
    # Formatting the computed value and comparing bytes also rejects malformed digits.
    return b"%08x" % crc == line[cut + _OPEN_LEN : end - 2]


def decode_line(line: bytes) -> Decoded:
    """Decode one line (with or without its newline) into an event or a classified defect."""
    checked = verify_checksum(line)
    if checked is False:
        return _corrupt(line)
    try:
        event = _typed_decoder.decode(line)
    except ValueError:  # msgspec.DecodeError, or UnicodeDecodeError for invalid UTF-8
        return _decode_slow(line, checked is True)
    current = CURRENT_VERSIONS[event.__struct_config__.tag]  # type: ignore[index]
    if event.v == current:
        return Decoded(event=event, seq=event.seq, checksummed=checked is True)
    return _decode_slow(line, checked is True)


def _corrupt(line: bytes) -> Decoded:
    # The seq is read for the report only: damaged bytes may be the seq itself.
    claimed: int | None = None
    try:
        raw = _raw_decoder.decode(line)
    except ValueError:  # msgspec.DecodeError or UnicodeDecodeError
        raw = None
    if isinstance(raw, dict):
        value = raw.get("seq")
        if isinstance(value, int) and not isinstance(value, bool):
            claimed = value
    return Decoded(
        problem="corrupt",
        detail="checksum mismatch: the line's bytes changed after it was written",
        seq=claimed,
        checksummed=True,
    )


def _decode_slow(line: bytes, checksummed: bool) -> Decoded:
    try:
        raw = _raw_decoder.decode(line)
    except ValueError as exc:  # msgspec.DecodeError or UnicodeDecodeError
        return Decoded(problem="unparseable", detail=f"not JSON: {exc}")
    if not isinstance(raw, dict):
        return Decoded(problem="unparseable", detail="line is not a JSON object")
    seq = raw.get("seq")
    kind = raw.get("type")
    if not isinstance(seq, int) or isinstance(seq, bool) or not isinstance(kind, str):
        return Decoded(problem="unparseable", detail="line lacks an integer seq or a type")
    current = CURRENT_VERSIONS.get(kind)
    if current is None:
        return Decoded(
            problem="unrecognised",
            detail=f"unknown event type {kind!r}",
            seq=seq,
            checksummed=checksummed,
        )
    version = raw.get("v", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        return Decoded(
            problem="failed",
            detail=f"{kind}: invalid version {version!r}",
            seq=seq,
            checksummed=checksummed,
        )
    if version > current:
        return Decoded(
            problem="unrecognised",
            detail=f"{kind} v{version} is newer than this build (v{current}); upgrade lcg",
            seq=seq,
            checksummed=checksummed,
        )
    while version < current:
        upcaster = UPCASTERS.get((kind, version))
        if upcaster is None:
            return Decoded(
                problem="failed",
                detail=f"{kind}: no upcast from v{version}",
                seq=seq,
                checksummed=checksummed,
            )
        raw = upcaster(raw)
        version += 1
    try:
        event = msgspec.convert(raw, Event)
    except msgspec.ValidationError as exc:
        return Decoded(problem="failed", detail=f"{kind}: {exc}", seq=seq, checksummed=checksummed)
    return Decoded(event=event, seq=seq, checksummed=checksummed)
