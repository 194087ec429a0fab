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
decode; lines on disk are never rewritten. Payload times in an older spelling (the unpadded
year lcg wrote for years below 1000 before ADR 0150, an offset, no microseconds) are upcast
the same way, whatever the version (``upcast_timestamp_spelling``).

Only what decodes is appended (ADR 0150): ``admit`` encodes events, decodes each line back
through ``decode_line`` and refuses (``InvalidParamsError``, -32602) an event whose line would
not decode; the events it returns are the decoded ones, so what a writer applies live is what
a replay of its lines applies.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from typing import Any, Final, Literal

import msgspec
import msgspec.inspect as mi

from lcg import timestamps
from lcg.errors import InvalidParamsError
from lcg.events.model import CURRENT_VERSIONS, Event

__all__ = [
    "CHECKSUM_FIELD",
    "TIMESTAMP_FIELDS",
    "UPCASTERS",
    "Decoded",
    "Problem",
    "admit",
    "decode_line",
    "encode_event",
    "encode_events",
    "seal",
    "upcast_EpisodeAdded_v1_v2",
    "upcast_timestamp_spelling",
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


def _is_timestamp(t: mi.Type) -> bool:
    if isinstance(t, mi.UnionType):
        return any(_is_timestamp(u) for u in t.types)
    return isinstance(t, mi.Metadata) and bool((t.extra or {}).get("lcg_timestamp"))


def _timestamp_fields(t: mi.Type, seen: set[type], out: set[str]) -> set[str]:
    if isinstance(t, mi.UnionType):
        for u in t.types:
            _timestamp_fields(u, seen, out)
    elif isinstance(t, mi.Metadata):
        _timestamp_fields(t.type, seen, out)
    elif isinstance(t, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
        _timestamp_fields(t.item_type, seen, out)
    elif isinstance(t, mi.StructType) and t.cls not in seen:
        seen.add(t.cls)
        for f in t.fields:
            if _is_timestamp(f.type):
                out.add(f.encode_name)
            _timestamp_fields(f.type, seen, out)
    return out


#: The payload fields typed ``Timestamp``, read from the model (a unit test checks that no
#: field of another type shares one of these names).
TIMESTAMP_FIELDS: Final = frozenset(_timestamp_fields(mi.type_info(Event), set(), set()))


def _respell(value: Any) -> Any:
    if isinstance(value, list):
        return [_respell(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, v in value.items():
        if key in TIMESTAMP_FIELDS and isinstance(v, str) and not timestamps.is_recorded(v):
            if v == "":
                # Read as "no time" by every projection before ADR 0150: the optional ones
                # decode as such; a required one fails as it should.
                v = None
            else:
                try:
                    v = timestamps.normalize(v)
                except ValueError:
                    pass  # not a time at all: the typed decode reports the line as failed
        out[key] = _respell(v)
    return out


def upcast_timestamp_spelling(raw: dict[str, Any]) -> dict[str, Any]:
    """Payload times in an older spelling rewritten in the recorded one (ADR 0150).

    Before ADR 0150, ``strftime("%Y")`` wrote years below 1000 unpadded (``1-01-01T…``), and
    earlier lines may carry an offset or no microseconds; each is read as the time it names.
    Text that names no time is left as it is, for the typed decode to refuse.
    """
    out: dict[str, Any] = _respell(raw)
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
        event = msgspec.convert(upcast_timestamp_spelling(raw), Event)
    except msgspec.ValidationError as exc:
        return Decoded(
            problem="failed", detail=f"{kind}: {_explain(exc)}", seq=seq, checksummed=checksummed
        )
    return Decoded(event=event, seq=seq, checksummed=checksummed)


# msgspec names the pattern a string failed; the recorded time's pattern is long and says
# less than its description.
_PATTERN_FAILURE: Final = re.compile(r"Expected `str` matching regex '.*?' - ")
_RECORDED_TIME: Final = (
    "expected a time (RFC 3339 UTC with microseconds, years 0001-9999, "
    "'2024-05-01T12:00:00.000000Z') - "
)


def _explain(exc: msgspec.ValidationError) -> str:
    return _PATTERN_FAILURE.sub(_RECORDED_TIME, str(exc), count=1)


def _refuse(event: Event, why: str) -> InvalidParamsError:
    kind = event.__struct_config__.tag
    return InvalidParamsError(
        f"{kind} cannot be recorded: {why} (the stream takes only what every projection "
        "applies; see ADR 0150)"
    )


def admit(events: list[Event]) -> tuple[bytes, list[Event]]:
    """The events as lines, and the events those lines decode to (what replay applies).

    Each line is decoded back before anything is written: an event whose line would not
    decode (a time outside the recorded form, a string that is not Unicode) raises
    ``InvalidParamsError`` naming the event type and field, and nothing is returned. An
    event in an older spelling is returned, and written, as it decodes.
    """
    buf = bytearray()
    out: list[Event] = []
    for event in events:
        start = len(buf)
        try:
            _encoder.encode_into(event, buf, -1)
        except (TypeError, ValueError) as exc:  # UnicodeEncodeError: a lone surrogate
            raise _refuse(event, str(exc)) from None
        _seal(buf, start)
        decoded = decode_line(bytes(buf[start:]))
        if decoded.event is None:
            raise _refuse(event, decoded.detail.partition(": ")[2] or decoded.detail)
        if decoded.event != event:
            # Upcast on the way back (an older spelling): the line holds what is applied.
            del buf[start:]
            _encoder.encode_into(decoded.event, buf, -1)
            _seal(buf, start)
        out.append(decoded.event)
    return bytes(buf), out
